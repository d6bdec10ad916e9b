/* TCP between agents, the peer channel's incoming side and its push-pull exchanges. Push-pull (the
 * full-state exchange of joins and anti-entropy) is one connection per exchange: the initiator sends its
 * sealed state, the other side merges it and answers with its own, both close. Rendezvous frames come
 * over persistent connections (agent_peers.c dials them): the connection is read frame after frame for as
 * long as the peer keeps it, and closed after FTL_PEER_STREAM_IDLE_MS without one. (An agent from before
 * persistent connections sends one frame and closes; that reads the same.)
 * Frames are read by channel/tcp_frame.c and sealed and opened by channel/seal.c; a frame whose body does not open is
 * dropped (tcp_dropped.unopened). The gossip port is open to anyone, so what a connection can make us
 * hold is bounded before anything in it is authenticated: a peer that proved nothing (a stranger) may send
 * a frame of FTL_TCP_UNAUTH_MAX at most (larger ones need a sealed header first) and must prove itself
 * within FTL_TCP_UNAUTH_TIMEOUT_MS; at most FTL_TCP_UNAUTH_CONNS strangers are served at once, at most
 * FTL_TCP_UNAUTH_PER_SOURCE from one address, holding FTL_TCP_UNAUTH_BUFFERED_MAX of input together. A
 * newcomer over a cap is never turned away: the oldest stranger goes instead (admission.h), so idle or
 * trickling connections cannot keep a joining or healing peer out. All input buffers together never exceed
 * FTL_TCP_BUFFERED_MAX. Whatever breaks a rule, or takes longer than FTL_TCP_TIMEOUT_MS, is dropped and
 * counted by reason. A rendezvous stream is authenticated by its first frame that opens; its buffer is
 * given back whenever it holds no partial frame. */
#include "agent_internal.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "agent_conn.h"
#include "agent_fork.h"
#include "base/log.h"
#include "channel/seal.h"

typedef struct pp_conn {
	ftl_agent *a;
	ftl_agent_conn conn;   /* on a->tcp.conns while open, closed first when the agent stops */
	uv_connect_t connect;
	uv_write_t write;
	bool is_initiator;
	bool is_one_way;       /* a rendezvous message: close once written */
	bool is_join;
	char peer[FTL_ADDR_MAX];
	uint8_t *out;          /* what we send: length + frame */
	size_t out_len;
	uint8_t *in;           /* what we receive */
	size_t in_len, in_cap;
	size_t in_need;        /* what the frame being read may still make us hold (the reader says) */
	ftl_tcp_reader reader;
	ftl_admit_entry stranger; /* queued in a->tcp.strangers while inbound and proved nothing yet */
	bool is_stream;        /* inbound rendezvous frames: idles quietly between them */
} pp_conn;

#define conn_of(entry) ftl_owner_of(entry, pp_conn, stranger)

/* c is proved (or closing): it leaves the strangers, and so does the buffer it holds. */
static void leave_strangers(pp_conn *c)
{
	if (!c->stranger.is_queued)
		return;
	ftl_admit_remove(&c->a->tcp.strangers, &c->stranger);
	c->a->tcp.strangers_buffered -= c->in_cap;
}

static void conn_free(ftl_agent_conn *conn)
{
	pp_conn *c = ftl_owner_of(conn, pp_conn, conn);
	c->a->tcp.buffered -= c->in_cap;
	free(c->out);
	free(c->in);
	free(c);
}

static void conn_close(pp_conn *c)
{
	leave_strangers(c);
	ftl_agent_conn_close(&c->conn);
}

/* Anyone can open TCP connections to the gossip port and send nothing: every one times out. They are
 * counted (status: counters.tcp_timeouts) and logged at most once per TCP_TIMEOUT_LOG_EVERY_MS, so a
 * flood of them cannot flood the log. */
