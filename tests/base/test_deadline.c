/* base/deadline.c: a loop timer armed for a deadline never fires before it, fires at once for one past,
 * and never sleeps longer than its cap (nothing due is INT64_MAX); a condition variable's absolute time is
 * now plus the wait, normalized. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "base/deadline.h"

static void test_timer_never_fires_early_and_never_sleeps_past_its_cap(void **state)
{
	assert_int_equal(ftl_deadline_timer_ms(1000, 1000, 60000), 0);
	assert_int_equal(ftl_deadline_timer_ms(500, 1000, 60000), 0);
	assert_int_equal(ftl_deadline_timer_ms(1001, 1000, 60000), 1);   /* 1 us away: a whole ms */
	assert_int_equal(ftl_deadline_timer_ms(3000, 1000, 60000), 2);
	assert_int_equal(ftl_deadline_timer_ms(3001, 1000, 60000), 3);
	assert_int_equal(ftl_deadline_timer_ms(FTL_NO_DEADLINE, 1000, 60000), 60000);
	assert_int_equal(ftl_deadline_timer_ms(FTL_NO_DEADLINE, INT64_MIN, 60000), 60000);
	assert_int_equal(ftl_deadline_min(5, FTL_NO_DEADLINE), 5);
	assert_int_equal(ftl_deadline_min(FTL_NO_DEADLINE, -5), -5);
}

static int64_t us_of(struct timespec t) { return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000; }

static void test_monotonic_deadline_is_now_plus_the_wait_normalized(void **state)
{
	(void)state;
	const int64_t waits[] = {0, 1, 999999, 1000000, 1999999, 2500000, -5};
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		struct timespec before;
		clock_gettime(CLOCK_MONOTONIC, &before);
		struct timespec t = ftl_deadline_monotonic_in(waits[i]);
		struct timespec after;
		clock_gettime(CLOCK_MONOTONIC, &after);
		int64_t wait = waits[i] > 0 ? waits[i] : 0;
		assert_true(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L);
		assert_true(us_of(t) >= us_of(before) + wait);
		assert_true(us_of(t) <= us_of(after) + wait);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timer_never_fires_early_and_never_sleeps_past_its_cap),
		cmocka_unit_test(test_monotonic_deadline_is_now_plus_the_wait_normalized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
