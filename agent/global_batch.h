/* The fixed global batch (ftl_batch_config, include/ftl/execute.h): which positions of a step each rank
 * takes whatever the world size (pure), and the training thread's side of it (the step's indices, how far
 * a step moves the sampler). */
#ifndef FTL_AGENT_GLOBAL_BATCH_H
#define FTL_AGENT_GLOBAL_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl/execute.h"

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
 * a shard's positions never depend on the world size. */
void ftl_batch_share_of(uint64_t step_len, uint32_t micro, bool is_reproducible, int world, int rank,
			ftl_batch_share *out);

/* The training thread's buffers for it (training.h holds one). */
typedef struct ftl_batch_runtime {
	uint64_t *indices;     /* the rank's indices of a step with a fixed global batch */
	size_t indices_cap;
	void *scratch;         /* ftl_allreduce_exact's integers */
	size_t scratch_bytes;
} ftl_batch_runtime;

void ftl_batch_runtime_free(ftl_batch_runtime *r);
/* -1 with err naming the setting and the fix for a configuration that cannot work. */
int ftl_batch_config_check(const ftl_batch_config *b, char *err, size_t len);
/* FTL_GLOBAL_BATCH, FTL_MAX_BATCH_PER_RANK, FTL_REPRODUCIBLE into b (unset leaves a field); -1 naming one. */
int ftl_batch_config_from_env(ftl_batch_config *b, char *err, size_t len);

/* In the state sync: rank 0's global batch settings to every member; FTL_ERR_INVALID, with a message naming
 * both, on a member whose own differ (a job whose ranks cut steps differently would train on garbage). */
ftl_err ftl_batch_check_against_rank0(ftl_agent *a);

struct ftl_training;
/* Fills the sampler's part of info (indices, and the global batch's fields) for rank of world at the
 * training's position. FTL_ERR_SYSTEM when the indices do not fit in memory. */
ftl_err ftl_batch_fill_step(struct ftl_training *t, int rank, int world, ftl_step_info *info);
/* How far a successful step of world ranks moves the sampler's position. */
uint64_t ftl_batch_advance(const struct ftl_training *t, int world);

#endif
