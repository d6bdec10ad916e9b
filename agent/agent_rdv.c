/* The rendezvous side of the node, on the agent's loop thread: the node (node/node.h) decides, this file
 * carries it out. It sends the node's plaintext frames to their member over the persistent peer connections
 * (agent_peers.c; channel/seal.h seals them), hands the node the frames the channel opened, and hands every
 * view the node takes to the training thread, including views this worker is not in (a spare, or a minority
 * side catching up after a heal): the training thread must never go on building the communicator of a view
 * the cluster has left behind. When the node's abort rule fires (a member of the view in use is gone, or a
 * new view was taken) it aborts the communicator through the training layer's hook (agent_training.h), so
 * that a step blocked in a collective returns at once and ftl_execute moves to the next view. It also
 * carries the training thread's rebuild requests, says who is missing when the quorum is lost, and warns
 * when this worker's job merges into another lineage (its steps are then discarded for the other's). */
#include "agent_internal.h"

#include <stdlib.h>
#include <string.h>

#include "node/node_meta.h"
#include "base/log.h"



int ftl_agent_rank_of(ftl_agent *a, const char *name)
{
	const ftl_rdv_view *v = &a->shared.views.view;
	if (strcmp(name, a->cfg.name) == 0)
		return v->seq ? v->self_rank : -1; /* by generation too: a restarted worker is not its predecessor */
	for (uint32_t i = 0; i < v->n; i++)
		if (strcmp(v->members[i].name, name) == 0)
			return (int)i;
	return -1;
}


void ftl_agent_rdv_member_gone(ftl_agent *a, const char *why)
{
	if (!a->training.is_on)
		return;
	pthread_mutex_lock(&a->shared.lock);
	a->training.ops->abort_locked(a, why, true);
	pthread_mutex_unlock(&a->shared.lock);
}

void ftl_agent_rdv_receive(ftl_agent *a, const uint8_t *plain, size_t len)
{
	if (!a->training.is_on)
		return;
	ftl_node_receive_frame(a->node, ftl_agent_now_us(a), plain, len);
	ftl_agent_fed(a);
}

void ftl_agent_rdv_send(ftl_agent *a, const ftl_node_frame *f)
{
	/* Messages to ourselves go over loopback TCP too: simpler than re-entering the state machine here. */
	ftl_agent_peer_send(a, f->msg.to, f->msg.data, f->msg.len);
}

/* Loud, because work is lost: this worker trained in another lineage (a cluster formed apart) and now joins
 * this one, whose state will replace its own. The training thread logs both lineages' steps after the sync. */
static void warn_lineage_merge(ftl_agent *a, uint64_t old_lineage, const ftl_rdv_view *v, uint64_t steps,
			       uint64_t their_steps)
{
	ftl_log(&a->set.log, FTL_LOG_WARN, "rendezvous",
		FTL_MSG("this worker's job (lineage %016llx, %llu steps) is merging into another cluster's job "
			"(lineage %016llx, %llu steps, view %llu, coordinator %s), which has done more work: its state "
			"replaces ours and our %llu steps are discarded; set FTL_EXPECTED_WORKERS so that workers "
			"started together form one job, and check that every worker reaches the seeds",
			(unsigned long long)old_lineage, (unsigned long long)steps, (unsigned long long)v->lineage,
			(unsigned long long)their_steps, (unsigned long long)v->epoch, v->n ? v->members[0].name : "-",
			(unsigned long long)steps),
		FTL_F_HEX("old_lineage", old_lineage), FTL_F_HEX("new_lineage", v->lineage), FTL_F_UINT("epoch", v->epoch),
		FTL_F_UINT("steps", steps), FTL_F_UINT("new_lineage_steps", their_steps));
	json_t *ev = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "old_lineage", "", "new_lineage", "", "coordinator",
			       v->n ? v->members[0].name : "-", "epoch", (json_int_t)v->epoch, "steps_discarded",
			       (json_int_t)steps, "steps_kept", (json_int_t)their_steps);
	char hex[17];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)old_lineage);
	json_object_set_new(ev, "old_lineage", json_string(hex));
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)v->lineage);
	json_object_set_new(ev, "new_lineage", json_string(hex));
	ftl_agent_control_notice(a, "lineage merged", ev);
}

