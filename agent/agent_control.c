/* The agent's answers on the control socket (the protocol is in control.h): status, members, leave,
 * events, scale, quorum-reset and keys (agent_keys.c), built on the loop thread from the node's snapshot
 * (node.h). A request that changes something only feeds the node; the drain carries it out at the end of
 * the turn (agent_drain.c), and a leave is answered when it has gone out (agent_notices.c). */
#include "agent_internal.h"
#include "gossip_counters.h"
#include "witness.h"

#include <string.h>

#include "node/node_meta.h"
#include "base/log.h"

static json_t *member_json(ftl_agent *a, const ftl_node_snapshot *snap, const ftl_node_member *m, int64_t now_us)
{
	if (strcmp(m->name, snap->name) == 0)
		now_us = m->last_heard_us; /* we always hear ourselves */
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "name", m->name, "addr", m->addr, "status",
			      ftl_member_state_strs[m->state], "incarnation", (json_int_t)m->incarnation, "generation",
			      (json_int_t)m->generation, "last_heard_ms", (json_int_t)((now_us - m->last_heard_us) / 1000));
	pthread_mutex_lock(&a->shared.lock);
	int rank = a->training.is_on ? ftl_agent_rank_of(a, m->name) : -1;
	pthread_mutex_unlock(&a->shared.lock);
	json_object_set_new(j, "rank", rank >= 0 ? json_integer(rank) : json_null());
	/* Metadata is opaque bytes; the user's part is shown as text (omitted if it is not UTF-8). */
	ftl_rdv_member training = {0};
	const uint8_t *user;
	size_t user_len;
	ftl_meta_unpack(m->meta, m->meta_len, &training, &user, &user_len);
	if (training.replica_size > 0)
		json_object_set_new(j, "replica", json_pack("{s:s, s:i, s:i}", "name", training.replica, "index",
							     (int)training.replica_index, "size",
							     (int)training.replica_size));
	json_t *meta = json_stringn((const char *)user, user_len);
	if (meta)
		json_object_set_new(j, "meta", meta);
	return j;
}

static json_t *members_json(ftl_agent *a, const ftl_node_snapshot *snap)
{
	json_t *arr = json_array();
	int64_t now = ftl_agent_now_us(a);
	ftl_node_member m;
	for (uint32_t i = 0; ftl_node_member_at(a->node, i, &m); i++)
		json_array_append_new(arr, member_json(a, snap, &m, now));
	return arr;
}

static json_t *counts_by(const uint64_t *values, const char *const *names, int n)
{
	json_t *o = json_object();
	for (int i = 0; i < n; i++)
		json_object_set_new(o, names[i], json_integer((json_int_t)values[i]));
	return o;
}

static json_t *counters_json(ftl_agent *a, const ftl_node_snapshot *snap)
{
	const ftl_swim_stats *st = snap->stats;
	const ftl_keyring_stats *ks = ftl_keyring_get_stats(a->keyring);
	json_t *j = json_pack("{s:o, s:o, s:o, s:o}", "sent", counts_by(st->sent, ftl_msg_type_strs, FTL_MSG_TYPE_MAX),
			      "received", counts_by(st->received, ftl_msg_type_strs, FTL_MSG_TYPE_MAX), "dropped",
			      counts_by(st->dropped, ftl_swim_drop_strs, FTL_DROP_MAX), "keyring_dropped",
			      counts_by(ks->dropped, ftl_keyring_drop_strs, FTL_KEYRING_DROP_MAX));
	ftl_gossip_counters_json(j, st);
	json_object_set_new(j, "tcp_timeouts", json_integer((json_int_t)a->tcp.timeouts));
	json_object_set_new(j, "control_followers_dropped",
			    json_integer((json_int_t)ftl_control_followers_dropped(a->control.server)));
	json_object_set_new(j, "peer_frames_dropped", json_integer((json_int_t)a->peers.frames_dropped));
	json_object_set_new(j, "peer_frames_sent", json_integer((json_int_t)a->peers.frames_sent));
	json_object_set_new(j, "peer_dials", json_integer((json_int_t)a->peers.dials));
	json_object_set_new(j, "tcp_dropped", counts_by(a->tcp.dropped, ftl_tcp_drop_strs, FTL_TCP_DROP_MAX));
	json_object_set_new(j, "metrics_http_dropped",
			    counts_by(a->metrics.http_dropped, ftl_http_drop_strs, FTL_HTTP_DROP_MAX));
	json_object_set_new(j, "witness_watching", json_integer(a->witness ? ftl_witness_watching(a->witness) : 0));
	json_object_set_new(j, "witness_lookups", json_integer(a->witness ? (json_int_t)ftl_witness_lookups(a->witness) : 0));
	/* Deaths by the path that declared them (the proof-of-death checks and the witness: the table's). */
	json_t *deaths = json_object();
	for (int r = FTL_DEATH_NONE + 1; r < FTL_DEATH_REASON_MAX; r++)
		json_object_set_new(deaths, ftl_death_reason_strs[r], json_integer((json_int_t)st->deaths_declared[r]));
	json_object_set_new(j, "deaths", deaths);
	return j;
}

