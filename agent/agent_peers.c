/* The peer channel's outgoing side for rendezvous traffic: "send this frame to member X". One persistent
 * TCP connection per member, dialled on the first frame and reused for every later one, so a ready or a
 * commit costs one sealed write, not a connect and a close (agent_tcp.c's inbound side keeps reading a
 * connection that carries rendezvous frames).
 *
 * Rules:
 *  - The connection is to the member's gossip address; a member whose address changed is redialled.
 *  - Frames written while the connect is in flight are queued by libuv and go out once it completes.
 *  - Any failure (connect refused or timed out, a write error, anything read, EOF) closes the connection;
 *    the next frame dials again. Frames lost that way are resent by the rendezvous protocol itself.
 *  - At most FTL_PEER_CONNS_MAX connections; the least recently used one is closed to make room. One left
 *    idle for FTL_PEER_IDLE_MS is closed (the receiving side waits longer than that before it gives up).
 *  - A member that dies, leaves or restarts (a new generation) has its connection closed at once.
 *  - Once the agent closes its loop, nothing is dialled: a rendezvous message to a peer then is lost
 *    (the agent is leaving anyway) rather than holding the loop open for a connection's idle time.
 *  - A connection holds at most FTL_PEER_QUEUED_MAX unsent bytes; a frame beyond that is dropped and
 *    counted (counters.peer_frames_dropped). */
#include "agent_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "agent_conn.h"
#include "agent_fork.h"
#include "base/log.h"
#include "channel/seal.h"

#define FTL_PEER_CONNS_MAX 128
#define FTL_PEER_QUEUED_MAX (8u << 20)

typedef struct peer_conn {
	ftl_agent *a;
	ftl_agent_conn conn;           /* on a->peers.conns while open, most recently used first; its timer is the
	                                * connect timeout, then the idle timeout */
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uv_connect_t connect;
	bool is_connected;
	uint8_t read_buf[64];          /* nothing is expected: a read only tells us the other side went away */
} peer_conn;

typedef struct frame_write {
	uv_write_t req;
	peer_conn *p;
	size_t len;
	uint8_t *data;
} frame_write;

#define peer_of(l) ftl_owner_of(l, peer_conn, conn.link)

static void peer_free(ftl_agent_conn *conn) { free(ftl_owner_of(conn, peer_conn, conn)); }

static void peer_close(peer_conn *p) { ftl_agent_conn_close(&p->conn); }

static void on_timer(uv_timer_t *t)
{
	peer_conn *p = t->data;
	if (!p->is_connected)
		ftl_log(&p->a->set.log, FTL_LOG_DEBUG, "transport",
			FTL_MSG("rendezvous connection to %s (%s): connect timed out", p->name, p->addr),
			FTL_F_STR("peer", p->name), FTL_F_STR("addr", p->addr));
	peer_close(p);
}

static void on_read_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	peer_conn *p = h->data;
	*buf = uv_buf_init((char *)p->read_buf, sizeof(p->read_buf));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	if (n != 0) /* EOF, an error, or bytes no rendezvous stream carries: start afresh next time */
		peer_close(s->data);
}

static void on_connect(uv_connect_t *req, int status)
{
	peer_conn *p = req->data;
	if (status < 0) {
		ftl_log(&p->a->set.log, FTL_LOG_DEBUG, "transport",
			FTL_MSG("rendezvous connection to %s (%s): %s", p->name, p->addr, uv_strerror(status)),
			FTL_F_STR("peer", p->name), FTL_F_STR("addr", p->addr), FTL_F_STR("error", uv_strerror(status)));
		peer_close(p);
		return;
	}
	if (p->conn.is_closing)
		return;
	p->is_connected = true;
	uv_timer_start(&p->conn.timer, on_timer, FTL_PEER_IDLE_MS, 0);
	if (uv_read_start((uv_stream_t *)&p->conn.tcp, on_read_alloc, on_read) != 0)
		peer_close(p);
}

static void on_written(uv_write_t *req, int status)
{
	frame_write *w = req->data;
	if (status < 0 && status != UV_ECANCELED)
		peer_close(w->p);
	free(w->data);
	free(w);
}

static void close_least_recent(ftl_agent *a)
{
	int n = 0;
	for (ftl_list_link *l = a->peers.conns.first; l; l = l->next)
		n++;
	if (n >= FTL_PEER_CONNS_MAX)
		peer_close(peer_of(a->peers.conns.last));
}

static peer_conn *dial(ftl_agent *a, const char *name, const char *addr)
{
	struct sockaddr_storage to;
	if (ftl_addr_parse_numeric(addr, &to) != 0)
		return NULL;
	close_least_recent(a);
	peer_conn *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	a->peers.dials++;
	p->a = a;
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	ftl_agent_conn_init(&p->conn, &a->loop, &a->peers.conns, p, peer_free);
	p->connect.data = p;
	uv_tcp_nodelay(&p->conn.tcp, 1);
	uv_timer_start(&p->conn.timer, on_timer, FTL_TCP_TIMEOUT_MS, 0);
	if (uv_tcp_connect(&p->connect, &p->conn.tcp, (const struct sockaddr *)&to, on_connect) != 0) {
		peer_close(p);
		return NULL;
	}
	ftl_agent_fork_track((uv_handle_t *)&p->conn.tcp);
	return p;
}

static peer_conn *find(ftl_agent *a, const char *name)
{
	for (ftl_list_link *l = a->peers.conns.first; l; l = l->next)
		if (strcmp(peer_of(l)->name, name) == 0)
			return peer_of(l);
	return NULL;
}

/* p moves to the front of the list: the list is in order of use. */
static void touch(peer_conn *p)
{
	ftl_list_unlink(&p->a->peers.conns, &p->conn.link);
	ftl_list_push_front(&p->a->peers.conns, &p->conn.link);
	if (p->is_connected)
		uv_timer_start(&p->conn.timer, on_timer, FTL_PEER_IDLE_MS, 0);
}

void ftl_agent_peer_send(ftl_agent *a, const char *name, const uint8_t *plain, size_t len)
{
	ftl_node_member m;
	if (!ftl_node_find_member(a->node, name, &m) || a->is_closing) /* a connection opened now would keep the
									* closing loop alive */
		return;
	peer_conn *p = find(a, name);
	if (p && strcmp(p->addr, m.addr) != 0) {
		peer_close(p);
		p = NULL;
	}
	if (!p && !(p = dial(a, name, m.addr)))
		return;
	touch(p);
	if (uv_stream_get_write_queue_size((uv_stream_t *)&p->conn.tcp) > FTL_PEER_QUEUED_MAX) {
		a->peers.frames_dropped++;
		return;
	}
	frame_write *w = calloc(1, sizeof(*w));
	if (!w || ftl_seal_frame(a->keyring, FTL_FRAME_RENDEZVOUS, plain, len, &w->data, &w->len) != 0) {
		free(w);
		return;
	}
	w->p = p;
	w->req.data = w;
	uv_buf_t buf = uv_buf_init((char *)w->data, (unsigned)w->len);
	if (uv_write(&w->req, (uv_stream_t *)&p->conn.tcp, &buf, 1, on_written) != 0) {
		free(w->data);
		free(w);
		peer_close(p);
		return;
	}
	a->peers.frames_sent++;
}

void ftl_agent_peer_forget(ftl_agent *a, const char *name)
{
	peer_conn *p = find(a, name);
	if (p)
		peer_close(p);
}

void ftl_agent_peers_close_all(ftl_agent *a)
{
	ftl_agent_conn_close_all(&a->peers.conns);
}
