/* comm_tcp_connect: from bootstrap text to a connected ring.
 *
 * The bootstrap is every rank's data address, one "host:port" per line, in rank order. Rank r connects to
 * r+1 and accepts r-1 on its listening socket (the caller's, which outlives communicators, or one bound
 * here for the handshake). A connect never waits for an accept, so the ring forms without deadlock even
 * though every rank connects first. The connector says hello (comm id, rank, world size, which link) and
 * the acceptor answers with an ack; a connection from a stale communicator or a stranger is refused and
 * accepting goes on, so a reused listening socket is safe. The mesh links (comm_tcp.h) form the same way:
 * the lower rank of each pair connects, the higher one accepts. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm_tcp.h"
#include "base/diag.h"
#include "base/fork_fds.h"

#define HELLO_MAGIC 0x46544c48u /* "FTLH" */
#define ACK_MAGIC 0x46544c41u   /* "FTLA" */
#define HELLO_VERSION 2u /* 2: the link field */

enum ack_status { ACK_OK, ACK_WRONG_COMM, ACK_WRONG_PEER };

#define LINK_RING (-1) /* hello.link: the ring (we are the acceptor's prev) */
#define LINK_PAIR (-2) /* hello.link: a pair link of point-to-point; else the index of a mesh link */

struct hello {
	uint32_t magic;
	uint32_t version;
	uint64_t comm_id;
	int32_t rank;
	int32_t world_size;
	int32_t link; /* LINK_RING, LINK_PAIR, or the index of a mesh link */
	int32_t pad;
};

struct ack {
	uint32_t magic;
	uint32_t status;
};

size_t ftl_comm_tcp_bootstrap(char *buf, size_t cap, const char *const *addrs, int n)
{
	if (addrs == NULL || n < 1 || n > FTL_COMM_WORLD_MAX || (buf == NULL && cap > 0))
		return 0;
	size_t need = 0;
	for (int i = 0; i < n; i++) {
		size_t len = addrs[i] != NULL ? strlen(addrs[i]) : 0;
		if (len == 0 || len >= FTL_COMM_ADDR_MAX || memchr(addrs[i], '\n', len) != NULL)
			return 0;
		for (size_t k = 0; k <= len; k++) { /* the address, then '\n' (or the final NUL) */
			char c = k < len ? addrs[i][k] : (i + 1 < n ? '\n' : '\0');
			if (need < cap)
				buf[need] = c;
			if (c != '\0')
				need++;
		}
	}
	if (cap > 0)
		buf[need < cap ? need : cap - 1] = '\0';
	return need;
}

/* Splits "host:port" or "[v6]:port" into host (brackets dropped) and port; false when malformed. */
static bool split_addr(const char *addr, char host[FTL_COMM_ADDR_MAX], const char **port)
{
	const char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || colon[1] == '\0' || strlen(colon + 1) > 5 ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return false;
	const char *h = addr;
	size_t hlen = (size_t)(colon - addr);
	if (h[0] == '[') {
		if (hlen < 3 || h[hlen - 1] != ']')
			return false;
		h++;
		hlen -= 2;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = colon + 1;
	return true;
}

/* "host:port" or "[v6]:port" to a socket address. */
static ftl_err resolve(const char *addr, struct addrinfo **out)
{
	char host[FTL_COMM_ADDR_MAX];
	const char *port;
	if (!split_addr(addr, host, &port))
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "address '%s' is not host:port", addr);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	int rc = getaddrinfo(host, port, &hints, out);
	if (rc != 0)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "cannot resolve '%s': %s", addr,
					 gai_strerror(rc));
	return FTL_OK;
}

