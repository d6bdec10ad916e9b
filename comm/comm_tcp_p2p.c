/* comm_tcp_p2p: a batch of point-to-point messages on the tcp backend, every one in progress at once.
 *
 * Each pair of ranks has its own two-way connection (a pair link, made on the pair's first exchange by
 * comm_tcp_connect.c), apart from the ring and the mesh, which carry the collectives: a message can then
 * never be mistaken for a collective's bytes, and the ranks that take no part are not involved. A message
 * is a header (magic, the pair's sequence number, the sender, the bytes) and the bytes. The sender does not
 * wait for the receiver: its send completes once the kernel holds the bytes, and what does not fit in the
 * socket waits for the receiver to drain it, while the batch's other messages go on (one poll() over
 * every pair link of the batch). So a ring shift or an all-to-all in one batch needs no order of its ops.
 *
 * Messages of one pair and direction go in the batch's order, one at a time; the receiver checks each
 * header against what it expects (the next sequence number, the bytes it was told), so a send and a
 * receive that do not match fail on both sides instead of filling a buffer with the wrong bytes.
 *
 * Failure keeps the engine's rules (comm_tcp_engine.c): the deadline covers the batch, ftl_comm_abort's
 * eventfd is in every poll(), a peer's close or reset is FTL_ERR_PEER_LOST (with the peer_reset hint), and
 * whatever fails is told to the ring and shuts every sending side, so a rank blocked on this one learns. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "comm_tcp.h"

#define P2P_MAGIC 0x46544c50u /* "FTLP" */
#define IO_MAX (1u << 20)     /* bytes per send/recv call, as the engine's */

/* One op of the batch as it moves. */
struct move {
	const ftl_p2p_op *op;
	size_t bytes;
	struct ftl_comm_tcp_hdr hdr;  /* sent (a send) or expected (a receive), once the op is the pair's current */
	struct ftl_comm_tcp_hdr got;  /* a receive: the header that came */
	size_t hdr_done, data_done;   /* bytes of header and data moved */
	int after;                    /* the op before it of the same pair and direction, or -1 */
	bool is_started, is_done;
};

struct batch {
	struct ftl_comm_tcp *t;
	struct move *moves;
	int n;
	int *peers;       /* the distinct peers of the batch */
	int n_peers;
	struct pollfd *fds;
};

static bool is_ready(const struct batch *b, const struct move *m)
{
	return !m->is_done && (m->after < 0 || b->moves[m->after].is_done);
}

/* The op becomes the pair's current: its header is what goes out, or what must come in. */
static void start(struct batch *b, struct move *m)
{
	struct ftl_comm_tcp_pair *pair = &b->t->pairs[m->op->peer];
	int sender = m->op->is_recv ? m->op->peer : b->t->base.rank;
	m->hdr = (struct ftl_comm_tcp_hdr){.magic = P2P_MAGIC, .seq = m->op->is_recv ? pair->recv_seq : pair->send_seq,
					    .kind = FTL_COMM_TCP_P2P, .dtype = FTL_U8, .root = sender, .count = m->bytes};
	m->is_started = true;
}

static void finish(struct batch *b, struct move *m)
{
	struct ftl_comm_tcp_pair *pair = &b->t->pairs[m->op->peer];
	if (m->op->is_recv)
		pair->recv_seq++;
	else
		pair->send_seq++;
	m->is_done = true;
}

static ftl_err lost(struct batch *b, int peer, const char *why)
{
	struct ftl_comm_tcp *t = b->t;
	ftl_comm_fail(&t->base, FTL_ERR_PEER_LOST, true, "peer rank %d (%s) lost during p2p: %s", peer, t->addrs[peer], why);
	if (t->base.peer_reset_cb != NULL)
		t->base.peer_reset_cb(t->base.peer_reset_arg, peer, t->addrs[peer]);
	ftl_comm_tcp_tell(t, FTL_ERR_PEER_LOST, t->base.rank, peer);
	return FTL_ERR_PEER_LOST;
}

