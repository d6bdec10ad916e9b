/* The pace exchange (pace.h): each rank adds its steps to its window; every FTL_PACE_WINDOW_STEPS steps,
 * before the step runs, the ranks allgather their windows over the host path and each reaches the same
 * verdict, which status, /metrics and the log show.
 *
 * Why before the step: the exchange is a collective, and one that fails after a step succeeded would make
 * ftl_execute run that step again. Before it, a failure is one of a step that has not begun: the machine
 * moves on to the next view and runs the step there, as after any peer error. Its cost is one allgather of
 * 32 bytes per rank every 16 steps (tens of microseconds on tcp). Every rank of a view runs the same step
 * numbers, so every rank exchanges at the same steps; a mismatch (a rank of an older ftl that does not
 * exchange) is refused by the comm as mismatched collectives, never paired with the program's own.
 *
 * The replace policy (FTL_SLOW_POLICY=replace): rank 0 asks the rendezvous to bench the slow rank
 * (ftl_rdv_request_bench, through the loop thread) when it is first found slow in a view, and again every
 * ASK_AGAIN_EXCHANGES exchanges while it stays slow (a spare may have come since a refusal).
 *
 * The rebalance policy (FTL_SLOW_POLICY=rebalance): every rank computes the view's new weights from the
 * same table (rebalance.h) and the steps after this one take their shares by them (global_batch.h); a new
 * view starts even, since a joiner has no window yet. */
#include "agent/agent_training.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/log.h"
#include "global_batch.h"
#include "rebalance.h"
#include "training.h"

#define ASK_AGAIN_EXCHANGES 4

/* Under the lock: rank 0 of a job that replaces slow ranks asks for the slow one to be benched. */
static void ask_bench_locked(ftl_agent *a, ftl_training *t, const ftl_step_info *info)
{
	const ftl_pace *p = &t->pace;
	ftl_agent_views *v = ftl_agent_views_locked(a);
	if (!t->cfg.slow_replace || info->rank != 0 || p->slow < 0 || v->view.epoch != p->view_epoch ||
	    (uint32_t)p->slow >= v->view.n)
		return;
	uint32_t slow_for = p->suspect_windows - FTL_PACE_SLOW_WINDOWS;
	if (slow_for % ASK_AGAIN_EXCHANGES != 0)
		return;
	const ftl_rdv_member *m = &v->view.members[p->slow];
	ftl_copy_str(v->want_bench.name, m->name, sizeof v->want_bench.name);
	v->want_bench.generation = m->generation;
	v->want_bench_epoch = v->view.epoch;
	ftl_agent_wake(a);
}

static void start_window(ftl_training *t, uint64_t view_epoch)
{
	t->pace_window = (ftl_pace_window){.view_epoch = view_epoch};
}

static void log_verdict_locked(ftl_agent *a, const ftl_pace *p, int slow_before)
{
	if (p->slow == slow_before)
		return;
	if (p->slow < 0) {
		ftl_log(ftl_agent_logger(a), FTL_LOG_INFO, "pace", "no rank is slow any more",
			FTL_F_UINT("epoch", p->view_epoch));
		return;
	}
	const ftl_pace_row *r = &p->rows[p->slow];
	ftl_log(ftl_agent_logger(a), FTL_LOG_WARN, "pace",
		FTL_MSG("rank %d (%s) is slow: the others wait %.1f ms of a %.1f ms step for it (%u windows of %d "
			"steps)", p->slow, ftl_pace_name_locked(a, p, (uint32_t)p->slow), r->lead_ms, r->step_ms,
			p->suspect_windows, FTL_PACE_WINDOW_STEPS),
		FTL_F_INT("rank", p->slow), FTL_F_STR("name", ftl_pace_name_locked(a, p, (uint32_t)p->slow)),
		FTL_F_DOUBLE("lead_ms", r->lead_ms), FTL_F_DOUBLE("step_ms", r->step_ms));
}

/* Under the lock: the rebalance policy's shares from the windows (rebalance.h), into the registry and the
 * verdict's rows; said in the log when they move. */
