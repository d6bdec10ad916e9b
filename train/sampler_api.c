/* The sampler's order and its look-ahead, for programs and bindings (ftl/execute.h). The look-ahead
 * exists so that a data loader can fetch the coming steps' samples before the steps run, computing them
 * exactly as ftl_execute will (global_batch.c is the one implementation) rather than copying the
 * permutation into every binding. */
#include "agent/agent_training.h"

#include "global_batch.h"
#include "training.h"

const char *const ftl_sampler_order_strs[FTL_SAMPLER_ORDER_MAX] = {"shuffle", "sequential", "contiguous"};

ftl_err ftl_set_sampler_order(ftl_agent *a, ftl_sampler_order order)
{
	if (ftl_agent_is_started(a))
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_set_sampler_order: call it before ftl_agent_start");
	if ((int)order < 0 || order >= FTL_SAMPLER_ORDER_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_set_sampler_order: no order %d (shuffle, sequential, "
				    "contiguous)", (int)order);
	if (!ftl_training_of(a))
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_set_sampler_order: out of memory");
	ftl_agent_training(a)->state.order = order;
	return FTL_OK;
}

ftl_err ftl_sampler_peek(ftl_agent *a, int world, int rank, uint64_t *data_epoch, uint64_t *sample_pos,
			 uint64_t *out, size_t cap, size_t *n)
{
	*n = 0;
	if (!ftl_training_of(a))
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_sampler_peek: out of memory");
	return ftl_batch_peek(&ftl_agent_training(a)->state, world, rank, data_epoch, sample_pos, out, cap, n);
}