#define TCP_TIMEOUT_LOG_EVERY_MS 10000
#define FTL_TCP_UNAUTH_CONNS 256             /* strangers at once (fewer under a low descriptor limit) */
#define FTL_TCP_UNAUTH_PER_SOURCE 64         /* ... from one address (a NAT may hide a few peers) */
#define FTL_TCP_UNAUTH_BUFFERED_MAX (8u << 20) /* what they hold together: 32 frames of FTL_TCP_UNAUTH_MAX */
#define FTL_TCP_UNAUTH_TIMEOUT_MS 2000       /* a peer sends its small frame or sealed header at once */
#define FTL_TCP_BACKLOG 1024                 /* connections the kernel holds for us until accepted */
#define FTL_TCP_UNAUTH_FD_SHARE 4            /* strangers take at most a quarter of the descriptor limit */
#define FTL_TCP_BUFFERED_MAX (48u << 20)     /* one largest authenticated frame, and the small ones beside it */
#define TCP_FIRST_BUFFER 4096

static void on_timeout(uv_timer_t *t)
{
	pp_conn *c = t->data;
	ftl_agent *a = c->a;
	uint64_t now = uv_now(&a->loop);
	if (c->is_stream && c->in_len == 0) { /* a rendezvous stream its sender no longer uses */
		conn_close(c);
		return;
	}
	a->tcp.timeouts++;
	if (a->tcp.timeouts_logged == 0 || now - a->tcp.timeout_logged_ms >= TCP_TIMEOUT_LOG_EVERY_MS) {
		ftl_log(&a->set.log, FTL_LOG_WARN, "transport",
			FTL_MSG("push-pull with %s timed out (%llu timeouts since the last such line; "
				"counters.tcp_timeouts in ftlctl status counts them all)",
				c->peer, (unsigned long long)(a->tcp.timeouts - a->tcp.timeouts_logged)),
			FTL_F_STR("peer", c->peer), FTL_F_UINT("timeouts", a->tcp.timeouts - a->tcp.timeouts_logged));
		a->tcp.timeouts_logged = a->tcp.timeouts;
		a->tcp.timeout_logged_ms = now;
	}
	conn_close(c);
}

/* c proved it holds the key: no longer a stranger, it has the whole FTL_TCP_TIMEOUT_MS from here. */
static void set_authed(pp_conn *c)
{
	if (!c->stranger.is_queued)
		return;
	leave_strangers(c);
	uv_timer_start(&c->conn.timer, on_timeout, FTL_TCP_TIMEOUT_MS, 0);
}

static pp_conn *conn_new(ftl_agent *a, bool is_initiator)
{
	pp_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->a = a;
	c->is_initiator = is_initiator;
	ftl_agent_conn_init(&c->conn, &a->loop, &a->tcp.conns, c, conn_free);
	c->in_need = FTL_TCP_PREFIX + FTL_TCP_UNAUTH_MAX;
	uv_timer_start(&c->conn.timer, on_timeout, FTL_TCP_TIMEOUT_MS, 0);
	return c;
}

static ftl_err prepare_frame(pp_conn *c, char kind, const uint8_t *plain, size_t len)
{
	return ftl_seal_frame(c->a->keyring, (uint8_t)kind, plain, len, &c->out, &c->out_len);
}

static ftl_err prepare_state(pp_conn *c, bool is_join)
{
	uint8_t *frame;
	size_t len;
	if (ftl_node_push_pull_encode(c->a->node, is_join, &frame, &len) != FTL_OK)
		return ftl_diag_set(FTL_ERR_SYSTEM, "push-pull with %s: out of memory encoding our state", c->peer);
	ftl_err err = prepare_frame(c, FTL_FRAME_PUSH_PULL, frame, len);
	free(frame);
	if (err)
		return ftl_diag_prefix("push-pull with %s: cannot seal our state: ", c->peer);
	return FTL_OK;
}

static void on_written(uv_write_t *w, int status)
{
	pp_conn *c = w->data;
	if (status < 0 || !c->is_initiator || c->is_one_way)
		conn_close(c); /* the answering side is done once its state is out */
}

static void send_state(pp_conn *c)
{
	uv_buf_t buf = uv_buf_init((char *)c->out, (unsigned)c->out_len);
	c->write.data = c;
	if (uv_write(&c->write, (uv_stream_t *)&c->conn.tcp, &buf, 1, on_written) != 0)
		conn_close(c);
}

/* Drops are counted; the first of each reason and then every power of two is logged, so a flood of them
 * cannot flood the log. */
