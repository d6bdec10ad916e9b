/* The fixed global batch: each step takes exactly global_batch positions of the data epoch's permutation
 * at any world size (fewer only at the end of a data epoch, the same count at any world size), split as
 * evenly as possible. The sampler's position stays the only state: a step moves it by the step's length,
 * which does not depend on the world, so a rescale never skips or repeats a sample.
 *
 * Why reproducible mode splits by whole micro-shards: a shard's gradient is a float sum over its samples
 * in a fixed order; computed whole on one rank it is the same bits whichever rank computes it, and the
 * exact sum of the shards (FTL_ALLREDUCE_EXACT) is then the same at any world size, and under any weights
 * (the rebalance policy, rebalance.h, deals whole shards in proportion to the ranks' speed). The contiguous order
 * deals its streams whole for another reason: a rank must keep reading the same streams.
 *
 * Why one function computes a step's indices for ftl_execute (ftl_batch_fill_step) and for the look-ahead
 * (ftl_batch_peek): a data loader that fetches ahead is only right when both agree, and one implementation
 * cannot disagree with itself. */
#include "global_batch.h"

#include <stdlib.h>
#include <string.h>

#include "base/env_read.h"
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

/* Item r of n items dealt to w takers in consecutive runs in proportion to weights[w] (NULL: even_run).
 * n < 2^32 and the weights' sum < 2^28 (rebalance.h), so n times a partial sum fits in 64 bits. */
static void run_of(uint64_t n, const uint32_t *weights, uint64_t w, uint64_t r, uint64_t *first, uint64_t *count)
{
	if (weights == NULL) {
		even_run(n, w, r, first, count);
		return;
	}
	uint64_t before = 0, total = 0;
	for (uint64_t i = 0; i < w; i++) {
		total += weights[i];
		before += i < r ? weights[i] : 0;
	}
	*first = total ? n * before / total : 0;
	*count = (total ? n * (before + weights[r]) / total : 0) - *first;
}

void ftl_batch_share_of(uint64_t step_len, uint32_t micro, bool is_reproducible, int world, int rank,
			const uint32_t *weights, ftl_batch_share *out)
{
	*out = (ftl_batch_share){0};
	if (world <= 0 || rank < 0 || rank >= world)
		return;
	if (!is_reproducible || micro == 0) {
		run_of(step_len, weights, (uint64_t)world, (uint64_t)rank, &out->offset, &out->count);
		return;
	}
	uint64_t shards = (step_len + micro - 1) / micro, first, n;
	run_of(shards, weights, (uint64_t)world, (uint64_t)rank, &first, &n);
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
		return ftl_diag_set_setting("FTL_GLOBAL_BATCH", FTL_ERR_INVALID, "FTL_GLOBAL_BATCH=%llu: at most %u samples per step",
				    (unsigned long long)b->global_batch, UINT32_MAX);
	if (b->is_reproducible && (b->global_batch == 0 || b->max_batch_per_rank == 0))
		return ftl_diag_set_setting("FTL_REPRODUCIBLE", FTL_ERR_INVALID,
				    "FTL_REPRODUCIBLE=1 needs FTL_GLOBAL_BATCH (the fixed global batch) and "
				    "FTL_MAX_BATCH_PER_RANK (the micro-shard size, fixed for the whole job); set both");
	return FTL_OK;
}

ftl_err ftl_batch_config_from_settings(ftl_batch_config *b, const ftl_settings *s)
{
	int64_t global = (int64_t)b->global_batch, micro = b->max_batch_per_rank, reproducible = b->is_reproducible;
	if (ftl_setting_int(s, "FTL_GLOBAL_BATCH", &global, 0, UINT32_MAX) ||
	    ftl_setting_int(s, "FTL_MAX_BATCH_PER_RANK", &micro, 0, UINT32_MAX) ||
	    ftl_setting_int(s, "FTL_REPRODUCIBLE", &reproducible, 0, 1))
		return FTL_ERR_INVALID;
	b->global_batch = (uint64_t)global;
	b->max_batch_per_rank = (uint32_t)micro;
	b->is_reproducible = reproducible == 1;
	return FTL_OK;
}

