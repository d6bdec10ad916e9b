/* GET /metrics over HTTP/1.1, served by the agent's own libuv loop.
 *
 * Why not an HTTP library: the only client is a Prometheus scraper asking for one path, the loop and its
 * TCP handling are already here, and a dependency (libmicrohttpd) would bring its own threads into every
 * process that embeds the agent. So this file answers exactly one request per connection and closes it:
 * GET /metrics gives 200 with the text of metrics.c, another path 404, another method 405, a request line
 * that does not parse 400, a request whose head does not end within REQUEST_MAX bytes 413. After a reply
 * the write side is shut down and what the client still sends is read and discarded for LINGER_MS, so that
 * it reads the reply instead of a reset.
 *
 * Slowloris: a scraper sends its whole request at once, so a connection whose head has not ended within
 * HEAD_TIMEOUT_MS is closed, and at most MAX_READING connections (MAX_READING_PER_SOURCE from one address)
 * may be reading a head at once. A newcomer over the cap is always let in and the slowest goes: the one
 * that has been reading its head longest (admission.h). Connections trickling a byte a second thus
 * churn among themselves while a scrape, the newest for the moment it needs, is answered. Lingering
 * connections are capped the same way (MAX_LINGERING, the oldest goes), so descriptors and memory stay
 * bounded whatever clients do. Closures before an answer are counted by reason
 * (ftl_metrics_http_dropped_total).
 *
 * "The newest for the moment it needs" counts from the first byte, not the connect: the listener defers
 * accepting a connection until its first data arrives (TCP_DEFER_ACCEPT, as web servers do), so a scraper
 * descheduled between its connect and its write, while the flood turns the loop many times, is not the
 * oldest reader by then; and a connection that never sends costs us no descriptor at all. */
#include "metrics.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/addr.h"
#include "agent_conn.h"
#include "agent_fork.h"
#include "agent_internal.h"
#include "base/log.h"

#define REQUEST_MAX 8192
#define HEAD_TIMEOUT_MS 1000
#define LINGER_MS 1000
#define MAX_READING 128
#define MAX_READING_PER_SOURCE 16
#define MAX_LINGERING 64
#define BACKLOG 1024             /* connections the kernel holds for us until accepted */
#define READING_FD_SHARE 8       /* readers take at most an eighth of the descriptor limit ... */
#define LINGERING_FD_SHARE 16    /* ... and lingering ones a sixteenth */
#define HEAD_FORMAT "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n"

const char *const ftl_http_drop_strs[FTL_HTTP_DROP_MAX] = {"evicted", "timeout"};

typedef struct http_conn {
	ftl_admit_entry queued;          /* in srv->reading until the reply, then in srv->lingering */
	ftl_agent_conn conn;             /* its timer: the request deadline, then the linger after the reply */
	uv_write_t write;
	uv_shutdown_t shutdown;
	struct ftl_metrics_http *srv;
	bool is_replied;                 /* from then on, input is discarded */
	char *reply;
	size_t len;
	char req[REQUEST_MAX];           /* the request head; after the reply, input to discard */
} http_conn;

typedef struct ftl_metrics_http {
	uv_tcp_t listener;
	ftl_agent *agent;
	ftl_admit_queue reading;         /* connections whose request head is not complete yet, oldest first */
	ftl_admit_queue lingering;       /* answered, discarding what follows, oldest first */
	ftl_admit_limits reading_limits, lingering_limits; /* fitted to the descriptor limit at start */
	bool is_accept_waiting;          /* libuv holds a connection we accept at the next turn */
} ftl_metrics_http;

#define conn_of(entry) ftl_owner_of(entry, http_conn, queued)

/* ---- closing ---- */

static void conn_free(ftl_agent_conn *conn)
{
	http_conn *c = ftl_owner_of(conn, http_conn, conn);
	free(c->reply);
	free(c);
}

static void conn_close(http_conn *c)
{
	ftl_admit_remove(c->is_replied ? &c->srv->lingering : &c->srv->reading, &c->queued);
	ftl_agent_conn_close(&c->conn);
}

/* c goes before its request was complete. */
static void drop(http_conn *c, ftl_http_drop why)
{
	c->srv->agent->metrics.http_dropped[why]++;
	conn_close(c);
}

static void on_timeout(uv_timer_t *t)
{
	http_conn *c = t->data;
	if (c->is_replied)
		conn_close(c);
	else
		drop(c, FTL_HTTP_DROP_TIMEOUT);
}

/* ---- the reply ---- */

static void on_shutdown(uv_shutdown_t *req, int status) {}

static void on_written(uv_write_t *req, int status)
{
	http_conn *c = req->data;
	if (status != 0 || c->conn.is_closing) {
		conn_close(c);
		return;
	}
	c->shutdown.data = c;
	if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->conn.tcp, on_shutdown) != 0)
		conn_close(c);
	else
		uv_timer_start(&c->conn.timer, on_timeout, LINGER_MS, 0);
}

