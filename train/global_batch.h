/* The fixed global batch (ftl_batch_config, include/ftl/execute.h): which positions of a step each rank
 * takes whatever the world size (pure), and its side of the state registry (the step's indices in the
 * sampler's order, how far a step moves the sampler, the same for a step to come) and of state sync (every
 * member's settings against rank 0's). */
#ifndef FTL_TRAIN_GLOBAL_BATCH_H
#define FTL_TRAIN_GLOBAL_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl/execute.h"
#include "state_registry.h"

/* One rank's share of a step, in positions relative to the step's first. */
typedef struct ftl_batch_share {
	uint64_t offset;
	uint64_t count;
	uint32_t first_micro;  /* reproducible mode: the index of its first micro-shard in the step */
	uint32_t total_micro;  /* reproducible mode: the step's micro-shards (0 otherwise) */
} ftl_batch_share;

/* How many positions a step at pos takes: the global batch, clipped at the end of the data epoch. */
uint64_t ftl_batch_step_len(uint64_t dataset_size, uint64_t pos, uint64_t global_batch);
/* Rank r of world's share of a step of step_len positions. Plain: ranks take consecutive runs whose sizes
 * differ by at most one. Reproducible: the step is cut into micro-shards of `micro` positions (the last
 * may be shorter) and ranks take consecutive runs of whole shards whose counts differ by at most one, so
 * a shard's positions never depend on the world size. With weights (world of them, rebalance.h) the runs
 * (of positions, or of whole shards) are in proportion to them instead; NULL: even. */
void ftl_batch_share_of(uint64_t step_len, uint32_t micro, bool is_reproducible, int world, int rank,
			const uint32_t *weights, ftl_batch_share *out);
/* The weights every rank of view_epoch agreed for its n ranks (the rebalance policy, rebalance.h) become the
 * shares of that view's steps; n == 0 makes them even. FTL_ERR_SYSTEM when out of memory (shares then
 * even). */
ftl_err ftl_batch_set_weights(ftl_state_registry *r, uint64_t view_epoch, uint32_t n, const uint32_t *w);
/* The weights in force for a step of world ranks in view_epoch; NULL: even shares. */
const uint32_t *ftl_batch_weights_in(const ftl_state_registry *r, int world, uint64_t view_epoch);

/* FTL_ERR_INVALID with the diag naming the setting and the fix for a configuration that cannot work. */
ftl_err ftl_batch_config_check(const ftl_batch_config *b);
/* FTL_GLOBAL_BATCH, FTL_MAX_BATCH_PER_RANK, FTL_REPRODUCIBLE from s into b (unset leaves a field);
 * FTL_ERR_INVALID with the diag naming one. Each alone: ftl_batch_config_check judges them together. */
ftl_err ftl_batch_config_from_settings(ftl_batch_config *b, const ftl_settings *s);

/* Fills the sampler's part of info (indices, and the global batch's fields) for rank of world at the
 * registry's position. FTL_ERR_SYSTEM, the diag saying so, when the indices do not fit in memory. */
ftl_err ftl_batch_fill_step(ftl_state_registry *r, int rank, int world, ftl_step_info *info);
/* Where a successful step of world ranks that started at (*epoch, *pos) leaves the sampler. */
void ftl_batch_move(const ftl_state_registry *r, int world, uint64_t *epoch, uint64_t *pos);
/* ftl_sampler_peek (ftl/execute.h) over the registry's settings: what ftl_batch_fill_step would hand rank of
 * world at (*epoch, *pos), into out (capacity cap), *n of them; then the position after that step. An error
 * with the diag saying why. */
ftl_err ftl_batch_peek(const ftl_state_registry *r, int world, int rank, uint64_t *epoch, uint64_t *pos,
		       uint64_t *out, size_t cap, size_t *n);

#endif
