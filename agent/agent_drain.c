/* What the node decided, carried out in one place. The rooms only feed the node (agent_turn.c); once per
 * turn of the loop in which anything was fed, the drain sends the node's datagrams (agent_udp.c), starts its
 * checks and push-pulls, sends its rendezvous frames, hands out its membership events (log, control socket,
 * the embedder's callback, the abort rule) and views, and arms the one timer at its next deadline. The drain
 * calls the rooms; no room calls the drain.
 *
 * When: a check handle, which libuv runs right after the turn's I/O callbacks. A datagram in is answered in
 * the turn it arrived in, as when each handler flushed, and a burst of inputs in one turn (a read of many
 * datagrams, several frames in one TCP read) is drained once. Timers (the node's tick, a check's timeout)
 * and pending callbacks run before the turn's poll, which would then sleep on what they fed until some I/O
 * came; so while the node is fed an idle handle is active, and libuv does not sleep in its poll while one
 * is. The stop drains one last time before the handles close (ftl_agent_drain_pending), so what the node
 * decided in the stop's turn still goes out, as when each handler flushed. */
#include "agent_internal.h"

#include "base/deadline.h"
#include "base/log.h"
#include "witness.h"

/* ---- events ---- */

void ftl_agent_members_changed(ftl_agent *a)
{
	ftl_agent_publish_counts(a);
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
	a->drain.events_seen[ev->type]++;
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

static void has_left(ftl_agent *a)
{
	ftl_agent_publish_left(a);
	ftl_log(&a->set.log, FTL_LOG_INFO, "agent", "left the cluster");
	ftl_agent_control_left(a);
}

/* ---- the drain ---- */

static void on_timer(uv_timer_t *t)
{
	ftl_agent *a = t->data;
	ftl_node_tick(a->node, ftl_agent_now_us(a));
	ftl_agent_fed(a);
}

/* Everything the node has queued since the last drain, carried out. What the drain's own calls feed (none
 * does today) is drained in the next turn. */
static void drain(ftl_agent *a)
{
	a->drain.is_fed = false;
	uv_idle_stop(&a->drain.keep_polling);
	ftl_swim_output out;
	while (ftl_node_next_output(a->node, &out)) {
		if (out.kind == FTL_OUTPUT_PACKET)
			ftl_agent_udp_send(a, &out);
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
	uv_timer_start(&a->drain.timer, on_timer, wait_ms, 0);
}

/* After the turn's I/O callbacks. */
static void on_check(uv_check_t *c) { ftl_agent_drain_pending(c->data); }

void ftl_agent_drain_start(ftl_agent *a)
{
	uv_timer_init(&a->loop, &a->drain.timer);
	a->drain.timer.data = a;
	uv_idle_init(&a->loop, &a->drain.keep_polling);
	uv_check_init(&a->loop, &a->drain.check);
	a->drain.check.data = a;
	uv_check_start(&a->drain.check, on_check);
	/* Neither keeps the loop running: they serve the handles that do. */
	uv_unref((uv_handle_t *)&a->drain.check);
	uv_unref((uv_handle_t *)&a->drain.keep_polling);
}

void ftl_agent_drain_pending(ftl_agent *a)
{
	if (a->drain.is_fed && !a->is_closing)
		drain(a);
}
