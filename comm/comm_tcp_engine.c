/* comm_tcp_engine: moves one plan around the ring, on the calling thread, with non-blocking sockets and
 * poll().
 *
 * A plan is a list of steps, each "send this span to next, receive that span from prev". Both sides run
 * at once: receives land straight in the destination, or in a one-segment scratch buffer that is reduced
 * into the destination as soon as whole elements are there; a send that forwards received data goes out
 * as soon as the bytes it needs have landed (the gate). So a segment is on the wire, in the kernel and
 * being reduced at the same time, and a 2(n-1)-step ring allreduce is one pipelined stream.
 *
 * A plan runs on the ring (send to next, receive from prev) or on one mesh link (both ways on one
 * connection, for the doubling rounds); either way next's connection is watched for failure notices.
 * The header goes out in the same system call as the first data and comes in with it too, and sends go
 * before receives: a small collective's round is one sendmsg and one recvmsg. Before sleeping in poll(),
 * the engine spins a while on non-blocking calls (comm_tcp_spin.c: bounded, yielding, and off while another
 * task wants the CPU), so a small collective's rounds do not each pay a wake-up.
 *
 * Failure handling, the part that keeps the promise "never hangs":
 * - a deadline per call; poll() never sleeps past it;
 * - ftl_comm_abort() writes an eventfd that is in every poll();
 * - a rank that fails tells prev with a 16-byte notice on the otherwise idle reverse direction of their
 *   connection, and prev passes it on: the news travels upstream around the ring;
 * - unless it merely timed out, it also shuts its sending sides down (to next and on every mesh link),
 *   so whoever waits on it sees the stream end at once: the news travels downstream and across too. (After a timeout everyone is waiting anyway and times out at its own
 *   deadline; closing would turn their "timed out" into "peer lost".)
 * The peer a rank sees die (reset, close, TCP user timeout) goes to the peer_reset hook as well, and so does,
 * once per plan, the peer it waits on when that one has been silent for the comm's stall_hint_ms: a host
 * that vanished sends no reset, and membership's probe of it is what ends the wait (comm.h). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "comm_tcp.h"

#define HDR_MAGIC 0x46544c43u    /* "FTLC" */
#define NOTICE_MAGIC 0x46544c4eu /* "FTLN" */
#define MIN_SEND (64u << 10)     /* forward at least this much at once, unless the step is complete */
#define RECV_BUDGET (4 * FTL_COMM_TCP_SEGMENT) /* bytes received before sends get a turn */
#define IO_MAX (1u << 20)        /* bytes per send/recv call: bigger calls are slower on loopback */
#define NOTICE_GRACE_MS 20       /* how long an EOF from prev waits for next's explanation */

/* A failure notice, sent upstream on the reverse direction of a ring connection. */
struct notice {
	uint32_t magic;
	uint32_t err;    /* ftl_err at origin */
	int32_t origin;  /* the rank that saw the failure */
	int32_t subject; /* the rank it concerns (the lost one, or the one origin waited for) */
};

_Static_assert(sizeof(struct notice) == sizeof(((struct ftl_comm_tcp *)0)->notice_in), "notice size");

struct engine {
	struct ftl_comm_tcp *t;
	const struct ftl_comm_tcp_plan *p;
	const char *what;
	struct ftl_comm_tcp_hdr hdr_out;
	struct ftl_comm_tcp_hdr hdr_in;
	size_t hdr_out_len;  /* bytes of hdr_out sent */
	size_t hdr_in_len;   /* bytes of hdr_in received */
	int send_step;
	size_t send_off;
	int recv_step;
	size_t recv_off;     /* bytes of the current receive step off the wire */
	size_t done_off;     /* ... of which landed in the destination (reduced, when reducing) */
	size_t pending;      /* bytes waiting in scratch: recv_off - done_off */
	bool is_next_closed; /* next shut down after we sent it everything (or, on a mesh plan, next is none
	                      * of our business but its notices): fine, stop listening */
	bool is_on_ring;     /* the plan sends to next; else on a mesh link, next_fd only carries notices */
	bool is_prev_quiet;  /* mesh plan: stop watching prev (it is ahead of us, or gone) */
	bool is_small;       /* a latency-bound collective (FTL_COMM_TCP_SPIN_BYTES_MAX): it spins, sends first */
	bool is_stall_told;  /* the peer we wait on went silent and the peer_reset hook heard of it */
};