void ftl_agent_rdv_adopt_view(ftl_agent *a, const char *why)
{
	ftl_agent_views *t = &a->shared.views;
	ftl_node_view_state snap;
	ftl_node_read_view(a->node, &snap);
	const ftl_rdv_view *v = snap.view;
	ftl_rdv_view copy = {0}; /* made outside the lock, swapped in under it */
	if (ftl_node_view_copy(&copy, v) != FTL_OK)
		return;
	copy.self_rank = snap.rank;
	pthread_mutex_lock(&a->shared.lock);
	uint64_t old_lineage = t->synced_lineage_seen, steps = t->status.step;
	bool is_merge = old_lineage != 0 && v->lineage != old_lineage && t->status.step > 0;
	a->training.ops->view_locked(a, v);
	copy.seq = t->view.seq + 1;
	ftl_node_view_clear(&t->view);
	t->view = copy;
	t->phase = snap.phase; /* with the view, so the training thread never sees one without the other */
	t->lineage_steps = snap.lineage_steps;
	if (t->view.self_rank >= 0)
		t->synced_lineage_seen = v->lineage;
	else if (v->lineage != 0 && v->lineage == t->synced_lineage_seen)
		t->left_out_seq = copy.seq; /* the job goes on without us: what we hold goes stale */
	a->training.ops->abort_locked(a, why, false);
	pthread_cond_broadcast(&a->shared.changed);
	pthread_mutex_unlock(&a->shared.lock);
	ftl_log(&a->set.log, FTL_LOG_INFO, "rendezvous",
		FTL_MSG("view committed, coordinator %s", v->n ? v->members[0].name : "-"), FTL_F_UINT("epoch", v->epoch),
		FTL_F_UINT("world_size", v->n), FTL_F_INT("rank", snap.rank),
		FTL_F_STR("coordinator", v->n ? v->members[0].name : "-"));
	if (is_merge)
		warn_lineage_merge(a, old_lineage, v, steps, snap.lineage_steps);
}

/* Waiting for quorum: the members of the view that are gone, and what it takes to go on (for the log, the
 * training thread's messages and `ftlctl status`). Logged at warn when it changes. */
static void describe_missing(ftl_agent *a, const ftl_node_view_state *snap)
{
	ftl_agent_views *t = &a->shared.views;
	char text[sizeof(t->missing)] = "";
	if (snap->phase == FTL_RDV_WAITING_FOR_QUORUM) {
		const char *names[16];
		ftl_rdv_quorum q;
		size_t n = ftl_node_missing(a->node, names, 16, &q), len = 0;
		len += (size_t)snprintf(text, sizeof(text), "members gone from view %llu: ",
					(unsigned long long)snap->view->epoch);
		for (size_t i = 0; i < n && i < 16 && len < sizeof(text); i++)
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s", i ? ", " : "", names[i]);
		if (len < sizeof(text))
			snprintf(text + len, sizeof(text) - len, "%s (%u of %u alive, %u needed)", n > 16 ? ", ..." : "",
				 q.alive, q.electorate, q.needed);
	}
	pthread_mutex_lock(&a->shared.lock);
	bool is_changed = strcmp(text, t->missing) != 0;
	snprintf(t->missing, sizeof(t->missing), "%s", text);
	pthread_mutex_unlock(&a->shared.lock);
	if (is_changed && text[0])
		ftl_log(&a->set.log, FTL_LOG_WARN, "rendezvous",
			FTL_MSG("waiting for quorum: %s; training pauses until they return. If they are gone for good, "
				"run `ftlctl quorum reset` on any survivor to go on without them",
				text),
			FTL_F_STR("missing", text));
}

/* The training thread's replace policy named a slow member (train/pace.h): to the spares, when one waits. */
static void bench_slow(ftl_agent *a, const ftl_rdv_benched *b, uint64_t epoch)
{
	if (ftl_node_request_bench(a->node, ftl_agent_now_us(a), b->name, b->generation) != FTL_OK) {
		bool is_first = a->training.bench_refused_epoch != epoch; /* said once a view; asked again quietly */
		a->training.bench_refused_epoch = epoch;
		ftl_log(&a->set.log, is_first ? FTL_LOG_INFO : FTL_LOG_DEBUG, "rendezvous",
			FTL_MSG("%s is slow and stays in the view: %s", b->name, ftl_diag_message()),
			FTL_F_STR("member", b->name), FTL_F_STR("why", ftl_diag_message()));
		return;
	}
	ftl_log(&a->set.log, FTL_LOG_WARN, "rendezvous",
		FTL_MSG("%s is slow (FTL_SLOW_POLICY=replace): a spare takes its place, and it waits as a spare",
			b->name),
		FTL_F_STR("member", b->name));
	ftl_agent_fed(a);
}

void ftl_agent_rdv_wake(ftl_agent *a)
{
	ftl_agent_views *t = &a->shared.views;
	if (!a->training.is_on)
		return;
	pthread_mutex_lock(&a->shared.lock);
	uint64_t epoch = t->want_rebuild_seq && t->want_rebuild_seq == t->view.seq ? t->view.epoch : 0;
	t->want_rebuild_seq = 0;
	ftl_rdv_benched bench = {.generation = 0};
	uint64_t bench_epoch = t->want_bench_epoch;
	if (bench_epoch == t->view.epoch)
		bench = t->want_bench;
	t->want_bench_epoch = 0;
	pthread_mutex_unlock(&a->shared.lock);
	if (bench.name[0])
		bench_slow(a, &bench, bench_epoch);
	if (!epoch)
		return;
	ftl_log(&a->set.log, FTL_LOG_INFO, "rendezvous",
		"asking for the same members under a new epoch: this view's communicator failed here",
		FTL_F_UINT("epoch", epoch));
	ftl_node_request_rebuild(a->node, ftl_agent_now_us(a), epoch);
	ftl_agent_fed(a);
}

