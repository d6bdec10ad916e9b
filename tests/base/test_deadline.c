/* base/deadline.c: a loop timer armed for a deadline never fires before it, fires at once for one past,
 * and never sleeps longer than its cap (nothing due is INT64_MAX). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timer_never_fires_early_and_never_sleeps_past_its_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
