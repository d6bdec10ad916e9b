/* Leaving, restarting and forgetting, on the simulator: a graceful leave shows `left` everywhere and
 * never `dead`; a restart with the same name and the next generation replaces the old entry everywhere,
 * whether or not the old one was already declared dead; dead members are reaped after reap_after. */
#include "sim_test.h"

static void test_graceful_leave_shows_left_everywhere_never_dead(void **state)
{
	const int n = 16;
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, n, FTL_PROFILE_TRAIN, &w);
	int leaver = 9;
	w.may_die[leaver] = true;
	ftl_watch_reset(&w, leaver, FTL_EVENT_LEFT);
	ftl_sim_run_for(sim, 1 * SEC);
	ftl_sim_leave(sim, leaver);
	int64_t t = 0;
	while (!ftl_swim_leave_done(ftl_sim_node(sim, leaver)) && t < 5 * SEC) {
		ftl_sim_run_for(sim, 10 * MS);
		t += 10 * MS;
	}
	assert_true(ftl_swim_leave_done(ftl_sim_node(sim, leaver)));
	ftl_sim_crash(sim, leaver); /* the process exits after its leave went out */
	ftl_sim_run_for(sim, 5 * SEC);
	printf("leave sent in %.2f s; %d of %d saw it left, %d dead events\n", (double)t / 1e6,
	       ftl_watch_count(&w, sim), n - 1, w.subject_deaths);
	assert_int_equal(ftl_watch_count(&w, sim), n - 1);
	assert_int_equal(ftl_sim_count_seeing(sim, leaver, FTL_MEMBER_LEFT), n - 1);
	assert_int_equal(w.subject_deaths, 0);
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void restart_and_check(bool is_after_death)
{
	const int n = 16;
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, n, FTL_PROFILE_TRAIN, &w);
	int victim = 4;
	w.may_die[victim] = true;
	ftl_sim_run_for(sim, 1 * SEC);
	ftl_sim_crash(sim, victim);
	if (is_after_death)
		ftl_sim_run_for(sim, ftl_swim_detection_bound_us(&o.config, n));
	ftl_watch_reset(&w, victim, FTL_EVENT_JOIN);
	ftl_sim_restart(sim, victim);
	int64_t took = sim_run_until_true(sim, 30 * SEC, 10 * MS, sim_all_alive, 0);
	printf("restart %s death detection: new generation alive everywhere after %.3f s\n",
	       is_after_death ? "after" : "before", (double)took / 1e6);
	assert_true(took >= 0);
	assert_int_equal(ftl_sim_count_seeing(sim, victim, FTL_MEMBER_ALIVE), n - 1);
	assert_int_equal(ftl_watch_count(&w, sim), n - 1); /* a join event of the new life on every node */
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_restart_after_death_replaces_old_entry_everywhere(void **state) { restart_and_check(true); }

static void test_restart_before_detection_replaces_old_entry_everywhere(void **state) { restart_and_check(false); }

static void test_dead_members_are_reaped_after_reap_after(void **state)
{
	const int n = 8;
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, n, FTL_PROFILE_TRAIN, &w);
	int victim = 2;
	w.may_die[victim] = true;
	ftl_watch_reset(&w, victim, FTL_EVENT_REAP);
	ftl_sim_crash(sim, victim);
	ftl_sim_run_for(sim, ftl_swim_detection_bound_us(&o.config, n) + o.config.reap_after_us * 3 / 2);
	assert_int_equal(ftl_watch_count(&w, sim), n - 1);
	for (int i = 0; i < n; i++)
		if (i != victim)
			assert_null(ftl_swim_find(ftl_sim_node(sim, i), ftl_sim_name(sim, victim)));
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_graceful_leave_shows_left_everywhere_never_dead),
		cmocka_unit_test(test_restart_after_death_replaces_old_entry_everywhere),
		cmocka_unit_test(test_restart_before_detection_replaces_old_entry_everywhere),
		cmocka_unit_test(test_dead_members_are_reaped_after_reap_after),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
