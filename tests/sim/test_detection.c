/* Crash detection on the simulator: a crashed node is marked dead by every survivor within the bound
 * the profile's formula gives (profile.h), and no survivor is ever marked dead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "watch.h"

static void crash_one_and_check(ftl_swim_profile profile, int n)
{
	ftl_sim_options o;
	ftl_sim_options_default(&o, n, profile);
	ftl_sim *sim = ftl_sim_new(&o);
	ftl_watch w;
	int victim = n / 2;
	ftl_watch_init(&w, sim, victim, FTL_EVENT_DEAD);
	w.may_die[victim] = true;
	ftl_sim_run_for(sim, 5 * o.config.probe_interval_us); /* settle */
	int64_t crash_at = ftl_sim_now(sim);
	ftl_sim_crash(sim, victim);
	int64_t bound = ftl_swim_detection_bound_us(&o.config, n);
	while (ftl_sim_now(sim) - crash_at < bound && ftl_watch_count(&w, sim) < n - 1)
		ftl_sim_run_for(sim, o.config.gossip_interval_us);
	int seen = ftl_watch_count(&w, sim);
	double took = (double)(ftl_watch_last(&w, sim) - crash_at) / 1e6;
	printf("%s n=%d: %d/%d survivors saw the crash dead, the last after %.3f s (bound %.3f s)\n",
	       ftl_swim_profile_strs[profile], n, seen, n - 1, took, (double)bound / 1e6);
	assert_int_equal(seen, n - 1);
	assert_int_equal(ftl_sim_count_seeing(sim, victim, FTL_MEMBER_DEAD), n - 1);
	ftl_sim_run_for(sim, bound); /* and nobody else dies afterwards */
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_crash_of_1_in_100_is_detected_by_all_within_bound_train(void **state)
{
	crash_one_and_check(FTL_PROFILE_TRAIN, 100);
}

static void test_crash_of_1_in_100_is_detected_by_all_within_bound_lan(void **state)
{
	crash_one_and_check(FTL_PROFILE_LAN, 100);
}

static void test_crash_of_1_in_100_is_detected_by_all_within_bound_local(void **state)
{
	crash_one_and_check(FTL_PROFILE_LOCAL, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_of_1_in_100_is_detected_by_all_within_bound_train),
		cmocka_unit_test(test_crash_of_1_in_100_is_detected_by_all_within_bound_lan),
		cmocka_unit_test(test_crash_of_1_in_100_is_detected_by_all_within_bound_local),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