static void drop(pp_conn *c, ftl_tcp_drop why)
{
	uint64_t n = ++c->a->tcp.dropped[why];
	if ((n & (n - 1)) == 0)
		ftl_log(&c->a->set.log, FTL_LOG_WARN, "transport",
			FTL_MSG("dropped TCP input from %s: %s (%llu so far; counters.tcp_dropped in ftlctl status "
				"counts them)",
				c->peer, ftl_tcp_drop_strs[why], (unsigned long long)n),
			FTL_F_STR("peer", c->peer), FTL_F_STR("reason", ftl_tcp_drop_strs[why]), FTL_F_UINT("dropped", n));
	conn_close(c);
}

/* A stranger's buffer may grow by more once the strangers together hold no more than
 * FTL_TCP_UNAUTH_BUFFERED_MAX: the oldest others that hold input go first. False when c itself was dropped. */
static bool stranger_may_grow(pp_conn *c, size_t more)
{
	ftl_agent *a = c->a;
	while (a->tcp.strangers_buffered + more > FTL_TCP_UNAUTH_BUFFERED_MAX) {
		ftl_admit_entry *e = ftl_admit_oldest(&a->tcp.strangers);
		while (e && (e == &c->stranger || conn_of(e)->in_cap == 0))
			e = ftl_admit_newer(e);
		if (!e) {
			drop(c, FTL_TCP_DROP_BUFFER_FULL);
			return false;
		}
		drop(conn_of(e), FTL_TCP_DROP_BUFFER_FULL);
	}
	return true;
}