/* Splits the bootstrap into t->addrs; exactly world_size non-empty lines (a final newline is fine). */
static ftl_err parse_bootstrap(struct ftl_comm_tcp *t, const struct ftl_comm_config *cfg)
{
	const char *p = cfg->bootstrap;
	const char *end = p != NULL ? p + cfg->bootstrap_len : p; /* no bootstrap: NULL + 0 is undefined in C */
	int n = 0;
	while (p < end && !(n == cfg->world_size && p + 1 == end && *p == '\n')) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((eol != NULL ? eol : end) - p);
		if (n == cfg->world_size)
			return ftl_comm_fail_diag(FTL_ERR_INVALID,
						 "tcp bootstrap has more than %d addresses", cfg->world_size);
		if (len == 0 || len >= FTL_COMM_ADDR_MAX || memchr(p, '\0', len) != NULL)
			return ftl_comm_fail_diag(FTL_ERR_INVALID,
						 "tcp bootstrap: address of rank %d is empty, too long or has a NUL", n);
		memcpy(t->addrs[n], p, len);
		t->addrs[n][len] = '\0';
		char host[FTL_COMM_ADDR_MAX];
		const char *port;
		if (!split_addr(t->addrs[n], host, &port))
			return ftl_comm_fail_diag(FTL_ERR_INVALID,
						 "tcp bootstrap: address of rank %d, '%s', is not host:port", n, t->addrs[n]);
		n++;
		p += len + (eol != NULL);
	}
	if (n != cfg->world_size)
		return ftl_comm_fail_diag(FTL_ERR_INVALID,
					 "tcp bootstrap has %d addresses for world size %d", n, cfg->world_size);
	return FTL_OK;
}

/* When a wait ends: at the deadline, or when the caller cancels (asked every CANCEL_POLL_MS). */
struct until {
	int64_t deadline;
	ftl_comm_is_cancelled_cb is_cancelled;
	void *arg;
};

#define CANCEL_POLL_MS 20
/* A peer that refused our comm id is dialled again after this (it is mid view change). */
#define REDIAL_NAP_MS 10

static struct until until_from(const struct ftl_comm_config *cfg, int64_t deadline)
{
	return (struct until){deadline, cfg->is_cancelled, cfg->cancel_arg};
}

/* How long one poll may sleep: up to the deadline, in slices when the caller may cancel. */
static int slice_ms(const struct until *u)
{
	int64_t left = u->deadline - ftl_comm_now_ms();
	if (left < 0)
		left = 0;
	if (u->is_cancelled != NULL && left > CANCEL_POLL_MS)
		left = CANCEL_POLL_MS;
	return left > 1000000 ? 1000000 : (int)left;
}

/* Is the wait over? errno says why: ECANCELED (the caller) or ETIMEDOUT (the deadline). */
static bool is_over(const struct until *u)
{
	if (u->is_cancelled != NULL && u->is_cancelled(u->arg)) {
		errno = ECANCELED;
		return true;
	}
	if (ftl_comm_now_ms() >= u->deadline) {
		errno = ETIMEDOUT;
		return true;
	}
	return false;
}

static ftl_err over_error(int err) { return err == ECANCELED ? FTL_ERR_ABORTED : FTL_ERR_TIMEOUT; }

/* A connection that broke mid-handshake: the caller cancelled, or the peer is lost. */
static ftl_err broken_error(int err) { return err == ECANCELED ? FTL_ERR_ABORTED : FTL_ERR_PEER_LOST; }

/* A thin wrapper of poll(): waits for fd to become ready for events; 1 ready, 0 the wait is over (errno:
 * is_over), -1 with errno set by poll. */
static int wait_fd(int fd, short events, const struct until *u)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = events};
		int rc = poll(&pfd, 1, slice_ms(u));
		if (rc > 0)
			return 1;
		if (rc == 0 && is_over(u))
			return 0;
		if (rc < 0 && errno != EINTR)
			return -1;
	}
}

/* A thin wrapper of send/recv (and wait_fd): sends or receives exactly len bytes on a non-blocking socket
 * before the wait is over; 0, or -1 with errno set (ETIMEDOUT or ECANCELED when it is, ECONNRESET for a
 * close by the peer), which the callers turn into the reason. */
static int exchange_all(int fd, void *buf, size_t len, bool is_send, const struct until *u)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = is_send ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
				    : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (wait_fd(fd, is_send ? POLLOUT : POLLIN, u) <= 0)
			return -1;
	}
	return 0;
}

static void tune_socket(int fd, int user_timeout_ms)
{
	int one = 1;
	unsigned int ut = (unsigned int)user_timeout_ms;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
}

static bool is_retryable(int e)
{
	return e == ECONNREFUSED || e == ETIMEDOUT || e == ENETUNREACH || e == EHOSTUNREACH ||
	       e == ECONNRESET || e == ECONNABORTED || e == EAGAIN;
}

/* Connects to addr, retrying refusals until the wait is over (the peer may not listen yet); the socket in
 * *fd (-1 on failure). */