static void notify_upstream(struct ftl_comm_tcp *t, ftl_err err, int origin, int subject)
{
	struct notice n = {.magic = NOTICE_MAGIC, .err = (uint32_t)err, .origin = origin, .subject = subject};
	if (t->prev_fd >= 0)
		(void)send(t->prev_fd, &n, sizeof(n), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Closes our sending sides, so that whoever waits on us sees the end of the stream at once. */
static void shut_sending(struct ftl_comm_tcp *t)
{
	if (t->next_fd >= 0)
		shutdown(t->next_fd, SHUT_WR);
	for (int i = 0; i < t->n_links; i++)
		shutdown(t->link_fd[i], SHUT_WR);
	for (int q = 0; t->pairs != NULL && q < t->base.world_size; q++)
		if (t->pairs[q].fd >= 0)
			shutdown(t->pairs[q].fd, SHUT_WR);
}

void ftl_comm_tcp_tell(struct ftl_comm_tcp *t, ftl_err err, int origin, int subject)
{
	notify_upstream(t, err, origin, subject);
	if (err != FTL_ERR_TIMEOUT)
		shut_sending(t);
}

/* Tells the ring and returns err; the message is already recorded. */
static ftl_err spread(struct engine *e, ftl_err err, int origin, int subject)
{
	ftl_comm_tcp_tell(e->t, err, origin, subject);
	return err;
}

static ftl_err peer_lost(struct engine *e, int peer, const char *reason)
{
	struct ftl_comm_tcp *t = e->t;
	ftl_comm_fail(&t->base, FTL_ERR_PEER_LOST, true, "peer rank %d (%s) lost during %s: %s", peer,
		      t->addrs[peer], e->what, reason);
	if (t->base.peer_reset_cb != NULL)
		t->base.peer_reset_cb(t->base.peer_reset_arg, peer, t->addrs[peer]);
	return spread(e, FTL_ERR_PEER_LOST, t->base.rank, peer);
}

static ftl_err on_notice(struct engine *e, const struct notice *n)
{
	struct ftl_comm_tcp *t = e->t;
	int world = t->base.world_size;
	if (n->magic != NOTICE_MAGIC || n->origin < 0 || n->origin >= world || n->subject < 0 ||
	    n->subject >= world) {
		int next = ftl_comm_tcp_next(t);
		ftl_comm_fail(&t->base, FTL_ERR_INVALID, true, "rank %d (%s) sent bytes that are not a notice",
			      next, t->addrs[next]);
		return spread(e, FTL_ERR_INVALID, t->base.rank, next);
	}
	ftl_err err;
	switch (n->err) {
	case FTL_ERR_PEER_LOST:
		err = ftl_comm_fail(&t->base, FTL_ERR_PEER_LOST, true, "peer rank %d (%s) lost during %s (seen by rank %d)",
				    n->subject, t->addrs[n->subject], e->what, n->origin);
		break;
	case FTL_ERR_TIMEOUT:
		err = ftl_comm_fail(&t->base, FTL_ERR_TIMEOUT, true,
				    "%s timed out on rank %d, which waited for rank %d (%s)", e->what, n->origin,
				    n->subject, t->addrs[n->subject]);
		break;
	case FTL_ERR_ABORTED:
		err = ftl_comm_fail(&t->base, FTL_ERR_PEER_LOST, true, "rank %d (%s) aborted during %s", n->origin,
				    t->addrs[n->origin], e->what);
		break;
	default:
		err = ftl_comm_fail(&t->base, FTL_ERR_INVALID, true, "rank %d (%s) failed %s: mismatched collectives (or the "
				    "sizes of a send and its receive)", n->origin, t->addrs[n->origin], e->what);
		break;
	}
	/* Pass it on unchanged: the origin and subject stay what they were. */
	notify_upstream(t, (ftl_err)n->err, n->origin, n->subject);
	if (err != FTL_ERR_TIMEOUT)
		shut_sending(t);
	return err;
}

static bool is_sending_done(const struct engine *e)
{
	return e->hdr_out_len == sizeof(e->hdr_out) && e->send_step == e->p->n_steps;
}

static bool is_receiving_done(const struct engine *e)
{
	return e->hdr_in_len == sizeof(e->hdr_in) && e->recv_step == e->p->n_steps;
}

/* A thin wrapper of recv(): reads what next sent us: 1 with a whole notice in *out, 0 when nothing (more) is
 * there yet, -1 for the end of next's stream or an error (*n_out is recv's answer, errno is set). */
static int take_notice(struct ftl_comm_tcp *t, struct notice *out, ssize_t *n_out)
{
	for (;;) {
		ssize_t n = recv(t->next_fd, t->notice_in + t->notice_in_len, sizeof(t->notice_in) - t->notice_in_len,
				 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (n <= 0) {
			*n_out = n;
			return -1;
		}
		t->notice_in_len += (size_t)n;
		if (t->notice_in_len == sizeof(t->notice_in)) {
			memcpy(out, t->notice_in, sizeof(*out));
			t->notice_in_len = 0;
			return 1;
		}
	}
}

/* EOF or a socket error while talking to peer. A rank that gave up after a failure elsewhere closes its
 * sending sides, so an EOF from prev or a mesh partner often has an explanation on its way from next (the
 * notice going round upstream). Wait a moment for it: it names the rank really lost and keeps a live rank
 * out of the peer_reset hook. A reset or an EOF from next needs no wait. */
static ftl_err io_failed(struct engine *e, int peer, ssize_t n, bool is_from_next)
{
	struct ftl_comm_tcp *t = e->t;
	int saved = errno;
	int64_t until = ftl_comm_now_ms() + (n == 0 && !is_from_next ? NOTICE_GRACE_MS : 0);
	while (t->next_fd >= 0 && !e->is_next_closed) {
		struct notice note;
		ssize_t m;
		int rc = take_notice(t, &note, &m);
		if (rc > 0)
			return on_notice(e, &note);
		int64_t left = until - ftl_comm_now_ms();
		if (rc < 0 || left <= 0)
			break;
		struct pollfd p = {.fd = t->next_fd, .events = POLLIN};
		poll(&p, 1, (int)left);
	}
	errno = saved;
	if (n == 0)
		return peer_lost(e, peer, "connection closed (the rank died, or gave up after a failure)");
	return peer_lost(e, peer, strerror(errno));
}

/* Reads what next sent us: notices, or the end of its stream. */
static ftl_err read_from_next(struct engine *e)
{
	struct notice note;
	ssize_t n = 0;
	int rc = take_notice(e->t, &note, &n);
	if (rc > 0)
		return on_notice(e, &note);
	if (rc == 0)
		return FTL_OK;
	if (is_sending_done(e) || !e->is_on_ring) { /* it has everything it needs from us and left */
		e->is_next_closed = true;
		return FTL_OK;
	}
	return io_failed(e, ftl_comm_tcp_next(e->t), n, true);
}

/* How many bytes of step g's receive have landed. */
static size_t landed(const struct engine *e, int g)
{
	if (g < e->recv_step)
		return e->p->steps[g].recv_len;
	return g == e->recv_step ? e->done_off : 0;
}

static ftl_err check_header(struct engine *e)
{
	if (memcmp(&e->hdr_in, &e->hdr_out, sizeof(e->hdr_in)) == 0)
		return FTL_OK;
	struct ftl_comm_tcp *t = e->t;
	const struct ftl_comm_tcp_hdr *a = &e->hdr_in, *b = &e->hdr_out;
	int prev = e->p->in_rank;
	if (a->magic != HDR_MAGIC || a->kind >= FTL_COMM_TCP_KIND_MAX || a->dtype >= FTL_DTYPE_MAX)
		ftl_comm_fail(&t->base, FTL_ERR_INVALID, true, "rank %d (%s) sent garbage instead of a %s header",
			      prev, t->addrs[prev], e->what);
	else
		ftl_comm_fail(&t->base, FTL_ERR_INVALID, true,
			      "mismatched collectives: rank %d called %s(count %llu, %s, root %d) as call #%u, "
			      "rank %d called %s(count %llu, %s, root %d) as call #%u",
			      prev, ftl_comm_tcp_kind_strs[a->kind], (unsigned long long)a->count,
			      ftl_dtype_strs[a->dtype], a->root, a->seq, t->base.rank, ftl_comm_tcp_kind_strs[b->kind],
			      (unsigned long long)b->count, ftl_dtype_strs[b->dtype], b->root, b->seq);
	return spread(e, FTL_ERR_INVALID, t->base.rank, prev);
}

/* Reduces the whole elements waiting in scratch into the destination. */
static void reduce_pending(struct engine *e, const struct ftl_comm_tcp_step *s)
{
	size_t bytes = e->pending - e->pending % e->p->elem_size;
	if (bytes == 0)
		return;
	size_t n = bytes / e->p->elem_size;
	if (s->is_incoming_first)
		e->p->reduce(s->recv + e->done_off, e->t->scratch, s->own + e->done_off, n);
	else
		e->p->reduce(s->recv + e->done_off, s->own + e->done_off, e->t->scratch, n);
	if (s->is_final_reduce && e->p->divisor > 1)
		ftl_comm_reduce_divide(s->recv + e->done_off, n, e->p->dtype, e->p->divisor);
	e->done_off += bytes;
	e->pending -= bytes;
	memmove(e->t->scratch, e->t->scratch + bytes, e->pending);
}

/* Moves the received bytes past the header (checked once whole) and into the current step. */
static ftl_err took(struct engine *e, const struct ftl_comm_tcp_step *s, size_t n)
{
	size_t hdr_left = sizeof(e->hdr_in) - e->hdr_in_len, to_hdr = n < hdr_left ? n : hdr_left;
	if (to_hdr > 0) {
		e->hdr_in_len += to_hdr;
		if (e->hdr_in_len == sizeof(e->hdr_in) && check_header(e) != FTL_OK)
			return e->t->base.broken;
		n -= to_hdr;
	}
	if (n == 0)
		return FTL_OK;
	e->recv_off += n;
	if (s->own == NULL) {
		e->done_off = e->recv_off;
		return FTL_OK;
	}
	e->pending += n;
	if (e->pending == FTL_COMM_TCP_SEGMENT || e->recv_off == s->recv_len)
		reduce_pending(e, s);
	return FTL_OK;
}

static ftl_err pump_recv(struct engine *e, bool *progressed)
{
	struct ftl_comm_tcp *t = e->t;
	int fd = e->p->in_fd, prev = e->p->in_rank;
	size_t budget = RECV_BUDGET;
	while (!is_receiving_done(e) && budget > 0) {
		const struct ftl_comm_tcp_step *s = e->recv_step < e->p->n_steps ? &e->p->steps[e->recv_step] : NULL;
		size_t hdr_left = sizeof(e->hdr_in) - e->hdr_in_len;
		if (hdr_left == 0 && e->done_off == s->recv_len) {
			e->recv_step++;
			e->recv_off = e->done_off = 0;
			continue;
		}
		/* The rest of the header and the data it comes with, in one call: a small collective's round
		 * is one recv. (Data read with a header that turns out wrong is garbage in a call that fails.) */
		struct iovec iov[2];
		int n_iov = 0;
		if (hdr_left > 0)
			iov[n_iov++] = (struct iovec){(char *)&e->hdr_in + e->hdr_in_len, hdr_left};
		size_t want = s != NULL ? s->recv_len - e->recv_off : 0;
		if (want > 0 && s->own == NULL)
			iov[n_iov++] = (struct iovec){s->recv + e->recv_off, want < IO_MAX ? want : IO_MAX};
		else if (want > 0) {
			want = want < FTL_COMM_TCP_SEGMENT - e->pending ? want : FTL_COMM_TCP_SEGMENT - e->pending;
			iov[n_iov++] = (struct iovec){t->scratch + e->pending, want < IO_MAX ? want : IO_MAX};
		}
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
		ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			if (s != NULL && s->own != NULL && hdr_left == 0)
				reduce_pending(e, s); /* use the wait: reduce what is there */
			return FTL_OK;
		}
		if (n <= 0)
			return io_failed(e, prev, n, false);
		*progressed = true;
		budget -= (size_t)n < budget ? (size_t)n : budget;
		if (took(e, s, (size_t)n) != FTL_OK)
			return t->base.broken;
	}
	return FTL_OK;
}

/* Bytes of the current send step that may go now, beyond send_off; 0 when waiting on the gate. */
static size_t sendable(const struct engine *e)
{
	const struct ftl_comm_tcp_step *s = &e->p->steps[e->send_step];
	size_t avail = s->send_gate < 0 ? s->send_len : landed(e, s->send_gate);
	if (avail > s->send_len)
		avail = s->send_len;
	size_t ready = avail > e->send_off ? avail - e->send_off : 0;
	/* Small forwards cost a syscall and a packet each: wait for a useful amount, or the end. */
	if (ready < MIN_SEND && avail < s->send_len)
		return 0;
	return ready;
}

/* Sends what may go now: the rest of the header and/or data of the current step, in one call. */
static ftl_err pump_send(struct engine *e, bool *progressed)
{
	int peer = e->p->out_rank;
	while (!is_sending_done(e)) {
		struct iovec iov[2];
		int n_iov = 0;
		size_t hdr_left = sizeof(e->hdr_out) - e->hdr_out_len;
		if (hdr_left > 0)
			iov[n_iov++] = (struct iovec){(char *)&e->hdr_out + e->hdr_out_len, hdr_left};
		if (e->send_step < e->p->n_steps && e->send_off == e->p->steps[e->send_step].send_len) {
			e->send_step++;
			e->send_off = 0;
			continue;
		}
		size_t len = e->send_step < e->p->n_steps ? sendable(e) : 0;
		if (len > 0)
			iov[n_iov++] = (struct iovec){(char *)e->p->steps[e->send_step].send + e->send_off,
						      len < IO_MAX ? len : IO_MAX};
		if (n_iov == 0)
			return FTL_OK;
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
		ssize_t n = sendmsg(e->p->out_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return FTL_OK;
		if (n <= 0)
			return io_failed(e, peer, n, e->is_on_ring);
		*progressed = true;
		size_t sent = (size_t)n, to_hdr = sent < hdr_left ? sent : hdr_left;
		e->hdr_out_len += to_hdr;
		e->send_off += sent - to_hdr;
	}
	return FTL_OK;
}

/* A mesh plan, and prev has sent something on the ring. If it is the header of this very collective, prev
 * runs it on the ring while we run it on the mesh: the ranks disagree about the call (different sizes or
 * kinds pick different algorithms), and without this both sides would wait for their deadline. A header
 * of a later collective means prev is ahead of us: fine. */
static ftl_err check_prev(struct engine *e)
{
	struct ftl_comm_tcp *t = e->t;
	struct ftl_comm_tcp_hdr h;
	ssize_t n = recv(t->prev_fd, &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return FTL_OK;
	if (n > 0 && (size_t)n < sizeof(h))
		return FTL_OK; /* the rest is on its way */
	if (n <= 0 || h.magic != HDR_MAGIC || h.seq != e->hdr_out.seq) {
		e->is_prev_quiet = true;
		return FTL_OK;
	}
	int prev = ftl_comm_tcp_prev(t);
	const struct ftl_comm_tcp_hdr *b = &e->hdr_out;
	ftl_comm_fail(&t->base, FTL_ERR_INVALID, true,
		      "mismatched collectives: rank %d called %s(count %llu, %s) as call #%u on the ring, rank %d "
		      "called %s(count %llu, %s) as call #%u on the mesh", prev,
		      h.kind < FTL_COMM_TCP_KIND_MAX ? ftl_comm_tcp_kind_strs[h.kind] : "?", (unsigned long long)h.count,
		      h.dtype < FTL_DTYPE_MAX ? ftl_dtype_strs[h.dtype] : "?", h.seq, t->base.rank,
		      ftl_comm_tcp_kind_strs[b->kind], (unsigned long long)b->count, ftl_dtype_strs[b->dtype], b->seq);
	return spread(e, FTL_ERR_INVALID, t->base.rank, prev);
}

static ftl_err timed_out(struct engine *e)
{
	struct ftl_comm_tcp *t = e->t;
	bool is_recv_waiting = !is_receiving_done(e);
	int peer = is_recv_waiting ? e->p->in_rank : e->p->out_rank;
	ftl_comm_fail(&t->base, FTL_ERR_TIMEOUT, true, "%s timed out after %d ms waiting %s rank %d (%s)", e->what,
		      t->base.timeout_ms, is_recv_waiting ? "for data from" : "to send to", peer, t->addrs[peer]);
	return spread(e, FTL_ERR_TIMEOUT, t->base.rank, peer);
}

static ftl_err aborted(struct engine *e)
{
	ftl_comm_fail(&e->t->base, FTL_ERR_ABORTED, true, "%s aborted", e->what);
	return spread(e, FTL_ERR_ABORTED, e->t->base.rank, e->t->base.rank);
}

/* Sleeps in poll() until a socket can make progress, a notice or abort arrives, the deadline, or wake_at
 * (the stall hint's time). */
static ftl_err wait_for_io(struct engine *e, int64_t deadline, int64_t wake_at)
{
	struct ftl_comm_tcp *t = e->t;
	int64_t now = ftl_comm_now_ms(), left = deadline - now;
	if (left <= 0)
		return timed_out(e);
	if (wake_at - now < left)
		left = wake_at - now > 0 ? wake_at - now : 1;
	bool want_send = !is_sending_done(e) && (e->hdr_out_len < sizeof(e->hdr_out) || sendable(e) > 0);
	bool want_recv = !is_receiving_done(e);
	/* On the ring: next (notices in, data out) and prev (data in). On a link: next (notices) and the link. */
	struct pollfd fds[4] = {
		{.fd = t->wake_fd, .events = POLLIN},
		{.fd = e->is_next_closed ? -1 : t->next_fd,
		 .events = (short)(POLLIN | (want_send && e->is_on_ring ? POLLOUT : 0))},
		{.fd = e->is_on_ring ? (want_recv ? e->p->in_fd : -1) : (want_send || want_recv ? e->p->in_fd : -1),
		 .events = (short)((want_recv ? POLLIN : 0) | (want_send && !e->is_on_ring ? POLLOUT : 0))},
		{.fd = e->is_on_ring || e->is_prev_quiet ? -1 : t->prev_fd, .events = POLLIN},
	};
	int rc = poll(fds, 4, left > 1000000 ? 1000000 : (int)left);
	if (rc < 0 && errno != EINTR)
		return ftl_comm_fail(&t->base, FTL_ERR_SYSTEM, true, "%s: poll: %s", e->what, strerror(errno));
	if (rc <= 0)
		return FTL_OK; /* the caller re-checks the deadline and the abort flag */
	if (fds[0].revents != 0 || atomic_load(&t->base.is_aborted))
		return aborted(e);
	if (fds[3].revents != 0 && check_prev(e) != FTL_OK)
		return t->base.broken;
	if (fds[1].revents & (POLLIN | POLLHUP | POLLERR))
		return read_from_next(e);
	return FTL_OK;
}

/* The peer a round waits on has been silent since last_progress_ms: past the stall time, hint it once.
 * Returns when to look again (INT64_MAX once told, or without a stall time). */
static int64_t hint_stall(struct engine *e, int64_t last_progress_ms)
{
	struct ftl_comm_tcp *t = e->t;
	if (e->is_stall_told || t->base.stall_hint_ms <= 0 || t->base.peer_reset_cb == NULL)
		return INT64_MAX;
	int64_t at = last_progress_ms + t->base.stall_hint_ms;
	if (ftl_comm_now_ms() < at)
		return at;
	e->is_stall_told = true;
	int peer = !is_receiving_done(e) ? e->p->in_rank : e->p->out_rank;
	t->base.peer_reset_cb(t->base.peer_reset_arg, peer, t->addrs[peer]);
	return INT64_MAX;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One pass over both directions. A small collective sends first: its sends are what the peers wait for,
 * and its receive is rarely there yet. A big one receives first, as it streams: what it forwards has to
 * land first, and draining prev's stream keeps prev sending (measured: 10 % faster at 4-128 MiB). */
static ftl_err pump(struct engine *e, bool *progressed)
{
	ftl_err err = e->is_small ? pump_send(e, progressed) : pump_recv(e, progressed);
	if (err == FTL_OK)
		err = e->is_small ? pump_recv(e, progressed) : pump_send(e, progressed);
	return err;
}

/* Before sleeping in poll(): tries again on non-blocking calls, yielding the CPU between tries, for as long
 * as comm_tcp_spin.c allows, and tells it what came of it. Abort stops it; a failure seen ends it. */
static ftl_err spin(struct engine *e, bool *progressed)
{
	struct ftl_comm_tcp *t = e->t;
	int64_t budget = ftl_comm_tcp_spin_budget(&t->spin);
	if (budget <= 0)
		return FTL_OK;
	int64_t start = now_ns(), now = start;
	enum ftl_comm_tcp_spin_outcome outcome = FTL_COMM_TCP_SPIN_EXPIRED;
	while (now - start < budget && !atomic_load(&t->base.is_aborted)) {
		sched_yield();
		bool is_crowded = now_ns() - now > FTL_COMM_TCP_YIELD_TAKEN_NS;
		ftl_err err = pump(e, progressed);
		if (err != FTL_OK)
			return err;
		/* Data that came during a long yield is a catch: most often the task the yield ran was the peer,
		 * which the scheduler put on our CPU (it wakes socket partners on the waker's CPU), and it
		 * handed the CPU back with our data. Called crowded, that pair slept in poll() on every round and
		 * stayed on the one CPU: 20 us per small allreduce at 2 ranks instead of 8. */
		if (*progressed) {
			outcome = FTL_COMM_TCP_SPIN_CAUGHT;
			break;
		}
		if (is_crowded) { /* another task had the CPU and brought nothing: poll() would wake us sooner */
			outcome = FTL_COMM_TCP_SPIN_CROWDED;
			break;
		}
		now = now_ns();
	}
	ftl_comm_tcp_spin_record(&t->spin, outcome);
	return FTL_OK;
}

struct ftl_comm_tcp_plan ftl_comm_tcp_plan_init(struct ftl_comm_tcp *t, enum ftl_comm_tcp_kind kind, size_t count,
						ftl_dtype dtype)
{
	struct ftl_comm_tcp_plan p = {
		.hdr = {.kind = kind, .dtype = (uint32_t)dtype, .count = count, .seq = t->seq++},
		.out_fd = t->next_fd,
		.out_rank = ftl_comm_tcp_next(t),
		.in_fd = t->prev_fd,
		.in_rank = ftl_comm_tcp_prev(t),
		.steps = t->steps,
		.dtype = dtype,
		.elem_size = ftl_dtype_size(dtype),
	};
	memset(t->steps, 0, sizeof(*t->steps) * 2 * (size_t)t->base.world_size);
	return p;
}

ftl_err ftl_comm_tcp_run(struct ftl_comm_tcp *t, const struct ftl_comm_tcp_plan *plan)
{
	struct engine e = {.t = t, .p = plan, .hdr_out = plan->hdr, .is_on_ring = plan->out_fd == t->next_fd};
	e.what = plan->hdr.kind < FTL_COMM_TCP_KIND_MAX ? ftl_comm_tcp_kind_strs[plan->hdr.kind] : "collective";
	e.hdr_out.magic = HDR_MAGIC;
	int64_t last_progress = ftl_comm_now_ms(), deadline = last_progress + t->base.timeout_ms;
	e.is_small = plan->hdr.count * plan->elem_size <= FTL_COMM_TCP_SPIN_BYTES_MAX;
	for (;;) {
		if (atomic_load(&t->base.is_aborted))
			return aborted(&e);
		bool progressed = false;
		ftl_err err = pump(&e, &progressed);
		if (err == FTL_OK && !progressed && e.is_small && !(is_sending_done(&e) && is_receiving_done(&e)))
			err = spin(&e, &progressed);
		if (err != FTL_OK)
			return err;
		if (is_sending_done(&e) && is_receiving_done(&e))
			return FTL_OK;
		if (progressed)
			last_progress = ftl_comm_now_ms();
		if (!progressed && (err = wait_for_io(&e, deadline, hint_stall(&e, last_progress))) != FTL_OK)
			return err;
		if (progressed && last_progress > deadline)
			return timed_out(&e);
	}
}