/* c moves from the readers to the lingering, where the oldest over MAX_LINGERING goes. */
static void start_lingering(http_conn *c)
{
	ftl_metrics_http *srv = c->srv;
	ftl_admit_remove(&srv->reading, &c->queued);
	c->is_replied = true;
	ftl_admit_entry *oldest;
	/* answered connections may go at any turn: as if the newcomer came long after them */
	while ((oldest = ftl_admit_victim(&srv->lingering, NULL, &srv->lingering_limits, UINT64_MAX)))
		conn_close(conn_of(oldest));
	ftl_admit_push(&srv->lingering, &c->queued, NULL, 0);
}

static void reply(http_conn *c, const char *status, const char *extra_headers, const char *body, size_t body_len,
		  const char *content_type)
{
	start_lingering(c);
	int head = snprintf(NULL, 0, HEAD_FORMAT, status, content_type, body_len, extra_headers);
	c->reply = malloc((size_t)head + body_len + 1);
	if (!c->reply) {
		conn_close(c);
		return;
	}
	snprintf(c->reply, (size_t)head + 1, HEAD_FORMAT, status, content_type, body_len, extra_headers);
	memcpy(c->reply + head, body, body_len);
	uv_buf_t buf = uv_buf_init(c->reply, (unsigned)((size_t)head + body_len));
	c->write.data = c;
	if (uv_write(&c->write, (uv_stream_t *)&c->conn.tcp, &buf, 1, on_written) != 0)
		conn_close(c);
}

static void reply_error(http_conn *c, const char *status, const char *extra_headers, const char *why)
{
	reply(c, status, extra_headers, why, strlen(why), "text/plain; charset=utf-8");
}

static void reply_metrics(http_conn *c)
{
	ftl_metrics_snapshot snap;
	ftl_metrics_snapshot_take(c->srv->agent, &snap);
	size_t len;
	char *text = ftl_metrics_render(&snap, &len);
	ftl_metrics_snapshot_free(&snap);
	if (!text) {
		reply_error(c, "500 Internal Server Error", "", "out of memory\n");
		return;
	}
	reply(c, "200 OK", "", text, len, "text/plain; version=0.0.4; charset=utf-8");
	free(text);
}

/* The head is complete (c->req up to the blank line): answers from its request line. */
static void answer(http_conn *c)
{
	char method[16], target[256], version[16];
	char line[512];
	size_t n = strcspn(c->req, "\r\n");
	if (n >= sizeof(line)) {
		reply_error(c, "400 Bad Request", "", "request line too long\n");
		return;
	}
	memcpy(line, c->req, n);
	line[n] = 0;
	char tail;
	if (sscanf(line, "%15s %255s %15s%c", method, target, version, &tail) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
		reply_error(c, "400 Bad Request", "", "expected a request line such as: GET /metrics HTTP/1.1\n");
		return;
	}
	if (strcmp(method, "GET") != 0) {
		reply_error(c, "405 Method Not Allowed", "Allow: GET\r\n", "only GET is served\n");
		return;
	}
	target[strcspn(target, "?")] = 0; /* a scraper may add parameters; there are none to honour */
	if (strcmp(target, "/metrics") != 0) {
		reply_error(c, "404 Not Found", "", "only /metrics is served here\n");
		return;
	}
	reply_metrics(c);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	http_conn *c = h->data;
	if (c->is_replied) /* the request is answered: its buffer takes what follows, to be discarded */
		*buf = uv_buf_init(c->req, sizeof(c->req));
	else
		*buf = uv_buf_init(c->req + c->len, (unsigned)(REQUEST_MAX - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	http_conn *c = s->data;
	if (n < 0) {
		conn_close(c);
		return;
	}
	if (c->is_replied || n == 0)
		return;
	c->len += (size_t)n;
	c->req[c->len] = 0;
	if (memchr(c->req, 0, c->len))
		reply_error(c, "400 Bad Request", "", "NUL byte in the request\n");
	else if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n"))
		answer(c);
	else if (c->len == REQUEST_MAX - 1)
		reply_error(c, "413 Payload Too Large", "", "request head too large\n");
}

/* c, just accepted, is let in as the newest reader; the slowest over a cap go to make room. */
static void admit(http_conn *c)
{
	ftl_metrics_http *srv = c->srv;
	uint64_t turn = srv->agent->tcp.loop_turns;
	struct sockaddr_storage peer;
	int len = sizeof(peer);
	const struct sockaddr *from = NULL;
	if (uv_tcp_getpeername(&c->conn.tcp, (struct sockaddr *)&peer, &len) == 0)
		from = (const struct sockaddr *)&peer;
	ftl_admit_entry *slowest;
	while ((slowest = ftl_admit_victim(&srv->reading, from, &srv->reading_limits, turn)))
		drop(conn_of(slowest), FTL_HTTP_DROP_EVICTED);
	ftl_admit_push(&srv->reading, &c->queued, from, turn);
}

static void accept_one(ftl_metrics_http *srv)
{
	http_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->srv = srv;
	ftl_agent_conn_init(&c->conn, srv->listener.loop, NULL, c, conn_free);
	if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->conn.tcp) != 0) {
		conn_close(c);
		return;
	}
	admit(c);
	ftl_agent_fork_track((uv_handle_t *)&c->conn.tcp);
	uv_timer_start(&c->conn.timer, on_timeout, HEAD_TIMEOUT_MS, 0);
	if (uv_read_start((uv_stream_t *)&c->conn.tcp, on_alloc, on_read) != 0)
		conn_close(c);
}

