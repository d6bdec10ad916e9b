/* Suspicion and Lifeguard on the simulator: a paused node that resumes in time refutes and stays
 * alive; sustained packet loss causes no false death; a slow node does not get healthy peers killed;
 * a node paused past its suspicion is declared dead and comes back when it resumes. */
#include "sim_test.h"

static void test_paused_node_that_resumes_in_time_refutes_and_stays_alive(void **state)
{
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, 16, FTL_PROFILE_TRAIN, &w);
	ftl_sim_run_for(sim, 1 * SEC);
	int victim = 5;
	/* Long enough to be probed and suspected (a probe that starts in its first 60 ms fails), shorter than
	 * that and a confirming probe after it (two probe timeouts), so no confirmation can come and the
	 * suspicion waits its longest: the victim refutes. Twelve pauses, as one is suspected about half the
	 * time. */
	int64_t pause = o.config.probe_interval_us + o.config.probe_timeout_us * 3 / 2;
	int suspected_before = 0;
	for (int round = 0; round < 12; round++) {
		ftl_sim_pause(sim, victim);
		ftl_sim_run_for(sim, pause);
		suspected_before += ftl_sim_count_seeing(sim, victim, FTL_MEMBER_SUSPECT);
		ftl_sim_resume(sim, victim);
		ftl_sim_run_for(sim, 2 * SEC);
	}
	printf("suspected by %d observers over 12 pauses; refutations %llu\n", suspected_before,
	       (unsigned long long)ftl_swim_get_stats(ftl_sim_node(sim, victim))->refutations);
	assert_true(suspected_before > 0); /* the pause was long enough to matter */
	assert_true(ftl_swim_get_stats(ftl_sim_node(sim, victim))->refutations > 0);
	assert_int_equal(w.false_deaths, 0);
	assert_int_equal(ftl_sim_count_seeing(sim, victim, FTL_MEMBER_ALIVE), 15);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_paused_past_suspicion_is_dead_then_rejoins_alive(void **state)
{
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, 16, FTL_PROFILE_TRAIN, &w);
	int victim = 3;
	w.may_die[victim] = true;
	ftl_watch_reset(&w, victim, FTL_EVENT_DEAD);
	ftl_sim_run_for(sim, 1 * SEC);
	ftl_sim_pause(sim, victim);
	ftl_sim_run_for(sim, ftl_swim_detection_bound_us(&o.config, 16));
	assert_int_equal(ftl_sim_count_seeing(sim, victim, FTL_MEMBER_DEAD), 15);
	ftl_sim_resume(sim, victim);
	int64_t took = sim_run_until_true(sim, 30 * SEC, 10 * MS, sim_all_alive, 0);
	printf("back alive everywhere %.3f s after resuming\n", (double)took / 1e6);
	assert_true(took >= 0);
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void no_false_death_under_loss(ftl_swim_profile profile)
{
	ftl_sim_options o = {0};
	ftl_sim_options_default(&o, 64, profile);
	o.loss = 0.10;
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, 64, profile, &w);
	ftl_sim_run_for(sim, 600 * SEC);
	const ftl_sim_stats *st = ftl_sim_get_stats(sim);
	uint64_t suspicions = 0, refutations = 0;
	for (int i = 0; i < 64; i++) {
		suspicions += ftl_swim_get_stats(ftl_sim_node(sim, i))->probes_failed;
		refutations += ftl_swim_get_stats(ftl_sim_node(sim, i))->refutations;
	}
	printf("%s: 64 nodes, 10%% loss, 600 s: %llu datagrams, %llu lost, %llu failed probes, %llu refutations, "
	       "%d false deaths\n",
	       ftl_swim_profile_strs[profile], (unsigned long long)st->delivered, (unsigned long long)st->lost,
	       (unsigned long long)suspicions, (unsigned long long)refutations, w.false_deaths);
	assert_true(suspicions > 0); /* the loss did bite */
	assert_int_equal(w.false_deaths, 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(ftl_sim_count_seeing(sim, i, FTL_MEMBER_DEAD), 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_64_nodes_10pct_loss_10_minutes_no_false_death_train(void **state)
{
	no_false_death_under_loss(FTL_PROFILE_TRAIN);
}

static void test_64_nodes_10pct_loss_10_minutes_no_false_death_lan(void **state)
{
	no_false_death_under_loss(FTL_PROFILE_LAN);
}

static void test_slow_node_does_not_get_healthy_peers_declared_dead(void **state)
{
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, 32, FTL_PROFILE_TRAIN, &w);
	int slow = 7;
	w.may_die[slow] = true; /* it may well be declared dead itself: it is the sick one */
	/* Every datagram to it is handled later than any probe timeout. */
	ftl_sim_set_slow(sim, slow, o.config.probe_interval_us * 2);
	ftl_sim_run_for(sim, 120 * SEC);
	ftl_swim *s = ftl_sim_node(sim, slow);
	printf("slow node: health score %d, %llu failed probes; false deaths of others %d\n",
	       ftl_swim_health_score(s), (unsigned long long)ftl_swim_get_stats(s)->probes_failed, w.false_deaths);
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]); /* one test by name, to replay a seed */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paused_node_that_resumes_in_time_refutes_and_stays_alive),
		cmocka_unit_test(test_paused_past_suspicion_is_dead_then_rejoins_alive),
		cmocka_unit_test(test_64_nodes_10pct_loss_10_minutes_no_false_death_train),
		cmocka_unit_test(test_64_nodes_10pct_loss_10_minutes_no_false_death_lan),
		cmocka_unit_test(test_slow_node_does_not_get_healthy_peers_declared_dead),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
