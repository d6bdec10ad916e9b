/* The rebalance policy (FTL_SLOW_POLICY=rebalance, issue "Failures as they come in a cluster", slow
 * workers): each rank's share of the fixed global batch follows its measured speed, so a rank that computes
 * a sample in twice the time takes about half the samples, and no rank waits for another.
 *
 * What a rank's speed is: its busy time per step, the step's wall time minus the time it had a collective in
 * flight (pace.h), is its compute; a rank that arrives last at every collective has the longest. The window's
 * steps ran with the weights in force, so a rank's samples per busy microsecond is proportional to
 * weight / busy, and the proposed weights are that, normalised. Its fixed point is equal busy times, which
 * is what a synchronous step wants; a per-step cost that does not scale with samples only slows the
 * convergence, never moves the fixed point. A rank keeps at least a quarter of an even share (a rank that
 * stalls once must not be starved for a window).
 *
 * When to move: samples move in whole units (a sample, or a micro-shard in reproducible mode), so equal busy
 * times may be out of reach, and two splits may be equally good; every move makes a data loader's prefetched
 * batches stale. So the proposal is taken only when the busy times differ by FTL_REBALANCE_SPREAD of the
 * median step or more, and the step it predicts (each rank's busy time scaled by its new count of samples
 * over its old) is shorter than today's by 1/FTL_REBALANCE_GAIN or more.
 *
 * Integers throughout: every rank computes the weights from the same exchanged table, and must get the
 * same bits whatever its compiler does with floating point; the split itself is global_batch.c's. Pure. */
#ifndef FTL_TRAIN_REBALANCE_H
#define FTL_TRAIN_REBALANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "ftl/error.h"
#include "pace.h"

#define FTL_REBALANCE_TOTAL 65536u   /* the weights of a view add up to about this */
#define FTL_REBALANCE_FLOOR 4u       /* a rank keeps at least 1/FLOOR of an even share */
#define FTL_REBALANCE_SPREAD 20u     /* busy times must differ by 1/SPREAD of the median step to move */
#define FTL_REBALANCE_GAIN 40u       /* ... and the predicted step be shorter by 1/GAIN */

/* How a step is dealt (global_batch.h): the global batch, and its micro-shards in reproducible mode. */
typedef struct ftl_rebalance_split {
	uint64_t global_batch;
	uint32_t micro;
	bool is_reproducible;
} ftl_rebalance_split;

/* New weights for the n ranks from their windows (every one measured in the view: ftl_pace_add's rows are
 * non-zero), given the weights the windows ran with (old, NULL: even) and how a step is dealt. Fills out[n]
 * and sets *is_moved when the move is worth making (above); otherwise leaves out untouched. FTL_ERR_SYSTEM,
 * the diag saying so, when out of memory: the caller must then fail the step, since the other ranks may
 * have moved. */
ftl_err ftl_rebalance(const ftl_pace_window *windows, uint32_t n, const uint32_t *old,
		      const ftl_rebalance_split *split, uint32_t *out, bool *is_moved);

#endif
