/* The /metrics text from a snapshot (the format and why a snapshot: metrics.h). Every family is written
 * by the writers of metrics_text.h, so HELP and TYPE lines and label escaping exist once. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "gossip_counters.h"

/* ---- the snapshot (loop thread) ---- */

void ftl_metrics_snapshot_take(ftl_agent *a, ftl_metrics_snapshot *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", a->cfg.name);
	snprintf(out->cluster, sizeof(out->cluster), "%s", a->cfg.cluster);
	ftl_node_snapshot snap;
	ftl_node_read(a->node, &snap);
	for (int s = 0; s < FTL_MEMBER_STATE_MAX; s++)
		out->members[s] = snap.count[s];
	out->swim = *snap.stats;
	out->keyring = *ftl_keyring_get_stats(a->keyring);
	memcpy(out->events, a->drain.events_seen, sizeof(out->events));
	out->health = snap.health;
	out->tcp_timeouts = a->tcp.timeouts;
	out->control_followers_dropped = ftl_control_followers_dropped(a->control.server);
	memcpy(out->http_dropped, a->metrics.http_dropped, sizeof(out->http_dropped));
	memcpy(out->tcp_dropped, a->tcp.dropped, sizeof(out->tcp_dropped));
	out->is_training = a->training.is_on;
	if (!a->training.is_on)
		return;
	const ftl_agent_views *v = &a->shared.views;
	pthread_mutex_lock(&a->shared.lock);
	out->view_epoch = v->view.epoch;
	out->rank = v->view.seq ? v->view.self_rank : -1;
	out->world_size = v->view.n;
	out->phase = v->phase;
	pthread_mutex_unlock(&a->shared.lock);
	a->training.ops->metrics(a, &out->training);
}

void ftl_metrics_snapshot_free(ftl_metrics_snapshot *s)
{
	free(s->training.buf);
	s->training = (ftl_metrics_text){0};
}

/* ---- the text ---- */

static void membership(ftl_metrics_text *t, const ftl_metrics_snapshot *s)
{
	ftl_metrics_family(t, "ftl_agent_info", "gauge", "This agent's name and cluster (always 1).");
	ftl_metrics_put(t, "ftl_agent_info{cluster=");
	ftl_metrics_label_value(t, s->cluster);
	ftl_metrics_put(t, ",name=");
	ftl_metrics_label_value(t, s->name);
	ftl_metrics_put(t, "} 1\n");
	ftl_metrics_per_label(t, "ftl_members", "gauge", "Members by state, as this agent sees them (itself included).",
			      "state", ftl_member_state_strs, s->members, FTL_MEMBER_STATE_MAX);
	ftl_gossip_counters_metrics(t, &s->swim);
	ftl_metrics_per_label(t, "ftl_gossip_messages_sent_total", "counter", "Primary gossip messages sent, by type.",
			      "type", ftl_msg_type_strs, s->swim.sent, FTL_MSG_TYPE_MAX);
	ftl_metrics_per_label(t, "ftl_gossip_messages_received_total", "counter",
			      "Gossip messages received (piggybacked included), by type.", "type", ftl_msg_type_strs,
			      s->swim.received, FTL_MSG_TYPE_MAX);
	ftl_metrics_per_label(t, "ftl_gossip_dropped_total", "counter", "Gossip messages dropped, by reason.", "reason",
			      ftl_swim_drop_strs, s->swim.dropped, FTL_DROP_MAX);
	ftl_metrics_per_label(t, "ftl_gossip_undecryptable_total", "counter",
			      "Packets the keyring could not open, by reason (wrong key, tampered, plaintext).",
			      "reason", ftl_keyring_drop_strs, s->keyring.dropped, FTL_KEYRING_DROP_MAX);
	ftl_metrics_single(t, "ftl_gossip_tcp_timeouts_total", "counter", "Push-pull TCP exchanges that timed out.",
			   (double)s->tcp_timeouts);
	ftl_metrics_single(t, "ftl_control_followers_dropped_total", "counter",
			   "`events --follow` clients dropped for falling 1024 events behind.",
			   (double)s->control_followers_dropped);
	ftl_metrics_per_label(t, "ftl_gossip_tcp_dropped_total", "counter",
			      "Gossip-port TCP connections dropped, by reason (too_many: the oldest unauthenticated, "
			      "for a newcomer).",
			      "reason", ftl_tcp_drop_strs, s->tcp_dropped, FTL_TCP_DROP_MAX);
	ftl_metrics_per_label(t, "ftl_metrics_http_dropped_total", "counter",
			      "/metrics connections closed before their request was complete, by reason.", "reason",
			      ftl_http_drop_strs, s->http_dropped, FTL_HTTP_DROP_MAX);
	ftl_metrics_single(t, "ftl_gossip_health_score", "gauge",
			   "Lifeguard local health: 0 is healthy, higher stretches probes.", (double)s->health);
	ftl_metrics_per_label(t, "ftl_membership_events_total", "counter",
			      "Membership changes seen here, by type (suspect: suspicions raised; alive: refuted).",
			      "type", ftl_swim_event_type_strs, s->events, FTL_EVENT_TYPE_MAX);
	ftl_metrics_per_label(t, "ftl_membership_deaths_total", "counter", "Deaths declared or accepted here, by path.",
			      "reason", ftl_death_reason_strs, s->swim.deaths_declared, FTL_DEATH_REASON_MAX);
}

static void view(ftl_metrics_text *t, const ftl_metrics_snapshot *s)
{
	ftl_metrics_single(t, "ftl_view_epoch", "gauge", "Epoch of the newest view this worker knows of (0: none).",
			   (double)s->view_epoch);
	ftl_metrics_single(t, "ftl_view_world_size", "gauge", "Members of the newest view.", (double)s->world_size);
	ftl_metrics_single(t, "ftl_view_rank", "gauge", "This worker's rank in the newest view (-1: not a member).",
			   (double)s->rank);
	uint64_t is_phase[FTL_RDV_PHASE_MAX] = {0};
	is_phase[s->phase] = 1;
	ftl_metrics_per_label(t, "ftl_view_phase", "gauge",
			      "The rendezvous phase: 1 for the current one, 0 for the others.", "phase",
			      ftl_rdv_phase_strs, is_phase, FTL_RDV_PHASE_MAX);
}

char *ftl_metrics_render(const ftl_metrics_snapshot *s, size_t *len)
{
	ftl_metrics_text t;
	if (ftl_metrics_text_create(&t, 16384) != 0)
		return NULL;
	membership(&t, s);
	if (s->is_training)
		view(&t, s);
	if (s->training.buf)
		ftl_metrics_put(&t, "%s", s->training.buf);
	t.is_oom |= s->training.is_oom;
	if (t.is_oom) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf;
}
