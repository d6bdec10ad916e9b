/* The training side's recorders for /metrics (the why is in train_metrics.h). The bucket bounds are fixed
 * here, once, so every worker of a job reports the same ones. */
#include "train_metrics.h"

#include <string.h>

#include "agent/agent_training.h"
#include "training.h"

const char *const ftl_view_cause_strs[FTL_VIEW_CAUSE_MAX] = {"death", "leave", "join", "rebuild", "first", "merge"};

/* Seconds. A step is milliseconds to seconds; an allreduce from tens of microseconds (latency path) up;
 * a recovery is the detection time plus a rendezvous and a state sync: a fraction of a second to minutes. */
static const double step_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const double allreduce_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					  0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
static const double sync_bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
static const double recovery_bounds[] = {0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300};
#define N_OF(arr) ((int)(sizeof(arr) / sizeof(arr[0])))

void ftl_train_metrics_create(ftl_train_metrics *m)
{
	memset(m, 0, sizeof(*m));
	ftl_histogram_create(&m->step_seconds, step_bounds, N_OF(step_bounds));
	ftl_histogram_create(&m->allreduce_seconds, allreduce_bounds, N_OF(allreduce_bounds));
	ftl_histogram_create(&m->sync_seconds, sync_bounds, N_OF(sync_bounds));
	ftl_histogram_create(&m->recovery_seconds, recovery_bounds, N_OF(recovery_bounds));
}

static double seconds_since(ftl_agent *a, int64_t start_us) { return (double)(ftl_agent_now_us(a) - start_us) / 1e6; }

void ftl_train_metrics_disrupted_locked(ftl_train_metrics *m, int64_t now_us)
{
	if (!m->disrupted_at_us)
		m->disrupted_at_us = now_us;
}

static void disrupted(ftl_agent *a)
{
	ftl_agent_lock(a);
	ftl_train_metrics_disrupted_locked(&ftl_agent_training(a)->metrics, ftl_agent_now_us(a));
	ftl_agent_unlock(a);
}

ftl_err ftl_train_metrics_step(ftl_agent *a, ftl_step_fn step, void *ctx, const ftl_step_info *info)
{
	int64_t start = ftl_agent_now_us(a);
	ftl_err e = step(ctx, info);
	int64_t now = ftl_agent_now_us(a);
	ftl_train_metrics *m = &ftl_agent_training(a)->metrics;
	ftl_agent_lock(a);
	if (e == FTL_OK) {
		m->steps++;
		ftl_histogram_observe(&m->step_seconds, (double)(now - start) / 1e6);
		/* A step that began before the failure sign does not end the recovery: it may have finished
		 * its collectives just before a peer died, and the failure is still to be felt. */
		if (m->disrupted_at_us && start >= m->disrupted_at_us) {
			m->last_recovery_us = now - m->disrupted_at_us;
			ftl_histogram_observe(&m->recovery_seconds, (double)m->last_recovery_us / 1e6);
			m->disrupted_at_us = 0;
		}
	} else {
		m->step_failures++;
		ftl_train_metrics_disrupted_locked(m, now);
	}
	ftl_agent_unlock(a);
	return e;
}

ftl_err ftl_train_metrics_allreduce_done(ftl_agent *a, int64_t start_us, ftl_err e, uint64_t bytes)
{
	if (e != FTL_OK) {
		disrupted(a);
		return e;
	}
	double took = seconds_since(a, start_us);
	ftl_agent_lock(a);
	ftl_agent_training(a)->metrics.allreduce_bytes += bytes;
	ftl_histogram_observe(&ftl_agent_training(a)->metrics.allreduce_seconds, took);
	ftl_agent_unlock(a);
	return e;
}

ftl_err ftl_train_metrics_allreduce(ftl_agent *a, ftl_comm *c, const void *sendbuf, void *recvbuf, size_t count,
				    ftl_dtype dtype, ftl_reduce_op op, const ftl_allreduce_opts *o)
{
	int64_t start = ftl_agent_now_us(a);
	ftl_err e = ftl_comm_allreduce(c, sendbuf, recvbuf, count, dtype, op, o, NULL);
	size_t element = o->kind == FTL_ALLREDUCE_BF16 ? sizeof(uint16_t) : ftl_dtype_size(dtype);
	return ftl_train_metrics_allreduce_done(a, start, e, (uint64_t)count * element);
}

void ftl_train_metrics_synced_locked(ftl_train_metrics *m, uint64_t bytes, int64_t took_us)
{
	m->sync_bytes += bytes;
	ftl_histogram_observe(&m->sync_seconds, (double)took_us / 1e6);
}

void ftl_train_metrics_status_locked(const ftl_train_metrics *m, json_t *view)
{
	json_object_set_new(view, "recoveries", json_integer((json_int_t)m->recovery_seconds.count));
	json_object_set_new(view, "last_recovery_ms", m->recovery_seconds.count
							      ? json_real((double)m->last_recovery_us / 1000.0)
							      : json_null());
}

static bool has_member(const ftl_rdv_member *members, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(members[i].name, name) == 0)
			return true;
	return false;
}

/* O(old n * new n) name comparisons, once per view change. */
void ftl_train_metrics_view_locked(ftl_agent *a, const ftl_rdv_view *v)
{
	const ftl_rdv_view *old = &ftl_agent_views_locked(a)->view;
	bool died = false, left = false, joined = false;
	for (uint32_t i = 0; i < old->n; i++) {
		if (has_member(v->members, v->n, old->members[i].name))
			continue;
		if (ftl_agent_member_has_left(a, old->members[i].name))
			left = true;
		else
			died = true; /* dead, suspect or forgotten: not a graceful leave */
	}
	for (uint32_t i = 0; i < v->n && !joined; i++)
		joined = !has_member(old->members, old->n, v->members[i].name);
	bool merged = old->lineage != 0 && v->lineage != old->lineage;
	ftl_view_cause cause = old->seq == 0 ? FTL_VIEW_CAUSE_FIRST
			       : merged	   ? FTL_VIEW_CAUSE_MERGE
			       : died	   ? FTL_VIEW_CAUSE_DEATH
			       : left	   ? FTL_VIEW_CAUSE_LEAVE
			       : joined	   ? FTL_VIEW_CAUSE_JOIN
					   : FTL_VIEW_CAUSE_REBUILD;
	ftl_agent_training(a)->metrics.views[cause]++;
}