static ftl_err rebalance_locked(ftl_agent *a, ftl_training *t, const ftl_step_info *info,
				const ftl_pace_window *windows, uint32_t n, bool *is_reshared)
{
	ftl_pace *p = &t->pace;
	const uint32_t *old = ftl_batch_weights_in(&t->state, (int)n, info->view_epoch);
	uint32_t *w = malloc(n * sizeof *w);
	if (w == NULL)
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_execute: out of memory for the shares of %u ranks", n);
	const ftl_batch_config *b = &t->state.batch;
	ftl_rebalance_split split = {b->global_batch, b->max_batch_per_rank, b->is_reproducible};
	bool is_moved = false;
	ftl_err e = p->rows[0].step_ms > 0 ? ftl_rebalance(windows, n, old, &split, w, &is_moved) : FTL_OK;
	if (e == FTL_OK && is_moved)
		e = ftl_batch_set_weights(&t->state, info->view_epoch, n, w);
	*is_reshared = e == FTL_OK && is_moved;
	free(w);
	old = ftl_batch_weights_in(&t->state, (int)n, info->view_epoch);
	uint64_t total = 0;
	for (uint32_t i = 0; old != NULL && i < n; i++)
		total += old[i];
	uint32_t least = 0;
	for (uint32_t i = 0; i < n; i++) {
		p->rows[i].share = old != NULL && total ? (double)old[i] / (double)total : 1.0 / n;
		least = p->rows[i].share < p->rows[least].share ? i : least;
	}
	if (is_moved && e == FTL_OK)
		ftl_log(ftl_agent_logger(a), FTL_LOG_INFO, "pace",
			FTL_MSG("shares of the global batch follow the ranks' speed (FTL_SLOW_POLICY=rebalance): rank %u "
				"(%s) takes the least, %.1f%% (even: %.1f%%)", least, ftl_pace_name_locked(a, p, least),
				100.0 * p->rows[least].share, 100.0 / n),
			FTL_F_INT("rank", (int)least), FTL_F_STR("name", ftl_pace_name_locked(a, p, least)),
			FTL_F_DOUBLE("share", p->rows[least].share));
	return e;
}

static ftl_err exchange(ftl_agent *a, ftl_training *t, const ftl_step_info *info, bool *is_reshared)
{
	uint32_t n = (uint32_t)info->world_size;
	const ftl_pace_window *w = &t->pace_window;
	int64_t mine[FTL_PACE_WIRE_WORDS] = {(int64_t)w->view_epoch, (int64_t)w->steps, (int64_t)w->step_us,
					     (int64_t)w->comm_us};
	int64_t *all = calloc((size_t)n * FTL_PACE_WIRE_WORDS, sizeof *all);
	ftl_pace_window *windows = calloc(n, sizeof *windows);
	if (all == NULL || windows == NULL) {
		free(all);
		free(windows);
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_execute: out of memory for the pace of %u ranks", n);
	}
	ftl_comm *c = t->ctrl_comm != NULL ? t->ctrl_comm : t->comm;
	ftl_err e = ftl_comm_allgather(c, mine, all, FTL_PACE_WIRE_WORDS, FTL_I64);
	if (e != FTL_OK)
		e = ftl_training_fail(t, e, "the pace exchange before step %llu (an allgather of every rank's step "
				      "times) failed: %s%s", (unsigned long long)info->step, ftl_comm_error(c),
				      e == FTL_ERR_INVALID ? " (every worker of a job must run ftl 0.4.2 or later, "
							     "or all an older one: older ones do not exchange)" : "");
	if (e == FTL_OK) {
		for (uint32_t i = 0; i < n; i++) {
			const int64_t *v = &all[i * FTL_PACE_WIRE_WORDS];
			windows[i] = (ftl_pace_window){(uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2], (uint64_t)v[3]};
		}
		ftl_agent_lock(a);
		int slow_before = t->pace.slow;
		e = ftl_pace_add(&t->pace, info->view_epoch, windows, n);
		if (e == FTL_OK) {
			log_verdict_locked(a, &t->pace, slow_before);
			ask_bench_locked(a, t, info);
			if (t->state.is_rebalanced)
				e = rebalance_locked(a, t, info, windows, n, is_reshared);
		}
		ftl_agent_unlock(a);
	}
	free(all);
	free(windows);
	return e;
}

ftl_err ftl_pace_before_step(ftl_agent *a, const ftl_step_info *info, bool *is_reshared)
{
	ftl_training *t = ftl_agent_training(a);
	*is_reshared = false;
	bool is_new_view = t->pace_window.view_epoch != info->view_epoch;
	if (is_new_view) {
		start_window(t, info->view_epoch);
		ftl_batch_set_weights(&t->state, 0, 0, NULL); /* even: a joiner has no window (and no weights) */
	}
	/* collectives between steps count in none; a new view's comm aborted the old one's requests */
	ftl_comm_time_take(&t->comm_time, ftl_agent_now_us(a), is_new_view);
	if (info->world_size < 2 || info->step == 0 || info->step % FTL_PACE_WINDOW_STEPS != 0 || t->comm == NULL)
		return FTL_OK;
	ftl_err e = exchange(a, t, info, is_reshared);
	start_window(t, info->view_epoch);
	ftl_comm_time_take(&t->comm_time, ftl_agent_now_us(a), false);
	return e;
}

void ftl_pace_after_step(ftl_agent *a, int64_t took_us, bool is_done)
{
	ftl_training *t = ftl_agent_training(a);
	int64_t comm = ftl_comm_time_take(&t->comm_time, ftl_agent_now_us(a), false);
	if (!is_done || took_us < 0)
		return;
	ftl_pace_window *w = &t->pace_window;
	w->steps++;
	w->step_us += (uint64_t)took_us;
	w->comm_us += (uint64_t)(comm < took_us ? (comm > 0 ? comm : 0) : took_us);
}