static ftl_err connect_to(const char *addr, const struct until *u, int *fd)
{
	struct addrinfo *ai;
	*fd = -1;
	ftl_err e = resolve(addr, &ai);
	if (e != FTL_OK)
		return e;
	int last = 0;
	for (;;) {
		int sock = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (sock < 0) {
			last = errno;
			break;
		}
		int rc = connect(sock, ai->ai_addr, ai->ai_addrlen);
		if (rc < 0 && errno == EINPROGRESS) {
			rc = wait_fd(sock, POLLOUT, u);
			if (rc > 0) {
				int soerr = 0;
				socklen_t sl = sizeof(soerr);
				getsockopt(sock, SOL_SOCKET, SO_ERROR, &soerr, &sl);
				rc = soerr == 0 ? 0 : -1;
				errno = soerr;
			} else {
				rc = -1;
			}
		}
		if (rc == 0) {
			freeaddrinfo(ai);
			*fd = sock;
			return FTL_OK;
		}
		last = errno;
		close(sock);
		if (!is_retryable(last))
			break;
		if (is_over(u)) {
			last = errno == ECANCELED ? ECANCELED : last;
			break;
		}
		struct timespec nap = {0, 20 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
	freeaddrinfo(ai);
	return ftl_comm_fail_diag(over_error(last), "cannot connect to %s: %s", addr, strerror(last));
}

/* A listening socket on addr in *fd, for callers that did not bring one. */
static ftl_err listen_on(const char *addr, int *fd)
{
	struct addrinfo *ai;
	ftl_err e = resolve(addr, &ai); /* the address was checked by parse_bootstrap: only a DNS failure */
	if (e != FTL_OK)
		return e;
	*fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (*fd >= 0)
		setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (*fd < 0 || bind(*fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(*fd, 64) < 0) {
		e = ftl_comm_fail_diag(FTL_ERR_SYSTEM, "cannot listen on %s: %s", addr, strerror(errno));
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
	freeaddrinfo(ai);
	return e;
}

/* A lookup: the index of the mesh link to peer, or -1 when there is none. */
static int link_index(const struct ftl_comm_tcp *t, int peer)
{
	for (int i = 0; i < t->n_links; i++)
		if (t->link_rank[i] == peer)
			return i;
	return -1;
}

int ftl_comm_tcp_link_fd(const struct ftl_comm_tcp *t, int peer)
{
	int i = link_index(t, peer);
	return i >= 0 ? t->link_fd[i] : -1;
}

struct ftl_comm_tcp_pair *ftl_comm_tcp_pairs(struct ftl_comm_tcp *t)
{
	if (t->pairs == NULL) {
		t->pairs = calloc((size_t)t->base.world_size, sizeof(*t->pairs));
		for (int q = 0; t->pairs != NULL && q < t->base.world_size; q++)
			t->pairs[q].fd = -1;
	}
	return t->pairs;
}

/* Is a hello from this rank on this link one we still wait for? A pair link from a lower rank is welcome at
 * any time, also while this communicator is still being made: a peer that finished first may already be in
 * its first exchange with us. */
static bool is_expected(struct ftl_comm_tcp *t, const struct hello *h)
{
	if (h->world_size != t->base.world_size)
		return false;
	if (h->link == LINK_RING)
		return h->rank == ftl_comm_tcp_prev(t) && t->prev_fd < 0;
	if (h->link == LINK_PAIR)
		return h->rank >= 0 && h->rank < t->base.rank && ftl_comm_tcp_pairs(t) != NULL && t->pairs[h->rank].fd < 0;
	int i = link_index(t, h->rank);
	return h->rank < t->base.rank && i >= 0 && t->link_fd[i] < 0;
}

/* Accepts one connection, answers its hello and files it (as prev, or as a mesh link); the fd, or -1 when
 * none was filed, which is no error: a stale communicator, a stranger, a connection that vanished (all
 * closed), and accepting goes on. */
static int accept_one(struct ftl_comm_tcp *t, int lfd, uint64_t comm_id, const struct until *u)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	/* A stranger that says nothing gets a second, not the whole deadline. */
	struct until hello_until = *u;
	int64_t hello_deadline = ftl_comm_now_ms() + 1000;
	if (hello_deadline < hello_until.deadline)
		hello_until.deadline = hello_deadline;
	struct hello h;
	if (exchange_all(fd, &h, sizeof(h), false, &hello_until) < 0 ||
	    h.magic != HELLO_MAGIC || h.version != HELLO_VERSION) {
		close(fd);
		return -1;
	}
	struct ack a = {.magic = ACK_MAGIC, .status = ACK_OK};
	if (h.comm_id != comm_id)
		a.status = ACK_WRONG_COMM;
	else if (!is_expected(t, &h))
		a.status = ACK_WRONG_PEER;
	if (exchange_all(fd, &a, sizeof(a), true, u) == 0 && a.status == ACK_OK) {
		if (h.link == LINK_RING)
			t->prev_fd = fd;
		else if (h.link == LINK_PAIR)
			t->pairs[h.rank].fd = fd;
		else
			t->link_fd[link_index(t, h.rank)] = fd;
		return fd;
	}
	close(fd);
	return -1;
}

/* A failed create on the caller's listener (which outlives us): answer the connections already waiting
 * there, refusing a stale comm id and closing one for ours, so that a peer whose hello sits in the queue
 * learns at once instead of waiting out its connect deadline. Hellos still in flight get a short wait. */
static void answer_pending(struct ftl_comm_tcp *t, int lfd, uint64_t comm_id)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	for (int i = 0; i < 64 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN); i++) {
		int fd = accept_one(t, lfd, comm_id, &(struct until){.deadline = ftl_comm_now_ms() + 200});
		if (fd < 0)
			continue;
		close(fd); /* and forget it wherever accept_one filed it */
		if (t->prev_fd == fd)
			t->prev_fd = -1;
		for (int k = 0; k < t->n_links; k++)
			if (t->link_fd[k] == fd)
				t->link_fd[k] = -1;
		for (int q = 0; t->pairs != NULL && q < t->base.world_size; q++)
			if (t->pairs[q].fd == fd)
				t->pairs[q].fd = -1;
	}
}

/* Reads the answer to our hello on fd from rank peer into *status; fails when there is none. */
static ftl_err read_ack(struct ftl_comm_tcp *t, int fd, int peer, const struct until *u, enum ack_status *status)
{
	struct ack a;
	if (exchange_all(fd, &a, sizeof(a), false, u) < 0 || a.magic != ACK_MAGIC) {
		int err = errno;
		return ftl_comm_fail_diag(broken_error(err), "rank %d (%s) did not accept our connection: %s", peer,
					  t->addrs[peer], a.magic != ACK_MAGIC ? "bad answer" : strerror(err));
	}
	*status = a.status == ACK_OK || a.status == ACK_WRONG_COMM ? (enum ack_status)a.status : ACK_WRONG_PEER;
	return FTL_OK;
}

static ftl_err refused(struct ftl_comm_tcp *t, int peer, enum ack_status status)
{
	return ftl_comm_fail_diag(FTL_ERR_INVALID, "rank %d (%s) refused us: %s", peer, t->addrs[peer],
				  status == ACK_WRONG_COMM ? "it is building another communicator (comm id differs)"
							   : "it expects another rank or world size");
}

/* Connects to rank peer and says hello on the given link; the socket in *fd (-1 on failure). */
static ftl_err say_hello(struct ftl_comm_tcp *t, int peer, int link, const struct until *u, int *fd)
{
	ftl_err e = connect_to(t->addrs[peer], u, fd);
	if (e == FTL_OK) {
		struct hello h = {.magic = HELLO_MAGIC, .version = HELLO_VERSION, .comm_id = t->base.comm_id,
				  .rank = t->base.rank, .world_size = t->base.world_size, .link = link};
		if (exchange_all(*fd, &h, sizeof(h), true, u) < 0) {
			int err = errno;
			e = ftl_comm_fail_diag(broken_error(err), "rank %d (%s) lost during connect: %s", peer,
					       t->addrs[peer], strerror(err));
			close(*fd);
			*fd = -1;
		}
	}
	return e;
}

/* say_hello on the ring (LINK_RING) or a mesh link, filed as next_fd or the link's. */
static ftl_err dial(struct ftl_comm_tcp *t, int peer, int link, const struct until *u, int *fd)
{
	ftl_err e = say_hello(t, peer, link, u, fd);
	if (link == LINK_RING)
		t->next_fd = *fd;
	else
		t->link_fd[link] = *fd;
	return e;
}

/* Connections still to accept: prev, and the mesh links from lower ranks. */
static int accepts_left(const struct ftl_comm_tcp *t)
{
	int left = t->prev_fd < 0;
	for (int i = 0; i < t->n_links; i++)
		left += t->link_rank[i] < t->base.rank && t->link_fd[i] < 0;
	return left;
}

/* Why connecting ended before every link was up: cancelled, or what was missing at the deadline. */
static ftl_err not_connected(struct ftl_comm_tcp *t, const struct ftl_comm_config *cfg, int err, bool is_answer_missing,
			     int refused_by)
{
	if (err == ECANCELED)
		return ftl_comm_fail_diag(FTL_ERR_ABORTED, "cancelled by the caller while connecting");
	if (err != ETIMEDOUT)
		return ftl_comm_fail_diag(FTL_ERR_SYSTEM, "poll while connecting: %s", strerror(err));
	if (refused_by >= 0)
		return refused(t, refused_by, ACK_WRONG_COMM); /* the reason it did not answer yes */
	if (t->prev_fd < 0)
		return ftl_comm_fail_diag(FTL_ERR_TIMEOUT, "rank %d (%s) did not connect to us within %d ms",
					  ftl_comm_tcp_prev(t), t->addrs[ftl_comm_tcp_prev(t)], cfg->connect_timeout_ms);
	return ftl_comm_fail_diag(FTL_ERR_TIMEOUT, "%s within %d ms",
				  is_answer_missing ? "a peer did not answer our hello" : "a peer did not connect",
				  cfg->connect_timeout_ms);
}

/* A peer that answered "another comm id" is building another view's communicator: a view change under
 * way, after which it builds ours (or our caller learns ours is stale and cancels). Failing at once would
 * let two workers that start their builds a moment apart refuse each other view after view; so the old
 * connection goes and the peer is dialled again, until the wait is over. Then the refusal is the reason
 * (not_connected), unless the caller cancelled or the dial failed otherwise. */
static ftl_err redial(struct ftl_comm_tcp *t, const struct ftl_comm_config *cfg, int peer, int link, int *fd,
		      const struct until *u)
{
	close(*fd);
	struct timespec nap = {0, REDIAL_NAP_MS * 1000 * 1000};
	nanosleep(&nap, NULL);
	if (is_over(u)) {
		*fd = -1;
		if (link == LINK_RING)
			t->next_fd = -1;
		else
			t->link_fd[link] = -1;
		return not_connected(t, cfg, errno, true, peer);
	}
	ftl_err e = dial(t, peer, link, u, fd);
	return e == FTL_ERR_TIMEOUT ? not_connected(t, cfg, ETIMEDOUT, true, peer) : e;
}

ftl_err ftl_comm_tcp_connect(struct ftl_comm_tcp *t, const struct ftl_comm_config *cfg)
{
	ftl_err e = parse_bootstrap(t, cfg);
	if (e != FTL_OK || cfg->world_size == 1)
		return e;
	struct until u = until_from(cfg, ftl_comm_now_ms() + (cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 30000));
	int user_timeout = cfg->tcp_user_timeout_ms > 0 ? cfg->tcp_user_timeout_ms : 10000;
	int rank = t->base.rank;
	int lfd = cfg->listen_fd;
	t->listen_fd = cfg->listen_fd;
	t->user_timeout_ms = user_timeout;
	if (lfd < 0 && (e = listen_on(t->addrs[rank], &lfd)) != FTL_OK)
		return e;

	/* Dial next (the ring) and the higher mesh partners; out[0] is next. */
	int out_fd[1 + FTL_COMM_TCP_LINKS_MAX], out_peer[1 + FTL_COMM_TCP_LINKS_MAX],
		out_link[1 + FTL_COMM_TCP_LINKS_MAX], n_out = 0, n_acked = 0, refused_by = -1;
	bool is_acked[1 + FTL_COMM_TCP_LINKS_MAX] = {false};
	for (int i = LINK_RING; i < t->n_links; i++) {
		int peer = i == LINK_RING ? ftl_comm_tcp_next(t) : t->link_rank[i];
		if (i != LINK_RING && peer < rank)
			continue;
		if ((e = dial(t, peer, i, &u, &out_fd[n_out])) != FTL_OK)
			goto out;
		out_peer[n_out] = peer;
		out_link[n_out++] = i;
	}
	/* Wait for all: the lower ranks' connections on the listener, and every answer (yes, or another comm id:
	 * dial again; anything else fails at once). */
	while (n_acked < n_out || accepts_left(t) > 0) {
		struct pollfd fds[2 + FTL_COMM_TCP_LINKS_MAX];
		fds[0] = (struct pollfd){.fd = accepts_left(t) > 0 ? lfd : -1, .events = POLLIN};
		for (int i = 0; i < n_out; i++)
			fds[1 + i] = (struct pollfd){.fd = is_acked[i] ? -1 : out_fd[i], .events = POLLIN};
		int rc = poll(fds, (nfds_t)(1 + n_out), slice_ms(&u));
		if (rc < 0 && errno == EINTR)
			continue;
		/* Asked at every turn, not only when a slice passed quietly: peers that moved on to a newer view
		 * dial us again every few ms, and a burst of kills once kept this loop busy to the deadline. */
		if (rc < 0 || is_over(&u)) {
			e = not_connected(t, cfg, errno, n_acked < n_out, refused_by);
			goto out;
		}
		for (int i = 0; i < n_out; i++) {
			if (fds[1 + i].revents == 0)
				continue;
			enum ack_status status = ACK_WRONG_PEER;
			if ((e = read_ack(t, out_fd[i], out_peer[i], &u, &status)) != FTL_OK)
				goto out;
			if (status == ACK_WRONG_COMM) {
				refused_by = out_peer[i];
				if ((e = redial(t, cfg, out_peer[i], out_link[i], &out_fd[i], &u)) != FTL_OK)
					goto out;
				continue;
			}
			if (status != ACK_OK) {
				e = refused(t, out_peer[i], status);
				goto out;
			}
			is_acked[i] = true;
			n_acked++;
			refused_by = refused_by == out_peer[i] ? -1 : refused_by;
		}
		if (fds[0].revents != 0)
			accept_one(t, lfd, cfg->comm_id, &u);
	}
	tune_socket(t->next_fd, user_timeout);
	tune_socket(t->prev_fd, user_timeout);
	for (int i = 0; i < t->n_links; i++)
		tune_socket(t->link_fd[i], user_timeout);
	for (int q = 0; t->pairs != NULL && q < t->base.world_size; q++) /* pair links that came early */
		if (t->pairs[q].fd >= 0)
			tune_socket(t->pairs[q].fd, user_timeout);
	e = FTL_OK;
out:
	if (lfd != cfg->listen_fd)
		close(lfd); /* its queued connections are reset */
	else if (e != FTL_OK)
		answer_pending(t, lfd, cfg->comm_id);
	return e;
}

/* A diagnostic without its "ftl: ", to go inside another. */
static const char *unprefixed(const char *message)
{
	return strncmp(message, "ftl: ", 5) == 0 ? message + 5 : message;
}

/* The cancel check of a pair link's wait: ftl_comm_abort. */
static int is_aborted(void *arg)
{
	return atomic_load(&((struct ftl_comm_tcp *)arg)->base.is_aborted);
}

/* Whether peer still lacks a pair link; the lower ones come to us, the higher ones we dial. */
static bool is_pair_missing(const struct ftl_comm_tcp *t, int peer)
{
	return t->pairs[peer].fd < 0;
}

static ftl_err pair_failed(struct ftl_comm_tcp *t, ftl_err err, const char *fmt, int peer, const char *why)
{
	return ftl_comm_fail(&t->base, err, true, fmt, peer, t->addrs[peer], why);
}

ftl_err ftl_comm_tcp_connect_pairs(struct ftl_comm_tcp *t, const int *peers, int n_peers, int64_t deadline_ms)
{
	if (ftl_comm_tcp_pairs(t) == NULL)
		return ftl_comm_fail(&t->base, FTL_ERR_SYSTEM, false, "p2p: out of memory for %d pair links",
				     t->base.world_size);
	int rank = t->base.rank, n_missing = 0;
	for (int i = 0; i < n_peers; i++)
		n_missing += is_pair_missing(t, peers[i]);
	if (n_missing == 0)
		return FTL_OK; /* every call after the pair's first */
	for (int i = 0; i < n_peers; i++)
		if (peers[i] < rank && is_pair_missing(t, peers[i]) && t->listen_fd < 0)
			return ftl_comm_fail(&t->base, FTL_ERR_UNSUPPORTED, false,
					     "p2p with rank %d: this communicator keeps no listener for the lower ranks' pair "
					     "links (give ftl_comm_new a cfg.listen_fd that outlives it)", peers[i]);
	struct until u = {deadline_ms, is_aborted, t};
	int *out_fd = malloc((size_t)n_peers * 2 * sizeof(int)), *out_peer = out_fd + n_peers, n_out = 0;
	if (out_fd == NULL)
		return ftl_comm_fail(&t->base, FTL_ERR_SYSTEM, false, "p2p: out of memory");
	struct pollfd *fds = calloc((size_t)n_peers + 1, sizeof(*fds)); /* the listener, then our dials */
	ftl_err e = fds != NULL ? FTL_OK : ftl_comm_fail(&t->base, FTL_ERR_SYSTEM, false, "p2p: out of memory");
	for (int i = 0; i < n_peers && e == FTL_OK; i++) {
		int q = peers[i];
		if (q < rank || !is_pair_missing(t, q))
			continue;
		if ((e = say_hello(t, q, LINK_PAIR, &u, &out_fd[n_out])) != FTL_OK)
			e = ftl_comm_fail(&t->base, e, true, "p2p: %s", unprefixed(ftl_error_message()));
		else
			out_peer[n_out++] = q;
	}
	for (;;) {
		int accepts = 0;
		for (int i = 0; i < n_peers; i++)
			accepts += peers[i] < rank && is_pair_missing(t, peers[i]);
		int unanswered = 0;
		for (int i = 0; i < n_out; i++)
			unanswered += out_fd[i] >= 0;
		if (e != FTL_OK || (accepts == 0 && unanswered == 0))
			break;
		fds[0] = (struct pollfd){.fd = accepts > 0 ? t->listen_fd : -1, .events = POLLIN};
		for (int i = 0; i < n_out; i++)
			fds[1 + i] = (struct pollfd){.fd = out_fd[i], .events = POLLIN};
		int rc = poll(fds, (nfds_t)n_out + 1, slice_ms(&u));
		if (rc < 0 && errno != EINTR)
			e = ftl_comm_fail(&t->base, FTL_ERR_SYSTEM, true, "p2p: poll while connecting: %s", strerror(errno));
		else if (rc <= 0 && is_over(&u) && errno == ECANCELED)
			e = ftl_comm_fail(&t->base, FTL_ERR_ABORTED, true, "p2p aborted while connecting");
		else if (rc <= 0 && ftl_comm_now_ms() >= u.deadline)
			e = ftl_comm_fail(&t->base, FTL_ERR_TIMEOUT, true, "p2p: %s within %d ms",
					  accepts > 0 ? "a lower rank did not connect to us" : "a higher rank did not answer our hello",
					  t->base.timeout_ms);
		for (int i = 0; i < n_out && e == FTL_OK && rc > 0; i++) {
			if (out_fd[i] < 0 || fds[1 + i].revents == 0)
				continue;
			enum ack_status status = ACK_WRONG_PEER;
			int q = out_peer[i];
			if (read_ack(t, out_fd[i], q, &u, &status) != FTL_OK)
				e = pair_failed(t, FTL_ERR_PEER_LOST, "p2p: rank %d (%s) did not answer our hello: %s", q,
						unprefixed(ftl_error_message()));
			else if (status == ACK_WRONG_COMM) /* it builds another view's communicator: ours is stale */
				e = pair_failed(t, FTL_ERR_PEER_LOST, "p2p: rank %d (%s) refused us: %s", q,
						"it has moved on to another communicator (a view change)");
			else if (status != ACK_OK)
				e = pair_failed(t, FTL_ERR_INVALID, "p2p: rank %d (%s) refused us: %s", q,
						"it expects another rank or world size, or has a link to us already");
			else {
				tune_socket(out_fd[i], t->user_timeout_ms);
				t->pairs[q].fd = out_fd[i];
				out_fd[i] = -1;
			}
		}
		if (e == FTL_OK && rc > 0 && fds[0].revents != 0) {
			int fd = accept_one(t, t->listen_fd, t->base.comm_id, &u);
			if (fd >= 0)
				tune_socket(fd, t->user_timeout_ms);
		}
	}
	free(fds);
	for (int i = 0; i < n_out; i++)
		if (out_fd[i] >= 0)
			close(out_fd[i]);
	free(out_fd);
	for (int q = 0; q < t->base.world_size; q++)
		if (t->pairs[q].fd >= 0 && !t->pairs[q].is_fork_listed) {
			ftl_fork_fds_add(t->pairs[q].fd);
			t->pairs[q].is_fork_listed = true;
		}
	return e;
}