/* Contiguous streams are whole chunks of a fixed global batch (FTL_SAMPLER_CONTIGUOUS, ftl/execute.h); the
 * rebalance policy deals out a fixed global batch, and a stream must stay with its rank. */
static ftl_err order_check(const ftl_state_registry *r)
{
	const ftl_batch_config *b = &r->batch;
	if (r->order == FTL_SAMPLER_CONTIGUOUS &&
	    (!b->global_batch || !b->max_batch_per_rank || b->global_batch % b->max_batch_per_rank))
		return ftl_diag_set(FTL_ERR_INVALID,
				    "the contiguous sampler order needs a fixed global batch of whole streams: set "
				    "FTL_MAX_BATCH_PER_RANK to the chunk each stream gives a step and FTL_GLOBAL_BATCH to "
				    "streams x chunk");
	if (r->is_rebalanced && !b->global_batch)
		return ftl_diag_set_setting("FTL_SLOW_POLICY", FTL_ERR_INVALID,
					    "FTL_SLOW_POLICY=rebalance moves samples of a fixed global batch from slow ranks to "
					    "fast ones: set FTL_GLOBAL_BATCH (and average gradients by sample count), or use "
					    "FTL_SLOW_POLICY=replace");
	if (r->is_rebalanced && r->order == FTL_SAMPLER_CONTIGUOUS)
		return ftl_diag_set_setting("FTL_SLOW_POLICY", FTL_ERR_INVALID,
					    "FTL_SLOW_POLICY=rebalance would move streams of the contiguous sampler order "
					    "between ranks, and a stream stays with its rank: use FTL_SLOW_POLICY=replace");
	return FTL_OK;
}

ftl_err ftl_batch_set_weights(ftl_state_registry *r, uint64_t view_epoch, uint32_t n, const uint32_t *w)
{
	if (n != r->shares.n) {
		free(r->shares.w);
		r->shares = (ftl_batch_weights){0};
		if (n && (r->shares.w = malloc(n * sizeof *w)) == NULL)
			return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory for the shares of %u ranks", n);
	}
	r->shares.n = n;
	r->shares.view_epoch = view_epoch;
	if (n)
		memcpy(r->shares.w, w, n * sizeof *w);
	return FTL_OK;
}

const uint32_t *ftl_batch_weights_in(const ftl_state_registry *r, int world, uint64_t view_epoch)
{
	const ftl_batch_weights *s = &r->shares;
	return s->n && s->n == (uint32_t)world && s->view_epoch == view_epoch ? s->w : NULL;
}

/* Rank's positions in a step that starts at pos (relative to pos), and the step's length with a fixed
 * global batch (0 otherwise), in a view whose shares are weights (NULL: even). Streams, like reproducible
 * micro-shards, are dealt whole. */
static void share_at(const ftl_state_registry *r, uint64_t pos, int rank, int world, const uint32_t *weights,
		     ftl_batch_share *share, uint64_t *step_len)
{
	const ftl_batch_config *b = &r->batch;
	*share = (ftl_batch_share){0};
	*step_len = 0;
	if (!b->global_batch) { /* the growing batch: batch_per_rank on every rank (sampler.h) */
		uint64_t left = pos < r->dataset_size ? r->dataset_size - pos : 0;
		uint64_t offset = (uint64_t)(rank < 0 ? 0 : rank) * r->batch_per_rank;
		if (rank >= 0 && offset < left) {
			share->offset = offset;
			share->count = left - offset < r->batch_per_rank ? left - offset : r->batch_per_rank;
		}
		return;
	}
	*step_len = ftl_batch_step_len(r->dataset_size, pos, b->global_batch);
	ftl_batch_share_of(*step_len, b->max_batch_per_rank, b->is_reproducible || r->order == FTL_SAMPLER_CONTIGUOUS,
			   world, rank, weights, share);
}