static bool must_wait(const ftl_metrics_http *srv)
{
	return ftl_admit_must_wait(&srv->reading, &srv->reading_limits, srv->agent->tcp.loop_turns);
}

static void on_connection(uv_stream_t *listener, int status)
{
	ftl_metrics_http *srv = listener->data;
	if (status != 0) {
		/* Out of descriptors (EMFILE): libuv has refused those waiting; the slowest reader makes room so
		 * that the next one is accepted. Accepting goes on either way. */
		ftl_admit_entry *oldest = ftl_admit_oldest(&srv->reading);
		if (oldest)
			drop(conn_of(oldest), FTL_HTTP_DROP_EVICTED);
		return;
	}
	/* Too many readers too young to push out: libuv holds this one and stops listening until the next
	 * turn accepts it (admission.h). */
	srv->is_accept_waiting = must_wait(srv);
	if (!srv->is_accept_waiting)
		accept_one(srv);
}

void ftl_metrics_http_turn(ftl_agent *a)
{
	ftl_metrics_http *srv = a->metrics.http;
	if (srv && srv->is_accept_waiting && !must_wait(srv)) {
		srv->is_accept_waiting = false;
		accept_one(srv);
	}
}

/* ---- the listener ---- */

/* Connections are accepted once their first bytes have arrived (the file's head comment). Where the kernel
 * cannot, connections are accepted at connect as before, and the log says so. */
static void defer_accept_until_data(ftl_metrics_http *srv)
{
	const char *why = "TCP_DEFER_ACCEPT is not offered here";
#ifdef TCP_DEFER_ACCEPT
	uv_os_fd_t fd;
	int seconds = (HEAD_TIMEOUT_MS + 999) / 1000;
	if (uv_fileno((uv_handle_t *)&srv->listener, &fd) == 0 &&
	    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof(seconds)) == 0)
		return;
	why = "setting TCP_DEFER_ACCEPT failed";
#endif
	ftl_log(&srv->agent->set.log, FTL_LOG_WARN, "metrics",
		"connections are accepted before they send: a scrape slow to write may lose its place under a flood",
		FTL_F_STR("why", why));
}

ftl_err ftl_metrics_http_start(ftl_agent *a)
{
	if (!a->cfg.metrics_addr[0])
		return FTL_OK;
	ftl_metrics_http *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return ftl_diag_set(FTL_ERR_SYSTEM, "FTL_METRICS_ADDR=%s: out of memory", a->cfg.metrics_addr);
	srv->agent = a;
	srv->reading_limits = ftl_admit_limits_fitted(MAX_READING, MAX_READING_PER_SOURCE, BACKLOG, READING_FD_SHARE);
	srv->lingering_limits = ftl_admit_limits_fitted(MAX_LINGERING, 0, 0, LINGERING_FD_SHARE);
	uv_tcp_init(&a->loop, &srv->listener);
	srv->listener.data = srv;
	a->metrics.http = srv;
	int rc = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&a->set.metrics, 0);
	if (rc == 0)
		defer_accept_until_data(srv);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&srv->listener, BACKLOG, on_connection);
	if (rc != 0) /* the caller closes every handle, this listener included */
		return ftl_diag_set(FTL_ERR_SYSTEM, "FTL_METRICS_ADDR=%s: cannot listen: %s", a->cfg.metrics_addr,
				    uv_strerror(rc));
	ftl_agent_fork_track((uv_handle_t *)&srv->listener);
	ftl_log(&a->set.log, FTL_LOG_INFO, "metrics", "serving GET /metrics (Prometheus text format)",
		FTL_F_STR("addr", a->cfg.metrics_addr));
	return 0;
}

static void on_listener_closed(uv_handle_t *h) { free(h->data); }

void ftl_metrics_http_close(ftl_agent *a)
{
	ftl_metrics_http *srv = a->metrics.http;
	if (!srv)
		return;
	a->metrics.http = NULL;
	for (ftl_admit_entry *e; (e = ftl_admit_oldest(&srv->reading));)
		conn_close(conn_of(e));
	for (ftl_admit_entry *e; (e = ftl_admit_oldest(&srv->lingering));)
		conn_close(conn_of(e));
	ftl_agent_fork_untrack((uv_handle_t *)&srv->listener);
	uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
}
