/* The slow-rank verdict (train/pace.h): a balanced job names no rank, with or without overlap; a rank the
 * others wait for is the suspect at once and slow after FTL_PACE_SLOW_WINDOWS windows in a row; a joiner's
 * short window or a window of another view gives no verdict; a job of 2 names its slow rank too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "train/pace.h"

#define MS 1000ULL

/* A window of 16 steps of step_ms each, comm_ms of them with a collective in flight. */
static ftl_pace_window window(uint64_t epoch, uint64_t step_ms, uint64_t comm_ms)
{
	return (ftl_pace_window){epoch, FTL_PACE_WINDOW_STEPS, FTL_PACE_WINDOW_STEPS * step_ms * MS,
				 FTL_PACE_WINDOW_STEPS * comm_ms * MS};
}

static void test_a_balanced_job_names_no_rank_even_when_collectives_overlap_compute(void **state)
{
	ftl_pace p;
	ftl_pace_init(&p);
	/* every rank had a collective in flight for most of its 100 ms step (DDP's buckets over backward) */
	ftl_pace_window w[4] = {window(7, 100, 80), window(7, 100, 78), window(7, 100, 83), window(7, 100, 80)};
	for (int i = 0; i < 5; i++)
		assert_int_equal(ftl_pace_add(&p, 7, w, 4), FTL_OK);
	assert_int_equal(p.suspect, -1);
	assert_int_equal(p.slow, -1);
	assert_true(p.rows[2].lead_ms < 5.0);
	assert_int_equal(p.exchanges, 5);
	ftl_pace_free(&p);
}

static void test_the_rank_the_others_wait_for_is_slow_after_three_windows(void **state)
{
	ftl_pace p;
	ftl_pace_init(&p);
	/* rank 1 computes 100 ms more: the others wait 100 ms of each 200 ms step for it */
	ftl_pace_window w[4] = {window(3, 200, 110), window(3, 200, 10), window(3, 200, 112), window(3, 200, 109)};
	for (int i = 1; i <= FTL_PACE_SLOW_WINDOWS; i++) {
		assert_int_equal(ftl_pace_add(&p, 3, w, 4), FTL_OK);
		assert_int_equal(p.suspect, 1);
		assert_int_equal(p.suspect_windows, i);
		assert_int_equal(p.slow, i == FTL_PACE_SLOW_WINDOWS ? 1 : -1);
	}
	assert_float_equal(p.rows[1].lead_ms, 100.0, 1e-9);
	assert_float_equal(p.rows[1].step_ms, 200.0, 1e-9);
	assert_true(p.rows[0].lead_ms < 0);
	/* it catches up: a balanced window ends the verdict at once */
	ftl_pace_window even[4] = {window(3, 100, 10), window(3, 100, 10), window(3, 100, 11), window(3, 100, 9)};
	assert_int_equal(ftl_pace_add(&p, 3, even, 4), FTL_OK);
	assert_int_equal(p.slow, -1);
	assert_int_equal(p.suspect_windows, 0);
	ftl_pace_free(&p);
}

static void test_a_small_lead_is_not_slowness(void **state)
{
	ftl_pace p;
	ftl_pace_init(&p);
	/* rank 2 is 10 % slower: the others wait 20 ms of a 200 ms step, under the quarter */
	ftl_pace_window w[3] = {window(1, 200, 30), window(1, 200, 31), window(1, 200, 10)};
	for (int i = 0; i < 4; i++)
		ftl_pace_add(&p, 1, w, 3);
	assert_int_equal(p.slow, -1);
	assert_int_equal(p.suspect, -1);
	ftl_pace_free(&p);
}

static void test_a_joiner_or_another_views_window_gives_no_verdict(void **state)
{
	ftl_pace p;
	ftl_pace_init(&p);
	ftl_pace_window w[3] = {window(5, 200, 110), window(5, 200, 110), window(5, 200, 5)};
	ftl_pace_add(&p, 5, w, 3);
	ftl_pace_add(&p, 5, w, 3);
	assert_int_equal(p.suspect_windows, 2);
	w[0].steps = FTL_PACE_WINDOW_STEPS / 2 - 1; /* a joiner that took part in a few steps only */
	ftl_pace_add(&p, 5, w, 3);
	assert_int_equal(p.suspect, -1);
	assert_int_equal(p.suspect_windows, 0);
	assert_float_equal(p.rows[2].lead_ms, 0.0, 0);
	w[0] = window(4, 200, 110); /* measured in the view before */
	ftl_pace_add(&p, 5, w, 3);
	assert_int_equal(p.suspect, -1);
	/* a new view starts the count over even when the same rank leads */
	ftl_pace_window next[3] = {window(6, 200, 110), window(6, 200, 110), window(6, 200, 5)};
	ftl_pace_add(&p, 6, next, 3);
	ftl_pace_add(&p, 6, next, 3);
	assert_int_equal(p.suspect, 2);
	assert_int_equal(p.suspect_windows, 2);
	assert_int_equal(p.slow, -1);
	ftl_pace_free(&p);
}

static void test_a_job_of_two_names_its_slow_rank(void **state)
{
	ftl_pace p;
	ftl_pace_init(&p);
	ftl_pace_window w[2] = {window(2, 120, 2), window(2, 120, 62)};
	for (int i = 0; i < FTL_PACE_SLOW_WINDOWS; i++)
		ftl_pace_add(&p, 2, w, 2);
	assert_int_equal(p.slow, 0);
	assert_float_equal(p.rows[0].lead_ms, 60.0, 1e-9);
	ftl_pace_window alone[1] = {window(2, 120, 0)};
	ftl_pace_add(&p, 2, alone, 1); /* one rank: nobody waits */
	assert_int_equal(p.suspect, -1);
	ftl_pace_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_balanced_job_names_no_rank_even_when_collectives_overlap_compute),
		cmocka_unit_test(test_the_rank_the_others_wait_for_is_slow_after_three_windows),
		cmocka_unit_test(test_a_small_lead_is_not_slowness),
		cmocka_unit_test(test_a_joiner_or_another_views_window_gives_no_verdict),
		cmocka_unit_test(test_a_job_of_two_names_its_slow_rank),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
