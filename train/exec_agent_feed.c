/* The agent's view feed for the ftl_execute state machine (exec_machine.h): views from the rendezvous on
 * the loop thread, handed over under the agent's lock.
 *
 * The wait sleeps on the agent's condition variable, which runs on CLOCK_MONOTONIC (a wall-clock step
 * neither cuts a wait short nor stretches it), and wakes on what can end it: the loop thread broadcasts on
 * every view, phase, stop and leave; the deadlines it cannot hear about (when to ask for an abandoned
 * view's members again, when waiting has lasted FTL_BELOW_MIN_TIMEOUT_MS) are computed and waited for. */
#include "exec_feed.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_training.h"
#include "base/log.h"
#include "training.h"

/* Under the lock. A view we are in is usable when it is not the abandoned one and either the rendezvous
 * holds it current (phase training) or its communicator already works here (a view stays usable while
 * the next one is agreed, e.g. while joiners settle). */
static bool is_usable(ftl_agent *a, const ftl_abandoned_view *ab)
{
	const ftl_agent_views *views = ftl_agent_views_locked(a);
	const ftl_rdv_view *v = &views->view;
	if (v->seq == 0 || v->self_rank < 0 || v->seq == ab->seq)
		return false;
	return views->phase == FTL_RDV_TRAINING || ftl_agent_training(a)->exec.comm_seq == v->seq;
}

/* Under the lock; the view is copied only when it is not the one already in hand (a usable view has us in
 * it, so its members are never empty). FTL_ERR_SYSTEM (ftl_agent_view_copy's reason) when out of memory. */
static ftl_err copy_view(const ftl_rdv_view *v, ftl_rdv_view *w)
{
	if (w->seq == v->seq && w->members)
		return FTL_OK;
	return ftl_agent_view_copy(w, v);
}

/* Under the lock: the error when the wait has lasted too long (message in err), else FTL_OK; *deadline_us
 * is lowered to when that could next change without the loop thread saying so. A worker below min_workers
 * or without quorum gives up after FTL_BELOW_MIN_TIMEOUT_MS of that; a view change that never completes
 * gives up after as long (a hot spare waits for ever). */
static ftl_err check_wait(ftl_agent *a, int64_t waiting_since_us, int64_t *deadline_us)
{
	const ftl_training *t = ftl_agent_training(a);
	const ftl_agent_views *v = ftl_agent_views_locked(a);
	int64_t limit_us = t->cfg.below_min_timeout_ms * 1000, now = ftl_agent_now_us(a);
	if (limit_us <= 0 || v->phase == FTL_RDV_SPARE)
		return FTL_OK;
	if (v->below_min_since_us) {
		if (now - v->below_min_since_us <= limit_us) {
			int64_t at = v->below_min_since_us + limit_us + 1;
			*deadline_us = at < *deadline_us ? at : *deadline_us;
			return FTL_OK;
		}
		if (v->phase == FTL_RDV_WAITING_FOR_QUORUM)
			return ftl_diag_set(FTL_ERR_PEER_LOST,
				 "ftl: the job cannot continue: waiting for quorum for more than %lld ms "
				 "(FTL_BELOW_MIN_TIMEOUT_MS): %s. If they are gone for good, run `ftlctl quorum reset` "
				 "on a survivor (before this timeout) to go on without them",
				 (long long)t->cfg.below_min_timeout_ms, v->missing);
		else
			return ftl_diag_set(FTL_ERR_PEER_LOST,
				 "ftl: the job cannot continue: %s for more than %lld ms (FTL_MIN_WORKERS=%u, "
				 "FTL_BELOW_MIN_TIMEOUT_MS)",
				 ftl_agent_phase_name(v->phase), (long long)t->cfg.below_min_timeout_ms, t->cfg.min_workers);
	}
	if (now - waiting_since_us <= limit_us) {
		int64_t at = waiting_since_us + limit_us + 1;
		*deadline_us = at < *deadline_us ? at : *deadline_us;
		return FTL_OK;
	}
	return ftl_diag_set(FTL_ERR_PEER_LOST,
		 "ftl: the job cannot continue: no usable view for more than %lld ms (phase %s, view %llu; "
		 "FTL_BELOW_MIN_TIMEOUT_MS); check `ftlctl status` on the coordinator %s",
		 (long long)t->cfg.below_min_timeout_ms, ftl_agent_phase_name(v->phase), (unsigned long long)v->view.epoch,
		 v->coordinator[0] ? v->coordinator : "(none)");
}

/* Under the lock: asks for the abandoned view's members under a new epoch once its time has come and it is
 * still the newest view; else lowers *deadline_us to that time. */
