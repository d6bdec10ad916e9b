/* What the node decided, carried out: after every input (a datagram, a frame, a tick, a request), the
 * agent's files call ftl_agent_flush, which sends the node's datagrams (sealed by channel/seal.h), starts
 * its checks and push-pulls, sends its rendezvous frames, hands out its membership events (log, control
 * socket, the embedder's callback, the abort rule) and views, and arms the one timer at its next deadline.
 * With the clock the node is given (uv_hrtime), this is the floor the agent's satellites stand on. */
#include "agent_internal.h"

#include <stdlib.h>

#include "base/addr.h"
#include "base/log.h"
#include "channel/seal.h"
#include "witness.h"

int64_t ftl_agent_now_us(ftl_agent *a) { return (int64_t)(uv_hrtime() / 1000); }

/* ---- sending ---- */

typedef struct udp_send {
	uv_udp_send_t req;
	ftl_agent *a;
	size_t len;
	uint8_t data[];
} udp_send;

static void on_udp_sent(uv_udp_send_t *req, int status)
{
	udp_send *s = req->data;
	if (status < 0)
		ftl_log(&s->a->set.log, FTL_LOG_DEBUG, "transport", FTL_MSG("udp send failed: %s", uv_strerror(status)),
			FTL_F_STR("error", uv_strerror(status)));
	free(s);
}

static void send_datagram(ftl_agent *a, const ftl_swim_output *out)
{
	struct sockaddr_storage to;
	if (ftl_addr_parse_numeric(out->to_addr, &to) != 0) {
		ftl_log(&a->set.log, FTL_LOG_WARN, "transport", FTL_MSG("cannot send to %s: not a numeric address", out->to_addr),
			FTL_F_STR("to", out->to_addr));
		return;
	}
	udp_send *s = malloc(sizeof(*s) + FTL_UDP_PACKET_MAX);
	if (!s)
		return;
	s->req.data = s;
	s->a = a;
	if (ftl_seal_datagram(a->keyring, out->data, out->len, s->data, &s->len) != 0) {
		free(s);
		return;
	}
	uv_buf_t buf = uv_buf_init((char *)s->data, (unsigned)s->len);
	int rc = uv_udp_send(&s->req, &a->udp, &buf, 1, (struct sockaddr *)&to, on_udp_sent);
	if (rc < 0) {
		ftl_log(&a->set.log, FTL_LOG_DEBUG, "transport", FTL_MSG("udp send to %s: %s", out->to_addr, uv_strerror(rc)),
			FTL_F_STR("to", out->to_addr), FTL_F_STR("error", uv_strerror(rc)));
		free(s);
	}
}

/* ---- events ---- */

void ftl_agent_members_changed(ftl_agent *a)
{
	ftl_node_snapshot snap;
	ftl_node_read(a->node, &snap);
	pthread_mutex_lock(&a->lock);
	a->counts.alive = snap.count[FTL_MEMBER_ALIVE];
	a->counts.suspect = snap.count[FTL_MEMBER_SUSPECT];
	a->counts.dead = snap.count[FTL_MEMBER_DEAD];
	a->counts.left = snap.count[FTL_MEMBER_LEFT];
	pthread_cond_broadcast(&a->changed);
	pthread_mutex_unlock(&a->lock);
	ftl_witness_update_from_node(a->witness, a->node);
}

/* A membership event: logged, published, and, when the node's abort rule says so, the end of the
 * communicator in use. */
