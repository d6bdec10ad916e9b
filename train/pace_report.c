/* The pace verdict (pace.h) as people read it: the view object of `ftlctl status --json` gains "pace" (each
 * rank's step, in-flight and lead times of the last window, its share of the global batch under the
 * rebalance policy, and the slow rank), and /metrics gains one gauge per rank of each, and ftl_slow_rank.
 * Only a verdict of the agent's newest view is shown. Loop thread, under the agent's lock. */
#include "agent/agent_training.h"

#include <stdbool.h>
#include <stddef.h>

#include "training.h"

/* The verdict shown: one of the agent's view, the newest (a verdict of an older view names ranks that may be
 * other workers now, and is not shown: a new view shows none until its first exchange). */
static bool is_current_locked(ftl_agent *a, const ftl_pace *p)
{
	return p->exchanges > 0 && p->view_epoch == ftl_agent_views_locked(a)->view.epoch;
}

const char *ftl_pace_name_locked(ftl_agent *a, const ftl_pace *p, uint32_t r)
{
	const ftl_rdv_view *v = &ftl_agent_views_locked(a)->view;
	return v->epoch == p->view_epoch && r < v->n ? v->members[r].name : "";
}

void ftl_pace_status_locked(ftl_agent *a, json_t *view)
{
	const ftl_pace *p = &ftl_agent_training(a)->pace;
	if (!is_current_locked(a, p))
		return;
	bool is_rebalanced = ftl_agent_training(a)->cfg.slow_rebalance;
	json_t *ranks = json_array();
	for (uint32_t i = 0; i < p->n; i++) {
		json_t *row = json_pack("{s:I,s:s,s:f,s:f,s:f}", "rank", (json_int_t)i, "name",
					ftl_pace_name_locked(a, p, i), "step_ms", p->rows[i].step_ms, "comm_ms",
					p->rows[i].comm_ms, "lead_ms", p->rows[i].lead_ms);
		if (is_rebalanced)
			json_object_set_new(row, "share", json_real(p->rows[i].share));
		json_array_append_new(ranks, row);
	}
	json_t *slow = p->slow >= 0 ? json_integer(p->slow) : json_null();
	json_t *slow_name = p->slow >= 0 ? json_string(ftl_pace_name_locked(a, p, (uint32_t)p->slow)) : json_null();
	json_object_set_new(view, "pace", json_pack("{s:I,s:i,s:o,s:o,s:o}", "epoch", (json_int_t)p->view_epoch,
						    "window_steps", FTL_PACE_WINDOW_STEPS, "slow_rank", slow,
						    "slow_name", slow_name, "ranks", ranks));
}

/* One gauge per rank of the row's field at offset, times scale. */
static void per_rank(ftl_agent *a, ftl_metrics_text *t, const ftl_pace *p, const char *name, const char *help,
		     size_t offset, double scale)
{
	ftl_metrics_family(t, name, "gauge", help);
	for (uint32_t i = 0; i < p->n; i++) {
		ftl_metrics_put(t, "%s{rank=\"%u\",name=", name, i);
		ftl_metrics_label_value(t, ftl_pace_name_locked(a, p, i));
		ftl_metrics_put(t, "} %.9g\n", *(const double *)((const char *)&p->rows[i] + offset) * scale);
	}
}

void ftl_pace_metrics_locked(ftl_agent *a, ftl_metrics_text *t)
{
	const ftl_pace *p = &ftl_agent_training(a)->pace;
	bool is_current = is_current_locked(a, p);
	ftl_metrics_single(t, "ftl_slow_rank", "gauge",
			   "The rank the others have waited for in the last 3 windows of 16 steps (-1: none).",
			   is_current ? (double)p->slow : -1.0);
	if (!is_current)
		return;
	per_rank(a, t, p, "ftl_rank_step_seconds", "Each rank's mean step time in the last window.",
		 offsetof(ftl_pace_row, step_ms), 1e-3);
	per_rank(a, t, p, "ftl_rank_comm_seconds", "Each rank's mean time per step with a collective in flight.",
		 offsetof(ftl_pace_row, comm_ms), 1e-3);
	per_rank(a, t, p, "ftl_rank_lead_seconds",
		 "How long per step the other ranks waited for each rank (the median of theirs in flight minus its).",
		 offsetof(ftl_pace_row, lead_ms), 1e-3);
	if (ftl_agent_training(a)->cfg.slow_rebalance)
		per_rank(a, t, p, "ftl_rank_batch_share",
			 "Each rank's share of the global batch from the last exchange on (FTL_SLOW_POLICY=rebalance).",
			 offsetof(ftl_pace_row, share), 1.0);
}