static void ask_rebuild_when_due(ftl_agent *a, ftl_abandoned_view *ab, int64_t *deadline_us)
{
	ftl_agent_views *v = ftl_agent_views_locked(a);
	if (!ab->seq || ab->seq != v->view.seq || ab->is_asked)
		return;
	if (ftl_agent_now_us(a) < ab->rebuild_at_us) {
		*deadline_us = ab->rebuild_at_us < *deadline_us ? ab->rebuild_at_us : *deadline_us;
		return;
	}
	ab->is_asked = true;
	v->want_rebuild_seq = ab->seq;
	ftl_agent_wake(a);
}

static ftl_err feed_wait(void *ctx, ftl_abandoned_view *ab, ftl_rdv_view *w)
{
	ftl_agent *a = ctx;
	int64_t waiting_since = ftl_agent_now_us(a);
	ftl_err e = FTL_OK;
	ftl_agent_lock(a);
	for (;;) {
		/* First: a member that left takes no more steps, even in a view it still holds (when every
		 * member leaves at once, each may commit a view of those it has not yet heard leave). */
		if (ftl_agent_is_gone_locked(a)) {
			e = ftl_agent_stop_error_locked(a); /* why it stopped, when it stopped by itself */
			if (e == FTL_OK)
				e = ftl_diag_set(FTL_ERR_INVALID, "the agent has stopped or left: no more steps");
			break;
		}
		if (is_usable(a, ab)) {
			e = copy_view(&ftl_agent_views_locked(a)->view, w);
			break;
		}
		int64_t deadline = INT64_MAX;
		if ((e = check_wait(a, waiting_since, &deadline)) != FTL_OK)
			break;
		ask_rebuild_when_due(a, ab, &deadline);
		ftl_agent_sleep_locked(a, deadline);
	}
	ftl_agent_unlock(a);
	return e;
}

static bool feed_is_newest(void *ctx, uint64_t seq)
{
	ftl_agent *a = ctx;
	ftl_agent_lock(a);
	bool is_newest = ftl_agent_views_locked(a)->view.seq == seq;
	ftl_agent_unlock(a);
	return is_newest;
}

static int64_t feed_now_us(void *ctx) { return ftl_agent_now_us(ctx); }

static void feed_stepping(void *ctx, const ftl_rdv_view *w, uint64_t step, bool is_retry)
{
	ftl_agent *a = ctx;
	ftl_job_status *s = &ftl_agent_views_locked(a)->status;
	ftl_agent_lock(a);
	s->step = step;
	ftl_agent_views_locked(a)->status_lineage = w->lineage;
	s->view_epoch = w->epoch;
	s->rank = w->self_rank;
	s->world_size = (int)w->n;
	if (is_retry)
		s->retries++;
	ftl_agent_unlock(a);
}

static void feed_synced(void *ctx, const ftl_rdv_view *w, uint64_t bytes, int64_t took_us)
{
	ftl_agent *a = ctx;
	ftl_agent_lock(a);
	ftl_train_metrics_synced_locked(&ftl_agent_training(a)->metrics, bytes, took_us);
	ftl_agent_views_locked(a)->status.views_seen++;
	ftl_agent_unlock(a);
}

static void feed_leave(void *ctx, const char *why)
{
	ftl_agent *a = ctx;
	if (ftl_agent_leave(a, 2000) != FTL_OK)
		ftl_log(ftl_agent_logger(a), FTL_LOG_WARN, "training", FTL_MSG("leaving the job, and the leave failed: %s",
			ftl_diag_message()), FTL_F_STR("why", why));
}

static uint64_t feed_lineage_steps(void *ctx, uint64_t lineage)
{
	ftl_agent *a = ctx;
	ftl_agent_lock(a);
	uint64_t steps = ftl_agent_views_locked(a)->view.lineage == lineage ? ftl_agent_views_locked(a)->lineage_steps : 0;
	ftl_agent_unlock(a);
	return steps;
}

static bool feed_take_left_out(void *ctx)
{
	ftl_agent *a = ctx;
	ftl_agent_lock(a);
	ftl_agent_views *v = ftl_agent_views_locked(a);
	bool is_left_out = v->left_out_seq != 0;
	v->left_out_seq = 0;
	ftl_agent_unlock(a);
	return is_left_out;
}

const ftl_view_feed_ops ftl_exec_agent_feed = {
	.wait = feed_wait,
	.is_newest = feed_is_newest,
	.now_us = feed_now_us,
	.stepping = feed_stepping,
	.synced = feed_synced,
	.leave = feed_leave,
	.lineage_steps = feed_lineage_steps,
	.take_left_out = feed_take_left_out,
};