/* The timing in force, and the crash-detection bound it gives at the current size (profile.h). */
static json_t *timing_json(const ftl_node_snapshot *snap)
{
	const ftl_swim_config *c = snap->config;
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "probe_interval_ms", (json_int_t)(c->probe_interval_us / 1000),
			 "probe_timeout_ms", (json_int_t)(c->probe_timeout_us / 1000), "gossip_interval_ms",
			 (json_int_t)(c->gossip_interval_us / 1000), "suspicion_max_ms",
			 (json_int_t)(snap->suspicion_max_us / 1000), "detection_bound_ms",
			 (json_int_t)(snap->detection_bound_us / 1000));
}

static json_t *self_json(ftl_agent *a, const ftl_node_snapshot *snap)
{
	return json_pack("{s:s, s:s, s:I, s:I}", "name", snap->name, "addr", a->set.advertise, "generation",
			 (json_int_t)snap->generation, "incarnation", (json_int_t)snap->incarnation);
}

json_t *ftl_agent_status_json(ftl_agent *a)
{
	ftl_node_snapshot snap;
	ftl_node_read(a->node, &snap);
	json_t *j = json_pack("{s:b, s:s, s:s}", "ok", 1, "cluster", a->cfg.cluster, "profile", a->cfg.profile);
	json_object_set_new(j, "self", self_json(a, &snap));
	json_object_set_new(j, "view", ftl_agent_rdv_status(a));
	json_object_set_new(j, "health", json_integer(snap.health));
	json_t *counts = json_object();
	for (int state = 0; state < FTL_MEMBER_STATE_MAX; state++)
		json_object_set_new(counts, ftl_member_state_strs[state], json_integer(snap.count[state]));
	json_object_set_new(j, "counts", counts);
	json_object_set_new(j, "members", members_json(a, &snap));
	json_object_set_new(j, "counters", counters_json(a, &snap));
	json_object_set_new(j, "timing", timing_json(&snap));
	if (a->training.is_on) {
		a->training.ops->status(a, j);
	} else {
		json_object_set_new(j, "checkpoint", json_null());
		json_object_set_new(j, "execute", json_null());
	}
	return j;
}

json_t *ftl_agent_control_handle(void *ctx, ftl_control_client *client, const json_t *req, bool *is_stream)
{
	ftl_agent *a = ctx;
	const char *cmd = json_string_value(json_object_get(req, "cmd"));
	if (!cmd)
		return ftl_control_refusal("request needs \"cmd\": status, members, leave, events, keys, scale or quorum-reset");
	if (strcmp(cmd, "status") == 0)
		return ftl_agent_status_json(a);
	if (strcmp(cmd, "members") == 0) {
		ftl_node_snapshot snap;
		ftl_node_read(a->node, &snap);
		return json_pack("{s:b, s:o}", "ok", 1, "members", members_json(a, &snap));
	}
	if (strcmp(cmd, "events") == 0) {
		*is_stream = true;
		return ftl_control_ok();
	}
	if (strcmp(cmd, "keys") == 0)
		return ftl_agent_keys_json(a, req);
	if (strcmp(cmd, "scale") == 0) {
		const json_t *given = json_object_get(req, "max");
		json_int_t max = json_integer_value(given);
		if (!json_is_integer(given) || max < 1 || max > FTL_RDV_MAX_MEMBERS)
			return ftl_control_refusal("scale needs \"max\": the job's new maximum, 1 to 4096 workers");
		if (ftl_agent_rdv_request_max(a, (uint32_t)max) != FTL_OK)
			return ftl_control_refusal(ftl_diag_message());
		return ftl_control_ok();
	}
	if (strcmp(cmd, "quorum-reset") == 0) {
		if (ftl_agent_rdv_waive_quorum(a) != FTL_OK)
			return ftl_control_refusal(ftl_diag_message());
		return ftl_control_ok();
	}
	if (strcmp(cmd, "leave") == 0) {
		ftl_node_snapshot snap;
		ftl_node_read(a->node, &snap);
		if (snap.is_leave_done)
			return ftl_control_ok();
		if (!ftl_agent_control_hold_leave(a, client)) /* answered by ftl_agent_control_left */
			return ftl_control_refusal("too many leave requests waiting; try again in a moment");
		ftl_log(&a->set.log, FTL_LOG_INFO, "agent", "leaving the cluster (requested over the control socket)");
		ftl_node_leave(a->node, ftl_agent_now_us(a));
		ftl_agent_fed(a);
		return NULL;
	}
	return ftl_control_refusal("unknown cmd: expected status, members, leave, events, keys, scale or quorum-reset");
}
