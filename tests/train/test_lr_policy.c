/* The learning-rate policy's promises (ftl_lr_policy, include/ftl/elastic.h): the linear and square-root
 * rules, the ramp over warmup_steps after a view change, and a joiner whose hook has seen nothing computing
 * the same rate as a member that was there all along. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "ftl/elastic.h"

static ftl_step_info at(uint64_t step, uint64_t view, int world)
{
	return (ftl_step_info){.step = step, .view_epoch = view, .world_size = world};
}

static void test_rules_scale_the_base_rate_for_the_world(void **state)
{
	ftl_lr_policy p;
	assert_int_equal(ftl_lr_policy_init(&p, FTL_LR_LINEAR, 0.1, 4, 0), 0);
	assert_float_equal(ftl_lr_policy_target(&p, 8), 0.2, 1e-12);
	assert_float_equal(ftl_lr_policy_target(&p, 2), 0.05, 1e-12);
	assert_int_equal(ftl_lr_policy_init(&p, FTL_LR_SQRT, 0.1, 4, 0), 0);
	assert_float_equal(ftl_lr_policy_target(&p, 16), 0.2, 1e-12);
	assert_int_equal(ftl_lr_policy_init(&p, FTL_LR_CONSTANT, 0.1, 4, 0), 0);
	assert_float_equal(ftl_lr_policy_target(&p, 16), 0.1, 1e-12);
	assert_int_equal(ftl_lr_policy_init(&p, FTL_LR_LINEAR, 0.1, 0, 0), FTL_ERR_INVALID);
	assert_int_equal(ftl_lr_policy_init(&p, FTL_LR_LINEAR, -1, 4, 0), FTL_ERR_INVALID);
	assert_int_equal(ftl_lr_policy_init(&p, FTL_LR_LINEAR, NAN, 4, 0), FTL_ERR_INVALID);
}

/* 4 workers at 0.1, then a view of 2 at step 100: the rate moves to 0.05 over 10 steps, then stays. */
static void test_rate_ramps_to_the_new_target_after_a_view_change(void **state)
{
	ftl_lr_policy p;
	ftl_lr_policy_init(&p, FTL_LR_LINEAR, 0.1, 4, 10);
	double lr = 0.1;
	for (uint64_t s = 0; s < 100; s++) {
		ftl_step_info i = at(s, 1, 4);
		lr = ftl_lr_policy_step(&p, lr, &i);
	}
	assert_float_equal(lr, 0.1, 1e-12);
	for (uint64_t s = 100; s < 110; s++) {
		ftl_step_info i = at(s, 2, 2);
		double next = ftl_lr_policy_step(&p, lr, &i);
		assert_float_equal(next, 0.1 + (0.05 - 0.1) * (double)(s - 99) / 10, 1e-12);
		lr = next;
	}
	ftl_step_info later = at(150, 2, 2);
	assert_float_equal(ftl_lr_policy_step(&p, lr, &later), 0.05, 1e-12);
}

/* A joiner at a view change gets the job's last rate (synced state) and computes what the others do. */
static void test_joiner_computes_the_same_rate_as_the_old_members(void **state)
{
	ftl_lr_policy old, joiner;
	ftl_lr_policy_init(&old, FTL_LR_SQRT, 0.1, 4, 20);
	ftl_lr_policy_init(&joiner, FTL_LR_SQRT, 0.1, 4, 20);
	double lr_old = 0.1;
	for (uint64_t s = 0; s < 50; s++) {
		ftl_step_info i = at(s, s < 30 ? 3 : 4, s < 30 ? 4 : 3); /* a kill at step 30: view 4 of 3 */
		lr_old = ftl_lr_policy_step(&old, lr_old, &i);
	}
	double lr_joiner = lr_old; /* rank 0's state after the sync */
	for (uint64_t s = 50; s < 80; s++) {
		ftl_step_info i = at(s, 5, 5);
		lr_old = ftl_lr_policy_step(&old, lr_old, &i);
		lr_joiner = ftl_lr_policy_step(&joiner, lr_joiner, &i);
		assert_true(lr_old == lr_joiner);
	}
	assert_float_equal(lr_old, 0.1 * sqrt(5.0 / 4.0), 1e-12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_scale_the_base_rate_for_the_world),
		cmocka_unit_test(test_rate_ramps_to_the_new_target_after_a_view_change),
		cmocka_unit_test(test_joiner_computes_the_same_rate_as_the_old_members),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
