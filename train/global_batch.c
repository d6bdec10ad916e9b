/* The fixed global batch: each step takes exactly global_batch positions of the data epoch's permutation
 * at any world size (fewer only at the end of a data epoch, the same count at any world size), split as
 * evenly as possible. The sampler's position stays the only state: a step moves it by the step's length,
 * which does not depend on the world, so a rescale never skips or repeats a sample.
 *
 * Why reproducible mode splits by whole micro-shards: a shard's gradient is a float sum over its samples
 * in a fixed order; computed whole on one rank it is the same bits whichever rank computes it, and the
 * exact sum of the shards (ftl_allreduce_exact) is then the same at any world size. */
#include "global_batch.h"

#include <stdlib.h>
#include <string.h>

#include "agent/env_read.h"
#include "sampler.h"

uint64_t ftl_batch_step_len(uint64_t dataset_size, uint64_t pos, uint64_t global_batch)
{
	if (pos >= dataset_size)
		return 0;
	return global_batch < dataset_size - pos ? global_batch : dataset_size - pos;
}

/* Item r of n items dealt to w takers in consecutive runs whose sizes differ by at most one. */
static void even_run(uint64_t n, uint64_t w, uint64_t r, uint64_t *first, uint64_t *count)
{
	uint64_t base = n / w, extra = n % w;
	*first = r * base + (r < extra ? r : extra);
	*count = base + (r < extra);
}

void ftl_batch_share_of(uint64_t step_len, uint32_t micro, bool is_reproducible, int world, int rank,
			ftl_batch_share *out)
{
	*out = (ftl_batch_share){0};
	if (world <= 0 || rank < 0 || rank >= world)
		return;
	if (!is_reproducible || micro == 0) {
		even_run(step_len, (uint64_t)world, (uint64_t)rank, &out->offset, &out->count);
		return;
	}
	uint64_t shards = (step_len + micro - 1) / micro, first, n;
	even_run(shards, (uint64_t)world, (uint64_t)rank, &first, &n);
	uint64_t start = first * micro < step_len ? first * micro : step_len; /* a rank without shards: the end */
	uint64_t end = (first + n) * micro < step_len ? (first + n) * micro : step_len;
	out->offset = start;
	out->count = end - start;
	out->first_micro = (uint32_t)first;
	out->total_micro = (uint32_t)shards;
}

ftl_err ftl_batch_config_check(const ftl_batch_config *b)
{
	if (b->global_batch > UINT32_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "FTL_GLOBAL_BATCH=%llu: at most %u samples per step",
				    (unsigned long long)b->global_batch, UINT32_MAX);
	if (b->is_reproducible && (b->global_batch == 0 || b->max_batch_per_rank == 0))
		return ftl_diag_set(FTL_ERR_INVALID,
				    "FTL_REPRODUCIBLE=1 needs FTL_GLOBAL_BATCH (the fixed global batch) and "
				    "FTL_MAX_BATCH_PER_RANK (the micro-shard size, fixed for the whole job); set both");
	return FTL_OK;
}

ftl_err ftl_batch_config_from_env(ftl_batch_config *b)
{
	int64_t global = (int64_t)b->global_batch, micro = b->max_batch_per_rank, reproducible = b->is_reproducible;
	if (ftl_env_int("FTL_GLOBAL_BATCH", &global, 0, UINT32_MAX) ||
	    ftl_env_int("FTL_MAX_BATCH_PER_RANK", &micro, 0, UINT32_MAX) ||
	    ftl_env_int("FTL_REPRODUCIBLE", &reproducible, 0, 1))
		return FTL_ERR_INVALID;
	b->global_batch = (uint64_t)global;
	b->max_batch_per_rank = (uint32_t)micro;
	b->is_reproducible = reproducible == 1;
	return ftl_batch_config_check(b);
}

/* The growing batch: batch_per_rank on every rank (sampler.h). */
static void fill_growing(ftl_state_registry *r, int rank, ftl_step_info *info)
{
	info->indices = r->indices;
	info->n_indices = ftl_sampler_slice(r->dataset_size, r->sampler_seed, r->data_epoch, r->sample_pos, rank,
					    r->batch_per_rank, r->indices);
}

ftl_err ftl_batch_fill_step(ftl_state_registry *r, int rank, int world, ftl_step_info *info)
{
	const ftl_batch_config *b = &r->batch;
	if (!r->dataset_size)
		return FTL_OK;
	if (!b->global_batch) {
		fill_growing(r, rank, info);
		return FTL_OK;
	}
	if (r->indices_cap < b->global_batch) { /* once: a share is never larger than the global batch */
		uint64_t *idx = realloc(r->indices, b->global_batch * sizeof(*idx));
		if (!idx) {
			return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory for the step's %llu indices (FTL_GLOBAL_BATCH)",
				 (unsigned long long)b->global_batch);
		}
		r->indices = idx;
		r->indices_cap = b->global_batch;
	}
	uint64_t step_len = ftl_batch_step_len(r->dataset_size, r->sample_pos, b->global_batch);
	ftl_batch_share share;
	ftl_batch_share_of(step_len, b->max_batch_per_rank, b->is_reproducible, world, rank, &share);
	info->indices = r->indices;
	info->n_indices = share.count ? ftl_sampler_slice(r->dataset_size, r->sampler_seed, r->data_epoch,
							  r->sample_pos + share.offset, 0, (uint32_t)share.count,
							  r->indices)
				      : 0;
	info->global_batch = step_len;
	info->micro_batch = b->max_batch_per_rank;
	info->first_micro = share.first_micro;
	info->total_micro = share.total_micro;
	return FTL_OK;
}

uint64_t ftl_batch_advance(const ftl_state_registry *r, int world)
{
	if (!r->batch.global_batch)
		return ftl_sampler_advance(r->dataset_size, r->sample_pos, world, r->batch_per_rank);
	return ftl_batch_step_len(r->dataset_size, r->sample_pos, r->batch.global_batch);
}