/* Grows the input buffer by doubling, never past what the frame being read may need, never past
 * FTL_TCP_BUFFERED_MAX for all connections together, nor past FTL_TCP_UNAUTH_BUFFERED_MAX for strangers. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	pp_conn *c = h->data;
	ftl_agent *a = c->a;
	*buf = uv_buf_init(NULL, 0); /* libuv then reports UV_ENOBUFS: the read callback closes */
	if (c->conn.is_closing)
		return;
	if (c->in_len == c->in_cap) {
		size_t cap = c->in_cap ? c->in_cap * 2 : TCP_FIRST_BUFFER;
		if (cap > c->in_need)
			cap = c->in_need;
		if (cap <= c->in_cap)
			return;
		if (a->tcp.buffered + (cap - c->in_cap) > FTL_TCP_BUFFERED_MAX) {
			drop(c, FTL_TCP_DROP_BUFFER_FULL);
			return;
		}
		if (c->stranger.is_queued && !stranger_may_grow(c, cap - c->in_cap))
			return;
		uint8_t *in = realloc(c->in, cap);
		if (!in)
			return;
		a->tcp.buffered += cap - c->in_cap;
		if (c->stranger.is_queued)
			a->tcp.strangers_buffered += cap - c->in_cap;
		c->in = in;
		c->in_cap = cap;
	}
	*buf = uv_buf_init((char *)c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

/* A whole push-pull frame has arrived, opened: merge it, then answer (the passive side) or finish (the
 * initiator). */
static void on_push_pull(pp_conn *c, const uint8_t *frame, size_t len)
{
	ftl_agent *a = c->a;
	bool is_join = false;
	ftl_err err = ftl_node_push_pull_merge(a->node, ftl_agent_now_us(a), frame, len, &is_join);
	ftl_agent_fed(a);
	if (err) {
		ftl_log(&a->set.log, FTL_LOG_WARN, "transport",
			FTL_MSG("dropped a push-pull frame from %s: %s", c->peer, ftl_diag_message()),
			FTL_F_STR("peer", c->peer), FTL_F_STR("error", ftl_diag_message()));
		conn_close(c);
		return;
	}
	if (c->is_initiator) {
		conn_close(c);
	} else if (prepare_state(c, false) == 0) {
		send_state(c);
	} else {
		conn_close(c);
	}
}

/* The connection has read one frame of used bytes: keep what follows, give the buffer back when that is
 * nothing, and wait for the next frame (at most FTL_PEER_STREAM_IDLE_MS). */
static void next_frame(pp_conn *c, size_t used)
{
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	if (c->in_len == 0) {
		c->a->tcp.buffered -= c->in_cap;
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
	memset(&c->reader, 0, sizeof(c->reader));
	c->in_need = FTL_TCP_PREFIX + FTL_TCP_UNAUTH_MAX;
	c->is_stream = true;
	uv_timer_start(&c->conn.timer, on_timeout, FTL_PEER_STREAM_IDLE_MS, 0);
}

/* One whole frame: false when the connection reads no more (a push-pull, or dropped). */
static bool on_frame(pp_conn *c, uint8_t kind, const uint8_t *body, size_t len)
{
	if (kind == FTL_FRAME_RENDEZVOUS && c->is_initiator) {
		drop(c, FTL_TCP_DROP_UNKNOWN_KIND); /* a rendezvous message is never an answer */
		return false;
	}
	if (kind == FTL_FRAME_PUSH_PULL && c->is_stream) {
		drop(c, FTL_TCP_DROP_UNKNOWN_KIND); /* a rendezvous stream carries nothing else */
		return false;
	}
	uint8_t *plain;
	size_t plain_len;
	if (ftl_open_frame(c->a->keyring, body, len, &plain, &plain_len) != 0) {
		if (kind == FTL_FRAME_PUSH_PULL)
			ftl_node_count_drop(c->a->node, FTL_DROP_PUSH_PULL);
		drop(c, FTL_TCP_DROP_UNOPENED);
		return false;
	}
	set_authed(c);
	if (kind == FTL_FRAME_PUSH_PULL) {
		uv_read_stop((uv_stream_t *)&c->conn.tcp);
		on_push_pull(c, plain, plain_len);
	} else {
		ftl_agent_rdv_receive(c->a, plain, plain_len);
	}
	free(plain);
	return kind == FTL_FRAME_RENDEZVOUS && !c->conn.is_closing;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	pp_conn *c = s->data;
	if (n < 0 || c->conn.is_closing) {
		conn_close(c);
		return;
	}
	c->in_len += (size_t)n;
	for (;;) {
		ftl_tcp_result r;
		switch (ftl_tcp_read(&c->reader, c->a->keyring, c->in, c->in_len, &r)) {
		case FTL_TCP_NEED_MORE:
			c->in_need = r.need;
			return;
		case FTL_TCP_SKIP: /* a sealed header opened: this peer holds the key */
			set_authed(c);
			memmove(c->in, c->in + r.used, c->in_len - r.used);
			c->in_len -= r.used;
			continue;
		case FTL_TCP_DROP:
			drop(c, r.why);
			return;
		case FTL_TCP_FRAME:
			if (!on_frame(c, r.kind, c->in + FTL_TCP_PREFIX, r.body_len))
				return;
			next_frame(c, r.used);
			continue;
		}
	}
}

/* c, just accepted from peer, is let in as the newest stranger; whoever is over a cap goes to make room. */
static void admit(pp_conn *c, const struct sockaddr *peer)
{
	ftl_agent *a = c->a;
	ftl_admit_entry *victim;
	while ((victim = ftl_admit_victim(&a->tcp.strangers, peer, &a->tcp.stranger_limits, a->tcp.loop_turns)))
		drop(conn_of(victim), FTL_TCP_DROP_TOO_MANY);
	ftl_admit_push(&a->tcp.strangers, &c->stranger, peer, a->tcp.loop_turns);
	uv_timer_start(&c->conn.timer, on_timeout, FTL_TCP_UNAUTH_TIMEOUT_MS, 0);
	uv_read_start((uv_stream_t *)&c->conn.tcp, on_alloc, on_read);
}

static void accept_one(ftl_agent *a)
{
	pp_conn *c = conn_new(a, false);
	if (!c)
		return;
	if (uv_accept((uv_stream_t *)&a->tcp.listener, (uv_stream_t *)&c->conn.tcp) != 0) {
		conn_close(c);
		return;
	}
	ftl_agent_fork_track((uv_handle_t *)&c->conn.tcp);
	struct sockaddr_storage peer;
	int plen = sizeof(peer);
	bool is_known = uv_tcp_getpeername(&c->conn.tcp, (struct sockaddr *)&peer, &plen) == 0;
	if (is_known)
		ftl_addr_format((struct sockaddr *)&peer, c->peer, sizeof(c->peer));
	admit(c, is_known ? (struct sockaddr *)&peer : NULL);
}

static void on_connection(uv_stream_t *server, int status)
{
	ftl_agent *a = server->data;
	if (status < 0) {
		/* Out of descriptors (EMFILE): libuv has refused those waiting; the oldest stranger makes room so
		 * that the next one is accepted. Accepting goes on either way. */
		ftl_admit_entry *oldest = ftl_admit_oldest(&a->tcp.strangers);
		if (oldest)
			drop(conn_of(oldest), FTL_TCP_DROP_TOO_MANY);
		return;
	}
	/* Too many strangers too young to push out: libuv holds this one and stops listening until on_turn
	 * accepts it (admission.h). */
	a->tcp.is_accept_waiting = ftl_admit_must_wait(&a->tcp.strangers, &a->tcp.stranger_limits, a->tcp.loop_turns);
	if (!a->tcp.is_accept_waiting)
		accept_one(a);
}

void ftl_agent_tcp_close_all(ftl_agent *a)
{
	while (a->tcp.conns.first)
		conn_close(ftl_owner_of(a->tcp.conns.first, pp_conn, conn.link));
}

/* Before each poll for I/O: one more turn, and a connection that waited for one is accepted now if it may. */
static void on_turn(uv_prepare_t *p)
{
	ftl_agent *a = p->data;
	a->tcp.loop_turns++;
	if (a->tcp.is_accept_waiting && !a->is_closing &&
	    !ftl_admit_must_wait(&a->tcp.strangers, &a->tcp.stranger_limits, a->tcp.loop_turns)) {
		a->tcp.is_accept_waiting = false;
		accept_one(a);
	}
	ftl_metrics_http_turn(a);
}

ftl_err ftl_agent_tcp_listen(ftl_agent *a)
{
	uv_prepare_init(&a->loop, &a->tcp.turn_counter);
	a->tcp.turn_counter.data = a;
	uv_prepare_start(&a->tcp.turn_counter, on_turn);
	uv_unref((uv_handle_t *)&a->tcp.turn_counter); /* counting turns is no reason to keep the loop running */
	a->tcp.stranger_limits = ftl_admit_limits_fitted(FTL_TCP_UNAUTH_CONNS, FTL_TCP_UNAUTH_PER_SOURCE,
							 FTL_TCP_BACKLOG, FTL_TCP_UNAUTH_FD_SHARE);
	uv_tcp_init(&a->loop, &a->tcp.listener);
	a->tcp.listener.data = a;
	int rc = uv_tcp_bind(&a->tcp.listener, (struct sockaddr *)&a->set.bind, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&a->tcp.listener, FTL_TCP_BACKLOG, on_connection);
	if (rc != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "FTL_BIND=%s: cannot listen on TCP: %s", a->cfg.bind,
				    uv_strerror(rc));
	ftl_agent_fork_track((uv_handle_t *)&a->tcp.listener);
	return FTL_OK;
}

static void on_connect(uv_connect_t *req, int status)
{
	pp_conn *c = req->data;
	if (status < 0) {
		ftl_log(&c->a->set.log, FTL_LOG_DEBUG, "transport", FTL_MSG("push-pull with %s: %s", c->peer, uv_strerror(status)),
			FTL_F_STR("peer", c->peer), FTL_F_STR("error", uv_strerror(status)));
		conn_close(c);
		return;
	}
	send_state(c);
	if (!c->is_one_way)
		uv_read_start((uv_stream_t *)&c->conn.tcp, on_alloc, on_read);
}

static void dial(pp_conn *c, const struct sockaddr_storage *to)
{
	c->connect.data = c;
	if (uv_tcp_connect(&c->connect, &c->conn.tcp, (const struct sockaddr *)to, on_connect) != 0)
		conn_close(c);
	else
		ftl_agent_fork_track((uv_handle_t *)&c->conn.tcp);
}

/* An outgoing exchange with addr, or NULL when addr is not a numeric ip:port (or out of memory). */
static pp_conn *outgoing(ftl_agent *a, const char *addr, struct sockaddr_storage *to)
{
	if (ftl_addr_parse_numeric(addr, to) != 0)
		return NULL;
	pp_conn *c = conn_new(a, true);
	if (c)
		snprintf(c->peer, sizeof(c->peer), "%s", addr);
	return c;
}

void ftl_agent_tcp_push_pull(ftl_agent *a, const char *addr, bool is_join)
{
	struct sockaddr_storage to;
	pp_conn *c = outgoing(a, addr, &to);
	if (!c)
		return;
	c->is_join = is_join;
	if (prepare_state(c, is_join) != 0)
		conn_close(c);
	else
		dial(c, &to);
}