/* The indices at positions [first, first + n) of data epoch `epoch`, in the registry's order. */
static void indices_at(const ftl_state_registry *r, uint64_t epoch, uint64_t first, uint64_t n, uint64_t *out)
{
	if (r->order == FTL_SAMPLER_SHUFFLE) {
		ftl_sampler_slice(r->dataset_size, r->sampler_seed, epoch, first, 0, (uint32_t)n, out);
		return;
	}
	for (uint64_t k = 0; k < n; k++)
		out[k] = r->order == FTL_SAMPLER_SEQUENTIAL
				 ? first + k
				 : ftl_sampler_contiguous(r->dataset_size, r->batch.global_batch,
							  r->batch.max_batch_per_rank, first + k);
}

/* The most indices a rank takes in one step. */
static uint64_t share_cap(const ftl_state_registry *r)
{
	return r->batch.global_batch ? r->batch.global_batch : r->batch_per_rank;
}

ftl_err ftl_batch_fill_step(ftl_state_registry *r, int rank, int world, ftl_step_info *info)
{
	const ftl_batch_config *b = &r->batch;
	if (!r->dataset_size)
		return FTL_OK;
	ftl_err e = order_check(r);
	if (e)
		return e;
	if (r->indices_cap < share_cap(r)) { /* once: a share is never larger than the global batch */
		uint64_t *idx = realloc(r->indices, share_cap(r) * sizeof(*idx));
		if (!idx) {
			return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory for the step's %llu indices (FTL_GLOBAL_BATCH)",
				 (unsigned long long)share_cap(r));
		}
		r->indices = idx;
		r->indices_cap = share_cap(r);
	}
	ftl_batch_share share;
	uint64_t step_len;
	share_at(r, r->sample_pos, rank, world, ftl_batch_weights_in(r, world, info->view_epoch), &share, &step_len);
	indices_at(r, r->data_epoch, r->sample_pos + share.offset, share.count, r->indices);
	info->indices = r->indices;
	info->n_indices = (size_t)share.count;
	if (b->global_batch) {
		info->global_batch = step_len;
		info->micro_batch = b->max_batch_per_rank;
		info->first_micro = share.first_micro;
		info->total_micro = share.total_micro;
	}
	return FTL_OK;
}

void ftl_batch_move(const ftl_state_registry *r, int world, uint64_t *epoch, uint64_t *pos)
{
	if (!r->dataset_size)
		return;
	*pos += r->batch.global_batch ? ftl_batch_step_len(r->dataset_size, *pos, r->batch.global_batch)
				      : ftl_sampler_advance(r->dataset_size, *pos, world, r->batch_per_rank);
	if (*pos >= r->dataset_size) {
		(*epoch)++;
		*pos = 0;
	}
}

ftl_err ftl_batch_peek(const ftl_state_registry *r, int world, int rank, uint64_t *epoch, uint64_t *pos,
		       uint64_t *out, size_t cap, size_t *n)
{
	*n = 0;
	if (!r->dataset_size)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_sampler_peek: no sampler (ftl_set_sampler)");
	if (world <= 0 || rank < 0 || rank >= world)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_sampler_peek: rank %d of a world of %d", rank, world);
	if (cap < share_cap(r)) {
		*n = (size_t)share_cap(r);
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_sampler_peek: room for %zu indices, and a step may take %llu",
				    cap, (unsigned long long)share_cap(r));
	}
	ftl_err e = order_check(r);
	if (e)
		return e;
	ftl_batch_share share;
	uint64_t step_len;
	/* the shares agreed last (a view change is found by the loader: the step's own indices differ) */
	share_at(r, *pos, rank, world, ftl_batch_weights_in(r, world, r->shares.view_epoch), &share, &step_len);
	indices_at(r, *epoch, *pos + share.offset, share.count, out);
	*n = (size_t)share.count;
	ftl_batch_move(r, world, epoch, pos);
	return FTL_OK;
}
