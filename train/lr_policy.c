/* The learning-rate policy for a global batch that grows with the world (ftl/elastic.h): the rules, and
 * the ramp after each view change, as pure functions of the policy, the step's info and the job's last
 * rate. The same rules as python/src/ftl/torch/_lr.py. */
#include "ftl/elastic.h"

#include <math.h>

#include "base/diag.h"

const char *const ftl_lr_scaling_strs[FTL_LR_SCALING_MAX] = {"none", "linear", "sqrt"};

ftl_err ftl_lr_policy_init(ftl_lr_policy *p, ftl_lr_scaling scaling, double base_lr, uint32_t base_world,
			   uint64_t warmup_steps)
{
	if ((unsigned)scaling >= FTL_LR_SCALING_MAX || base_world == 0 || !(base_lr > 0) || !isfinite(base_lr))
		return ftl_diag_set(FTL_ERR_INVALID,
				    "ftl_lr_policy_init: needs a known scaling, base_world >= 1 and a positive, finite "
				    "base_lr (got %g at world %u)", base_lr, base_world);
	*p = (ftl_lr_policy){.scaling = scaling, .base_lr = base_lr, .base_world = base_world,
			     .warmup_steps = warmup_steps};
	return FTL_OK;
}

double ftl_lr_policy_target(const ftl_lr_policy *p, int world_size)
{
	double ratio = (double)world_size / p->base_world;
	switch (p->scaling) {
	case FTL_LR_LINEAR:
		return p->base_lr * ratio;
	case FTL_LR_SQRT:
		return p->base_lr * sqrt(ratio);
	default:
		return p->base_lr;
	}
}

double ftl_lr_policy_step(ftl_lr_policy *p, double current_lr, const ftl_step_info *info)
{
	if (info->view_epoch != p->ramp_view || p->ramp_view == 0) {
		p->ramp_view = info->view_epoch;
		p->ramp_step = info->step;
		p->ramp_from = current_lr;
	}
	double target = ftl_lr_policy_target(p, info->world_size);
	if (p->warmup_steps == 0)
		return target;
	double done = (double)(info->step - p->ramp_step + 1) / (double)p->warmup_steps;
	return p->ramp_from + (target - p->ramp_from) * (done < 1 ? done : 1);
}
