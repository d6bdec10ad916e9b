/* The rebalance policy's weights (train/rebalance.h), on a simulated synchronous job: ranks whose compute
 * per sample differs converge to equal busy times within a few exchanges, and then to a step no longer than
 * the healthy ranks alone would take; a balanced job, or noise inside the dead band, moves nothing; whole
 * micro-shards settle instead of swinging between two equally good splits; a rank that all but stops keeps
 * its floor; the weights are the same bits from the same table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "train/global_batch.h"
#include "train/rebalance.h"

#define RANKS 4
#define BATCH 128
#define COMM_US 2000 /* the collective once every rank has arrived */

static const ftl_rebalance_split plain = {BATCH, 0, false};

/* ftl_rebalance's verdict (it must not fail here). */
static bool moves(const ftl_pace_window *w, uint32_t n, const uint32_t *old, const ftl_rebalance_split *split,
		  uint32_t *out)
{
	bool is_moved = true;
	assert_int_equal(ftl_rebalance(w, n, old, split, out, &is_moved), FTL_OK);
	return is_moved;
}

/* One window of a synchronous step: rank i computes us_per_sample[i] per sample of its share plus
 * fixed_us; every rank's step lasts until the last one arrives, then the collective. */
static uint64_t simulate_split(const uint64_t *us_per_sample, uint64_t fixed_us, const uint32_t *weights,
			       const ftl_rebalance_split *split, ftl_pace_window *w)
{
	uint64_t compute[RANKS], slowest = 0;
	for (int r = 0; r < RANKS; r++) {
		ftl_batch_share s;
		ftl_batch_share_of(split->global_batch, split->micro, split->is_reproducible, RANKS, r, weights, &s);
		compute[r] = us_per_sample[r] * s.count + fixed_us;
		slowest = compute[r] > slowest ? compute[r] : slowest;
	}
	uint64_t step = slowest + COMM_US;
	for (int r = 0; r < RANKS; r++)
		w[r] = (ftl_pace_window){1, FTL_PACE_WINDOW_STEPS, FTL_PACE_WINDOW_STEPS * step,
					 FTL_PACE_WINDOW_STEPS * (step - compute[r])};
	return step;
}

static uint64_t simulate(const uint64_t *us_per_sample, uint64_t fixed_us, const uint32_t *weights,
			 ftl_pace_window *w)
{
	return simulate_split(us_per_sample, fixed_us, weights, &plain, w);
}

static void test_a_rank_twice_as_slow_per_sample_ends_with_half_the_samples_and_the_step_of_three(void **state)
{
	const uint64_t per_sample[RANKS] = {1000, 1000, 1000, 2000};
	ftl_pace_window w[RANKS];
	uint32_t weights[RANKS], next[RANKS];
	const uint32_t *in_force = NULL;
	uint64_t first = simulate(per_sample, 5000, NULL, w), step = first;
	int n_moves = 0;
	for (int exchange = 0; exchange < 8; exchange++) {
		if (moves(w, RANKS, in_force, &plain, next)) {
			memcpy(weights, next, sizeof weights);
			in_force = weights;
			n_moves++;
		}
		step = simulate(per_sample, 5000, in_force, w);
	}
	assert_true(n_moves >= 1 && n_moves <= 4);
	ftl_batch_share slow;
	ftl_batch_share_of(BATCH, 0, false, RANKS, 3, in_force, &slow);
	/* speeds 1, 1, 1, 1/2: the slow rank's fair part is 1/7 of 128, about 18 */
	assert_in_range(slow.count, 15, 22);
	/* three healthy ranks alone: 43 samples each, 43 ms + 5 + 2 */
	uint64_t three_healthy = 1000 * ((BATCH + 2) / 3) + 5000 + COMM_US;
	assert_true(step <= three_healthy);
	assert_true(step < first);
	/* converged: the next exchange moves nothing */
	assert_false(moves(w, RANKS, in_force, &plain, next));
}

static void test_a_balanced_job_and_noise_inside_the_dead_band_move_nothing(void **state)
{
	ftl_pace_window w[RANKS];
	uint32_t out[RANKS] = {7, 7, 7, 7};
	const uint64_t even[RANKS] = {1000, 1000, 1000, 1000}, noisy[RANKS] = {1000, 1010, 990, 1030};
	simulate(even, 5000, NULL, w);
	assert_false(moves(w, RANKS, NULL, &plain, out));
	simulate(noisy, 5000, NULL, w);
	assert_false(moves(w, RANKS, NULL, &plain, out));
	assert_int_equal(out[0], 7); /* untouched */
}

static void test_a_rank_that_all_but_stops_keeps_a_quarter_of_an_even_share(void **state)
{
	ftl_pace_window w[RANKS];
	uint32_t out[RANKS];
	const uint64_t stalled[RANKS] = {1000, 1000, 1000, 1000000};
	simulate(stalled, 0, NULL, w);
	assert_true(moves(w, RANKS, NULL, &plain, out));
	assert_int_equal(out[3], FTL_REBALANCE_TOTAL / RANKS / FTL_REBALANCE_FLOOR);
	assert_true(out[0] > FTL_REBALANCE_TOTAL / RANKS);
}

static void test_the_same_table_gives_the_same_weights_and_a_short_window_none(void **state)
{
	ftl_pace_window w[RANKS];
	uint32_t a[RANKS], b[RANKS];
	const uint64_t per_sample[RANKS] = {1000, 1300, 1000, 2000};
	simulate(per_sample, 3000, NULL, w);
	assert_true(moves(w, RANKS, NULL, &plain, a));
	assert_true(moves(w, RANKS, NULL, &plain, b));
	assert_memory_equal(a, b, sizeof a);
	w[2].steps = 0; /* a rank without a window (a joiner's): no move */
	assert_false(moves(w, RANKS, NULL, &plain, a));
	assert_false(moves(w, 1, NULL, &plain, a));
}

/* Reproducible mode: whole micro-shards of 8 (16 a step); a rank three times as slow settles on a whole
 * number of shards, and the shares stop moving once no move shortens the step. */
static void test_whole_micro_shards_settle(void **state)
{
	const ftl_rebalance_split shards = {BATCH, 8, true};
	const uint64_t per_sample[RANKS] = {300, 300, 300, 900};
	ftl_pace_window w[RANKS];
	uint32_t weights[RANKS], next[RANKS];
	const uint32_t *in_force = NULL;
	simulate_split(per_sample, 0, NULL, &shards, w);
	int last_move = -1;
	for (int exchange = 0; exchange < 12; exchange++) {
		if (moves(w, RANKS, in_force, &shards, next)) {
			memcpy(weights, next, sizeof weights);
			in_force = weights;
			last_move = exchange;
		}
		simulate_split(per_sample, 0, in_force, &shards, w);
	}
	assert_true(last_move >= 0 && last_move < 6);
	ftl_batch_share slow;
	ftl_batch_share_of(BATCH, 8, true, RANKS, 3, in_force, &slow);
	assert_in_range(slow.count / 8, 1, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_rank_twice_as_slow_per_sample_ends_with_half_the_samples_and_the_step_of_three),
		cmocka_unit_test(test_a_balanced_job_and_noise_inside_the_dead_band_move_nothing),
		cmocka_unit_test(test_whole_micro_shards_settle),
		cmocka_unit_test(test_a_rank_that_all_but_stops_keeps_a_quarter_of_an_even_share),
		cmocka_unit_test(test_the_same_table_gives_the_same_weights_and_a_short_window_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
