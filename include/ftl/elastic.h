/* Elastic-invariant training: what makes a job's result not depend on how many workers it had.
 *
 * With a fixed global batch (ftl_batch_config, ftl/execute.h) every step averages the gradient over the
 * same samples at any world size; only the order of the float additions still differs. Reproducible mode
 * removes that too: the step's fixed micro-shards are summed exactly (ftl_allreduce with kind
 * FTL_ALLREDUCE_EXACT, ftl/comm.h), so the parameters after step S are bit for bit those of any other world
 * size.
 *
 * When the job lets the global batch grow with the world instead (the sampler's batch_per_rank), the
 * learning rate must follow: ftl_lr_policy below is the usual rule (linear or square root), ramped over a
 * few steps after each view change. */
#ifndef FTL_ELASTIC_H
#define FTL_ELASTIC_H

#include <stddef.h>
#include <stdint.h>

#include "ftl/export.h"

#include "ftl/comm.h"
#include "ftl/execute.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The learning rate as the world size changes, for a job whose global batch grows with it. */
typedef enum ftl_lr_scaling {
	FTL_LR_CONSTANT, /* base_lr whatever the world (a fixed global batch) */
	FTL_LR_LINEAR,   /* base_lr * world / base_world (Goyal et al., 2017) */
	FTL_LR_SQRT,     /* base_lr * sqrt(world / base_world) (Krizhevsky, 2014; often better with Adam) */
	FTL_LR_SCALING_MAX
} ftl_lr_scaling;

extern FTL_API const char *const ftl_lr_scaling_strs[FTL_LR_SCALING_MAX]; /* "none", "linear", "sqrt" */

/* The policy and its ramp. After each view change the rate moves from where it was to the new world's
 * target linearly over warmup_steps steps (0: at once), since a sudden change can destabilise training.
 * Every rank must compute the same rate, a joiner included: the ramp starts from the rate the job used
 * last (job state: keep it in a registered buffer, so every rank holds rank 0's after a view change) at
 * the first step of each view, both the same on every rank; the ramp fields are the hook's own. */
typedef struct ftl_lr_policy {
	ftl_lr_scaling scaling;
	double base_lr;          /* tuned for base_world workers */
	uint32_t base_world;
	uint64_t warmup_steps;
	uint64_t ramp_view;      /* the view epoch the ramp started in (0: none yet) */
	uint64_t ramp_step;      /* the job step it started at */
	double ramp_from;        /* the rate it started from */
} ftl_lr_policy;

/* FTL_ERR_INVALID for base_world 0 or a rate that is not positive and finite. */
FTL_API ftl_err ftl_lr_policy_init(ftl_lr_policy *p, ftl_lr_scaling scaling, double base_lr, uint32_t base_world,
				   uint64_t warmup_steps);
/* base_lr scaled for world_size by the policy. */
FTL_API double ftl_lr_policy_target(const ftl_lr_policy *p, int world_size);
/* The hook, called in every step with the step's info and the rate the job used last: at the first step
 * of a view (a view change) it starts a ramp; it returns the rate for this step. Store the rate into the
 * job's state only after the step's collectives succeeded (the step contract). */
FTL_API double ftl_lr_policy_step(ftl_lr_policy *p, double current_lr, const ftl_step_info *info);

#ifdef __cplusplus
}
#endif

#endif
