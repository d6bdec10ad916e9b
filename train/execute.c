/* ftl_execute (the contract is in include/ftl/execute.h): the agent's state machine (exec_machine.h) run
 * for one step over the agent's view feed and comm factory, and the final checkpoint of a rank 0 that finds
 * it has left. One call at a time per agent: the machine and the registry belong to the calling thread, so a
 * second call (another thread, or the step calling ftl_execute) is refused, never run beside the first. */
#include "agent/agent_training.h"

#include <stdio.h>

#include "checkpoint.h"
#include "global_batch.h"
#include "training.h"

typedef struct metered_step {
	ftl_agent *a;
	ftl_step_fn step;
	void *ctx;
} metered_step;

/* The user's step, timed and counted for /metrics and the pace of the ranks (pace.h), whose exchange comes
 * first when it is due. When the exchange moved the shares of the global batch (the rebalance policy), the
 * step takes its indices by the new shares, drawn again from the same position on every rank: a data
 * loader that looks ahead during the step (ftl_sampler_peek) sees the new shares, and must see the step's. */
static ftl_err run_metered(void *arg, const ftl_step_info *info)
{
	metered_step *m = arg;
	bool is_reshared;
	ftl_err e = ftl_pace_before_step(m->a, info, &is_reshared);
	if (e != FTL_OK)
		return e;
	ftl_step_info redrawn = *info;
	if (is_reshared && (e = ftl_batch_fill_step(&ftl_agent_training(m->a)->state, info->rank, info->world_size,
						    &redrawn)) != FTL_OK)
		return e;
	int64_t start = ftl_agent_now_us(m->a);
	e = ftl_train_metrics_step(m->a, m->step, m->ctx, &redrawn);
	ftl_pace_after_step(m->a, ftl_agent_now_us(m->a) - start, e == FTL_OK);
	return e;
}

ftl_err ftl_execute(ftl_agent *a, ftl_step_fn step, void *ctx)
{
	if (!ftl_agent_is_training(a) || !ftl_agent_is_started(a)) {
		ftl_training *t = ftl_training_of(a);
		ftl_err e = ftl_diag_set(FTL_ERR_INVALID, "ftl_execute: call ftl_set_training, then ftl_agent_start, first");
		if (t)
			ftl_kept_error_from_diag(&t->exec.last_error);
		return e;
	}
	ftl_training *t = ftl_agent_training(a);
	bool is_idle = false;
	if (!atomic_compare_exchange_strong(&t->is_executing, &is_idle, true)) /* not last_error: the running call's */
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_execute: another call is running on this agent (from another "
				    "thread, or from inside its step): one ftl_execute at a time per agent");
	metered_step m = {a, step, ctx};
	ftl_err e = ftl_exec_step(&t->exec, run_metered, &m);
	if (ftl_agent_views_locked(a)->status.data_epoch != t->state.data_epoch) { /* only this thread writes it: no lock to read */
		ftl_agent_lock(a);
		ftl_agent_views_locked(a)->status.data_epoch = t->state.data_epoch; /* for ftl_get_job_status on any thread */
		ftl_agent_unlock(a);
	}
	atomic_store(&t->is_executing, false);
	if (e != FTL_OK && ftl_agent_has_left(a))
		ftl_checkpoint_before_leaving(a); /* rank 0's steps since the last checkpoint must not leave with it */
	return e;
}