ftl_err ftl_agent_rdv_request_max(ftl_agent *a, uint32_t max_workers)
{
	if (!a->training.is_on)
		return ftl_diag_set(FTL_ERR_INVALID, "this agent does not train (no rendezvous): no job to scale");
	ftl_err err = ftl_node_request_max(a->node, ftl_agent_now_us(a), max_workers);
	if (err)
		return err;
	ftl_log(&a->set.log, FTL_LOG_WARN, "rendezvous",
		FTL_MSG("the job's maximum becomes %u workers (asked by the operator)", max_workers),
		FTL_F_UINT("max_workers", max_workers));
	ftl_agent_fed(a);
	return FTL_OK;
}

ftl_err ftl_agent_rdv_waive_quorum(ftl_agent *a)
{
	ftl_agent_views *t = &a->shared.views;
	if (!a->training.is_on)
		return ftl_diag_set(FTL_ERR_INVALID, "this agent does not train (no rendezvous)");
	char missing[sizeof(t->missing)];
	pthread_mutex_lock(&a->shared.lock);
	snprintf(missing, sizeof(missing), "%s", t->missing);
	pthread_mutex_unlock(&a->shared.lock);
	ftl_err err = ftl_node_waive_quorum(a->node, ftl_agent_now_us(a));
	if (err)
		return err;
	ftl_log(&a->set.log, FTL_LOG_WARN, "rendezvous",
		FTL_MSG("quorum reset by the operator: the survivors go on without the %s", missing),
		FTL_F_STR("missing", missing));
	ftl_agent_fed(a);
	return FTL_OK;
}

void ftl_agent_rdv_publish(ftl_agent *a)
{
	ftl_agent_views *t = &a->shared.views;
	ftl_node_view_state snap;
	ftl_node_read_view(a->node, &snap);
	if (!snap.view)
		return;
	ftl_rdv_phase phase = snap.phase;
	describe_missing(a, &snap);
	pthread_mutex_lock(&a->shared.lock);
	uint64_t lineage = t->status_lineage, steps = t->status.step;
	if (phase != t->phase)
		pthread_cond_broadcast(&a->shared.changed);
	t->phase = phase;
	if (snap.view->lineage == t->view.lineage)
		t->lineage_steps = snap.lineage_steps;
	snprintf(t->coordinator, sizeof(t->coordinator), "%s", snap.coordinator);
	t->max_workers = snap.max_workers;
	if (phase == FTL_RDV_NO_VIEW || phase == FTL_RDV_WAITING_FOR_QUORUM) {
		if (!t->below_min_since_us)
			t->below_min_since_us = ftl_agent_now_us(a);
	} else {
		t->below_min_since_us = 0;
	}
	pthread_mutex_unlock(&a->shared.lock);
	ftl_node_set_steps(a->node, lineage, steps); /* what our messages say of our lineage's work */
}

json_t *ftl_agent_rdv_status(ftl_agent *a)
{
	ftl_agent_views *t = &a->shared.views;
	if (!a->training.is_on)
		return json_null();
	pthread_mutex_lock(&a->shared.lock);
	json_t *j = json_pack("{s:I, s:s, s:s, s:i, s:I, s:i}", "epoch", (json_int_t)t->view.epoch, "phase",
			      ftl_rdv_phase_strs[t->phase], "coordinator", t->coordinator, "world_size", (int)t->view.n,
			      "step", (json_int_t)t->status.step, "rank", ftl_agent_rank_of(a, a->cfg.name));
	if (t->phase == FTL_RDV_WAITING_FOR_QUORUM && t->missing[0]) {
		json_object_set_new(j, "missing", json_string(t->missing));
		json_object_set_new(j, "resolve", json_string(
			"training pauses until the missing members return (safe: no split brain). If they are gone for "
			"good (deleted pods, dead machines), run `ftlctl quorum reset` on any one survivor to go on "
			"without them; never while they may still be alive on the other side of a partition"));
	}
	json_object_set_new(j, "max_workers", json_integer((json_int_t)t->max_workers));
	json_object_set_new(j, "benched", t->view.benched.name[0] ? json_string(t->view.benched.name) : json_null());
	json_object_set_new(j, "retries", json_integer((json_int_t)t->status.retries));
	a->training.ops->view_status_locked(a, j);
	pthread_mutex_unlock(&a->shared.lock);
	return j;
}
