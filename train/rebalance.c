/* The rebalance policy's weights (rebalance.h): weight / busy time, normalised, with a floor; taken when the
 * busy times differ and the step they predict is shorter. */
#include "rebalance.h"

#include <stdlib.h>

#include "base/diag.h"
#include "global_batch.h"

static uint64_t per_step(uint64_t total_us, uint64_t steps)
{
	return steps ? total_us / steps : 0;
}

/* A rank's compute per step: its step time less its time with a collective in flight, at least 1 µs. */
static uint64_t busy_us(const ftl_pace_window *w)
{
	uint64_t comm = w->comm_us < w->step_us ? w->comm_us : w->step_us;
	uint64_t busy = per_step(w->step_us - comm, w->steps);
	return busy ? busy : 1;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Whether the busy times differ by 1/SPREAD of the median step (the upper one of an even count) or more. */
static bool is_spread(const ftl_pace_window *windows, uint32_t n, uint64_t *scratch)
{
	uint64_t least = UINT64_MAX, most = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t b = busy_us(&windows[i]);
		least = b < least ? b : least;
		most = b > most ? b : most;
		scratch[i] = per_step(windows[i].step_us, windows[i].steps);
	}
	qsort(scratch, n, sizeof *scratch, by_value);
	return scratch[n / 2] > 0 && (most - least) * FTL_REBALANCE_SPREAD >= scratch[n / 2];
}

/* The weights weight / busy, normalised to TOTAL, at least the floor. */
static void propose(const ftl_pace_window *windows, uint32_t n, const uint32_t *old, uint64_t *rate, uint32_t *out)
{
	/* rate_i = weight_i / busy_i in units of 2^24 / µs: a weight <= 2^16 keeps it below 2^40, their sum
	 * below 2^52, and rate * TOTAL below 2^56 */
	uint64_t even = FTL_REBALANCE_TOTAL / n, rates = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t w = old != NULL ? old[i] : even;
		rate[i] = (w << 24) / busy_us(&windows[i]);
		rates += rate[i];
	}
	uint64_t floor = even / FTL_REBALANCE_FLOOR ? even / FTL_REBALANCE_FLOOR : 1;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t w = rates ? rate[i] * FTL_REBALANCE_TOTAL / rates : even;
		out[i] = (uint32_t)(w > floor ? w : floor);
	}
}

/* Rank i's samples of a whole step under weights (NULL: even). */
static uint64_t samples_of(const ftl_rebalance_split *s, uint32_t n, uint32_t i, const uint32_t *weights)
{
	ftl_batch_share share;
	ftl_batch_share_of(s->global_batch, s->micro, s->is_reproducible, (int)n, (int)i, weights, &share);
	return share.count;
}

/* Whether the step the new weights predict (each busy time scaled by the rank's new samples over its old;
 * a rank that had none keeps its time) is shorter than today's by 1/GAIN or more. */
static bool is_gain(const ftl_pace_window *windows, uint32_t n, const uint32_t *old, const uint32_t *proposed,
		    const ftl_rebalance_split *split)
{
	uint64_t now = 0, then = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t busy = busy_us(&windows[i]), before = samples_of(split, n, i, old);
		uint64_t after = samples_of(split, n, i, proposed);
		uint64_t predicted = before ? busy * after / before : busy;
		now = busy > now ? busy : now;
		then = predicted > then ? predicted : then;
	}
	return then * FTL_REBALANCE_GAIN <= now * (FTL_REBALANCE_GAIN - 1);
}

ftl_err ftl_rebalance(const ftl_pace_window *windows, uint32_t n, const uint32_t *old,
		      const ftl_rebalance_split *split, uint32_t *out, bool *is_moved)
{
	*is_moved = false;
	if (n < 2)
		return FTL_OK;
	for (uint32_t i = 0; i < n; i++)
		if (windows[i].steps == 0)
			return FTL_OK;
	uint64_t *scratch = malloc(n * sizeof *scratch);
	uint32_t *proposed = malloc(n * sizeof *proposed);
	ftl_err e = FTL_OK;
	if (scratch == NULL || proposed == NULL) {
		e = ftl_diag_set(FTL_ERR_SYSTEM, "rebalance: out of memory for the shares of %u ranks", n);
	} else if (is_spread(windows, n, scratch)) {
		propose(windows, n, old, scratch, proposed);
		*is_moved = is_gain(windows, n, old, proposed, split);
		for (uint32_t i = 0; *is_moved && i < n; i++)
			out[i] = proposed[i];
	}
	free(scratch);
	free(proposed);
	return e;
}