static ftl_err mismatched(struct batch *b, const struct move *m)
{
	struct ftl_comm_tcp *t = b->t;
	int peer = m->op->peer;
	if (m->got.magic != P2P_MAGIC || m->got.kind != FTL_COMM_TCP_P2P)
		ftl_comm_fail(&t->base, FTL_ERR_INVALID, true, "p2p: rank %d (%s) sent bytes that are not a message header",
			      peer, t->addrs[peer]);
	else
		ftl_comm_fail(&t->base, FTL_ERR_INVALID, true,
			      "mismatched point-to-point: rank %d sent %llu bytes as its message #%u to rank %d, which "
			      "expected %llu bytes as message #%u", peer, (unsigned long long)m->got.count, m->got.seq,
			      t->base.rank, (unsigned long long)m->hdr.count, m->hdr.seq);
	ftl_comm_tcp_tell(t, FTL_ERR_INVALID, t->base.rank, peer);
	return FTL_ERR_INVALID;
}

/* What is left of a message in one call's buffers: the rest of its header (hdr: the one sent, or the one
 * coming in) and of its bytes, together so that a small message is one call. 0 when all has moved. */
static int rest_of(struct move *m, struct ftl_comm_tcp_hdr *hdr, struct iovec iov[2])
{
	int n_iov = 0;
	if (m->hdr_done < sizeof(*hdr))
		iov[n_iov++] = (struct iovec){(char *)hdr + m->hdr_done, sizeof(*hdr) - m->hdr_done};
	size_t left = m->bytes - m->data_done;
	if (left > 0) /* a receive's bytes land before its header is checked: bad data fails with it */
		iov[n_iov++] = (struct iovec){(char *)m->op->buf + m->data_done, left < IO_MAX ? left : IO_MAX};
	return n_iov;
}

/* n bytes moved: the header's first. Returns how many of them were the header's. */
static size_t moved(struct move *m, size_t n)
{
	size_t to_hdr = sizeof(m->hdr) - m->hdr_done;
	to_hdr = n < to_hdr ? n : to_hdr;
	m->hdr_done += to_hdr;
	m->data_done += n - to_hdr;
	return to_hdr;
}

/* Moves what the socket takes now of a ready send, or what has come of a ready receive (whose header is
 * checked as soon as it is whole). */
static ftl_err pump_one(struct batch *b, struct move *m, int fd, bool *progressed)
{
	bool is_recv = m->op->is_recv != 0;
	while (!m->is_done) {
		struct iovec iov[2];
		int n_iov = rest_of(m, is_recv ? &m->got : &m->hdr, iov);
		if (n_iov == 0) {
			finish(b, m);
			*progressed = true;
			return FTL_OK;
		}
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
		ssize_t n = is_recv ? recvmsg(fd, &msg, MSG_DONTWAIT) : sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return FTL_OK;
		if (n == 0 && is_recv)
			return lost(b, m->op->peer, "connection closed (the rank died, or gave up after a failure)");
		if (n <= 0)
			return lost(b, m->op->peer, strerror(n < 0 ? errno : ECONNRESET));
		*progressed = true;
		if (moved(m, (size_t)n) > 0 && is_recv && m->hdr_done == sizeof(m->got) &&
		    memcmp(&m->got, &m->hdr, sizeof(m->got)) != 0)
			return mismatched(b, m);
	}
	return FTL_OK;
}

/* One pass over every ready op; which peers wait on what goes into b->fds for poll(). */
static ftl_err pump(struct batch *b, bool *progressed, bool *is_all_done)
{
	*is_all_done = true;
	for (int k = 0; k < b->n_peers; k++)
		b->fds[1 + k].events = 0;
	for (int i = 0; i < b->n; i++) {
		struct move *m = &b->moves[i];
		if (m->is_done)
			continue;
		*is_all_done = false;
		if (!is_ready(b, m))
			continue;
		if (!m->is_started)
			start(b, m);
		int fd = b->t->pairs[m->op->peer].fd;
		ftl_err e = pump_one(b, m, fd, progressed);
		if (e != FTL_OK)
			return e;
		if (!m->is_done)
			for (int k = 0; k < b->n_peers; k++)
				if (b->peers[k] == m->op->peer)
					b->fds[1 + k].events |= m->op->is_recv ? POLLIN : POLLOUT;
	}
	/* A link with nothing to wait for stays out of poll(): a peer that finished its part and left would
	 * otherwise wake it at once, again and again, with its end of stream. */
	for (int k = 0; k < b->n_peers; k++)
		b->fds[1 + k].fd = b->fds[1 + k].events != 0 ? b->t->pairs[b->peers[k]].fd : -1;
	return FTL_OK;
}