static void hand_out(ftl_agent *a, const ftl_node_event *nev)
{
	const ftl_swim_event *ev = &nev->member;
	if (ev->type == FTL_EVENT_NAME_REFUSED || ev->type == FTL_EVENT_NAME_TAKEN)
		ftl_agent_name_event(a, ev);
	else if (ev->type == FTL_EVENT_DEAD)
		ftl_log(&a->set.log, FTL_LOG_WARN, "membership", "member dead", FTL_F_STR("member", ev->name),
			FTL_F_STR("addr", ev->addr), FTL_F_UINT("generation", ev->generation),
			FTL_F_UINT("incarnation", ev->incarnation), FTL_F_STR("reason", ftl_death_reason_strs[ev->reason]),
			FTL_F_STR("from", ev->from));
	else
		ftl_log(&a->set.log, FTL_LOG_INFO, "membership", FTL_MSG("member %s", ftl_swim_event_type_strs[ev->type]),
			FTL_F_STR("member", ev->name), FTL_F_STR("addr", ev->addr), FTL_F_UINT("generation", ev->generation),
			FTL_F_UINT("incarnation", ev->incarnation));
	ftl_agent_control_event(a, ev);
	a->events_seen[ev->type]++;
	if (nev->is_abort)
		ftl_agent_rdv_member_gone(a, nev->why);
	if (ev->type == FTL_EVENT_DEAD || ev->type == FTL_EVENT_LEFT || ev->type == FTL_EVENT_JOIN)
		ftl_agent_peer_forget(a, ev->name);
	_Static_assert((int)FTL_AGENT_EVENT_TYPE_MAX == (int)FTL_EVENT_TYPE_MAX && (int)FTL_AGENT_NAME_TAKEN ==
			       (int)FTL_EVENT_NAME_TAKEN && (int)FTL_AGENT_JOIN == (int)FTL_EVENT_JOIN,
		       "ftl_agent_event_type (ftl/agent.h) is cast from ftl_swim_event_type: the two lists must match");
	if (a->event_cb) {
		ftl_agent_event out = {
			.type = (ftl_agent_event_type)ev->type,
			.type_name = ftl_swim_event_type_strs[ev->type],
			.name = ev->name,
			.addr = ev->addr,
			.generation = ev->generation,
			.incarnation = ev->incarnation,
			.reason = ftl_death_reason_strs[ev->reason],
			.from = ev->from,
			.holder_addr = ev->holder_addr,
		};
		a->event_cb(a->event_ctx, &out);
	}
}

/* ---- the timer ---- */

static void on_timer(uv_timer_t *t)
{
	ftl_agent *a = t->data;
	ftl_node_tick(a->node, ftl_agent_now_us(a));
	ftl_agent_flush(a);
}

static void has_left(ftl_agent *a)
{
	pthread_mutex_lock(&a->lock);
	a->has_left = true;
	pthread_cond_broadcast(&a->changed);
	pthread_mutex_unlock(&a->lock);
	ftl_log(&a->set.log, FTL_LOG_INFO, "agent", "left the cluster");
	ftl_agent_control_left(a);
}

void ftl_agent_flush(ftl_agent *a)
{
	if (a->is_closing)
		return; /* a close callback must not open a connection the stopping loop would wait for */
	ftl_swim_output out;
	while (ftl_node_next_output(a->node, &out)) {
		if (out.kind == FTL_OUTPUT_PACKET)
			send_datagram(a, &out);
		else if (out.kind == FTL_OUTPUT_CHECK)
			ftl_agent_check(a, &out);
		else
			ftl_agent_tcp_push_pull(a, out.to_addr, out.is_join);
	}
	ftl_node_frame frame;
	while (ftl_node_next_frame(a->node, &frame)) {
		ftl_agent_rdv_send(a, &frame);
		ftl_node_frame_free(&frame);
	}
	ftl_node_event ev;
	bool is_changed = false;
	while (ftl_node_next_event(a->node, &ev)) {
		if (ev.kind == FTL_NODE_EVENT_MEMBER) {
			hand_out(a, &ev);
			is_changed = true;
		} else if (ev.kind == FTL_NODE_EVENT_VIEW) {
			ftl_agent_rdv_adopt_view(a, ev.why);
		} else {
			has_left(a);
		}
	}
	if (is_changed)
		ftl_agent_members_changed(a);
	ftl_agent_rdv_publish(a);
	uint64_t wait_ms = ftl_deadline_timer_ms(ftl_node_next_deadline(a->node), ftl_agent_now_us(a), 60000);
	uv_timer_start(&a->timer, on_timer, wait_ms, 0);
}
