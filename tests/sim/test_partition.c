/* Partitions on the simulator: a 50/50 two-way partition makes each side declare the other dead, and
 * after healing every node sees all N alive again; a one-way partition heals the same way. */
#include "sim_test.h"

static void split(ftl_sim *sim, int n, bool is_two_way)
{
	for (int i = 0; i < n; i++)
		ftl_sim_set_group(sim, i, i < n / 2 ? 0 : 1);
	ftl_sim_block(sim, 0, 1, true);
	if (is_two_way)
		ftl_sim_block(sim, 1, 0, true);
}

static int sides_see_each_other_dead(ftl_sim *sim, int n)
{
	for (int i = 0; i < n / 2; i++)
		if (ftl_sim_count_seeing(sim, i, FTL_MEMBER_DEAD) < n / 2)
			return 0;
	return 1;
}

static void partition_then_heal(bool is_two_way)
{
	const int n = 20;
	ftl_sim_options o;
	ftl_sim_options_default(&o, n, FTL_PROFILE_TRAIN);
	o.reseed_interval_us = 2 * SEC;
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, n, FTL_PROFILE_TRAIN, &w);
	for (int i = 0; i < n; i++)
		w.may_die[i] = true;
	ftl_sim_run_for(sim, 1 * SEC);
	split(sim, n, is_two_way);
	int64_t split_took = sim_run_until_true(sim, 60 * SEC, 50 * MS, sides_see_each_other_dead, n);
	assert_true(split_took >= 0);
	ftl_sim_run_for(sim, 40 * SEC); /* past reaping: the sides have forgotten each other */
	ftl_sim_heal(sim);
	int64_t heal_took = sim_run_until_true(sim, 120 * SEC, 50 * MS, sim_all_alive, 0);
	printf("%s partition of %d: sides saw each other dead after %.2f s; all alive %.2f s after healing\n",
	       is_two_way ? "two-way" : "one-way", n, (double)split_took / 1e6, (double)heal_took / 1e6);
	assert_true(heal_took >= 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_two_way_50_50_partition_heals_to_all_alive(void **state) { partition_then_heal(true); }

static void test_one_way_partition_heals_to_all_alive(void **state) { partition_then_heal(false); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_way_50_50_partition_heals_to_all_alive),
		cmocka_unit_test(test_one_way_partition_heals_to_all_alive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