/* The peer a timed-out batch waited on: its first op not done. */
static ftl_err timed_out(struct batch *b)
{
	struct ftl_comm_tcp *t = b->t;
	for (int i = 0; i < b->n; i++) {
		const struct move *m = &b->moves[i];
		if (!m->is_done && is_ready(b, m)) {
			int peer = m->op->peer;
			ftl_comm_fail(&t->base, FTL_ERR_TIMEOUT, true, "p2p timed out after %d ms %s rank %d (%s)",
				      t->base.timeout_ms, m->op->is_recv ? "waiting for a message from" : "sending to", peer,
				      t->addrs[peer]);
			ftl_comm_tcp_tell(t, FTL_ERR_TIMEOUT, t->base.rank, peer);
			return FTL_ERR_TIMEOUT;
		}
	}
	return ftl_comm_fail(&t->base, FTL_ERR_TIMEOUT, true, "p2p timed out after %d ms", t->base.timeout_ms);
}

static ftl_err aborted(struct batch *b)
{
	ftl_comm_fail(&b->t->base, FTL_ERR_ABORTED, true, "p2p aborted");
	ftl_comm_tcp_tell(b->t, FTL_ERR_ABORTED, b->t->base.rank, b->t->base.rank);
	return FTL_ERR_ABORTED;
}

static ftl_err run(struct batch *b, int64_t deadline)
{
	struct ftl_comm_tcp *t = b->t;
	b->fds[0] = (struct pollfd){.fd = t->wake_fd, .events = POLLIN};
	for (;;) {
		if (atomic_load(&t->base.is_aborted))
			return aborted(b);
		bool progressed = false, is_all_done = false;
		ftl_err e = pump(b, &progressed, &is_all_done);
		if (e != FTL_OK || is_all_done)
			return e;
		int64_t left = deadline - ftl_comm_now_ms();
		if (left <= 0)
			return timed_out(b);
		if (progressed)
			continue;
		int rc = poll(b->fds, (nfds_t)b->n_peers + 1, left > 1000000 ? 1000000 : (int)left);
		if (rc < 0 && errno != EINTR)
			return ftl_comm_fail(&t->base, FTL_ERR_SYSTEM, true, "p2p: poll: %s", strerror(errno));
		if (rc > 0 && b->fds[0].revents != 0)
			return aborted(b);
	}
}

/* The batch's bookkeeping: each op's predecessor of the same pair and direction, and the distinct peers. */
static ftl_err plan(struct batch *b, const ftl_p2p_op *ops)
{
	int world = b->t->base.world_size;
	int *last = malloc(2 * (size_t)world * sizeof(int));
	if (last == NULL)
		return ftl_comm_fail(&b->t->base, FTL_ERR_SYSTEM, false, "p2p: out of memory");
	for (int q = 0; q < 2 * world; q++)
		last[q] = -1;
	for (int i = 0; i < b->n; i++) {
		const ftl_p2p_op *o = &ops[i];
		int slot = 2 * o->peer + (o->is_recv != 0);
		if (last[2 * o->peer] < 0 && last[2 * o->peer + 1] < 0)
			b->peers[b->n_peers++] = o->peer;
		b->moves[i] = (struct move){.op = o, .bytes = o->count * ftl_dtype_size(o->dtype), .after = last[slot]};
		last[slot] = i;
	}
	free(last);
	return FTL_OK;
}

ftl_err ftl_comm_tcp_p2p(struct ftl_comm *comm, const ftl_p2p_op *ops, int n_ops)
{
	struct ftl_comm_tcp *t = (struct ftl_comm_tcp *)comm;
	int64_t deadline = ftl_comm_now_ms() + t->base.timeout_ms;
	struct batch b = {.t = t, .n = n_ops};
	b.moves = calloc((size_t)n_ops, sizeof(*b.moves));
	b.peers = malloc((size_t)n_ops * sizeof(*b.peers));
	b.fds = calloc((size_t)n_ops + 1, sizeof(*b.fds));
	ftl_err e = b.moves && b.peers && b.fds ? plan(&b, ops)
						 : ftl_comm_fail(&t->base, FTL_ERR_SYSTEM, false, "p2p: out of memory");
	if (e == FTL_OK)
		e = ftl_comm_tcp_connect_pairs(t, b.peers, b.n_peers, deadline);
	if (e == FTL_OK)
		e = run(&b, deadline);
	free(b.moves);
	free(b.peers);
	free(b.fds);
	return e;
}
