/* Crash detection on the simulator: a crashed node is marked dead by every survivor within the bound
 * the profile's formula gives (profile.h), and no survivor is ever marked dead. Proof of death: a
 * crash (its address refuses) is declared by refusal, never by a suspicion timeout, within the refusal
 * bound (sooner still when a hint starts the check); a paused or partitioned node (accepting, or
 * silent) never takes that path and goes through suspicion as before. A host that vanishes (silent both
 * ways), hinted by the one member whose collective waits on it, is dead everywhere within two quick
 * probes and the shortest suspicion: the others confirm it at once. */
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

/* A converged cluster of n, settled, with the watch on the victim's deaths (it may die). */
static ftl_sim *settled(ftl_sim_options *o, int n, ftl_swim_profile profile, ftl_watch *w, int victim)
{
	ftl_sim_options_default(o, n, profile);
	ftl_sim *sim = ftl_sim_new(o);
	ftl_watch_init(w, sim, victim, FTL_EVENT_DEAD);
	w->may_die[victim] = true;
	ftl_sim_run_for(sim, 5 * o->config.probe_interval_us);
	return sim;
}

static int64_t run_until_all_saw(ftl_sim *sim, ftl_watch *w, const ftl_sim_options *o, int n, int64_t bound)
{
	int64_t start = ftl_sim_now(sim);
	while (ftl_sim_now(sim) - start < bound && ftl_watch_count(w, sim) < n - 1)
		ftl_sim_run_for(sim, o->config.gossip_interval_us);
	return ftl_watch_last(w, sim) - start;
}

static void crash_is_declared_by_refusal(ftl_swim_profile profile, int n, bool is_hinted)
{
	ftl_sim_options o;
	ftl_watch w;
	int victim = n / 2;
	ftl_sim *sim = settled(&o, n, profile, &w, victim);
	ftl_sim_crash(sim, victim);
	if (is_hinted)
		ftl_sim_hint(sim, victim + 1, victim); /* its ring neighbour's connection reset */
	int64_t bound = is_hinted ? ftl_swim_hinted_refusal_bound_us(&o.config, n)
				  : ftl_swim_refusal_bound_us(&o.config, n);
	int64_t took = run_until_all_saw(sim, &w, &o, n, bound);
	printf("%s n=%d%s: %d/%d survivors saw the crash dead, the last after %.3f s (refusal bound %.3f s, "
	       "suspicion bound %.3f s); %d declared by refusal, %d by suspicion\n",
	       ftl_swim_profile_strs[profile], n, is_hinted ? " hinted" : "", ftl_watch_count(&w, sim), n - 1,
	       (double)took / 1e6, (double)bound / 1e6, (double)ftl_swim_detection_bound_us(&o.config, n) / 1e6,
	       w.subject_deaths_by[FTL_DEATH_REFUSED], w.subject_deaths_by[FTL_DEATH_SUSPICION]);
	assert_int_equal(ftl_watch_count(&w, sim), n - 1);
	assert_true(took <= bound);
	assert_true(w.subject_deaths_by[FTL_DEATH_REFUSED] >= 1);
	assert_int_equal(w.subject_deaths_by[FTL_DEATH_SUSPICION], 0);
	ftl_sim_run_for(sim, ftl_swim_detection_bound_us(&o.config, n));
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

/* The victim is paused (is_partition false) or cut off both ways (true) for as long as the suspicion
 * path needs, hinted at by a neighbour all along: it is declared dead by suspicion, never by refusal. */
static void silence_never_takes_the_refusal_path(ftl_swim_profile profile, int n, bool is_partition)
{
	ftl_sim_options o;
	ftl_watch w;
	int victim = n / 2;
	ftl_sim *sim = settled(&o, n, profile, &w, victim);
	if (is_partition) {
		ftl_sim_set_group(sim, victim, 1);
		ftl_sim_block(sim, 0, 1, true);
		ftl_sim_block(sim, 1, 0, true);
		for (int i = 0; i < n; i++) /* the victim's own view of the others is no false death either */
			w.may_die[i] = true;
	} else {
		ftl_sim_pause(sim, victim);
	}
	int64_t bound = ftl_swim_detection_bound_us(&o.config, n);
	int64_t start = ftl_sim_now(sim);
	while (ftl_sim_now(sim) - start < bound && ftl_watch_count(&w, sim) < n - 1) {
		ftl_sim_hint(sim, victim + 1, victim);
		ftl_sim_run_for(sim, o.config.probe_interval_us);
	}
	printf("%s n=%d %s: %d/%d saw it dead after %.3f s (bound %.3f s); %d declared by suspicion, %d by "
	       "refusal; %llu refusals on the network\n",
	       ftl_swim_profile_strs[profile], n, is_partition ? "partitioned" : "paused", ftl_watch_count(&w, sim),
	       n - 1, (double)(ftl_watch_last(&w, sim) - start) / 1e6, (double)bound / 1e6,
	       w.subject_deaths_by[FTL_DEATH_SUSPICION], w.subject_deaths_by[FTL_DEATH_REFUSED],
	       (unsigned long long)ftl_sim_get_stats(sim)->refusals);
	assert_int_equal(ftl_watch_count(&w, sim), n - 1);
	assert_true(w.subject_deaths_by[FTL_DEATH_SUSPICION] >= 1);
	assert_int_equal(w.subject_deaths_by[FTL_DEATH_REFUSED], 0);
	assert_int_equal(ftl_sim_get_stats(sim)->refusals, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

/* The victim's link goes down (no refusal, no reset: a lost host) and the member whose collective waits
 * on it hints it once. Its quick probe fails and raises the suspicion; the others, told at once, probe the
 * victim themselves and confirm; the suspicion ends at its minimum. Before confirmations were probed for,
 * this took a probe period and a suspicion of three (0.4 s and more on train). */
static void test_lost_host_hinted_once_is_dead_everywhere_within_two_quick_probes_and_the_minimum(void **state)
{
	ftl_sim_options o;
	ftl_watch w;
	int n = 5, victim = 2;
	ftl_sim *sim = settled(&o, n, FTL_PROFILE_TRAIN, &w, victim);
	ftl_sim_set_group(sim, victim, 1);
	ftl_sim_block(sim, 0, 1, true);
	ftl_sim_block(sim, 1, 0, true);
	for (int i = 0; i < n; i++) /* the victim's own view of the others is no false death */
		w.may_die[i] = true;
	ftl_sim_hint(sim, victim + 1, victim);
	const ftl_swim_config *c = &o.config;
	int64_t bound = 2 * (2 * c->probe_timeout_us) + ftl_swim_suspicion_min_us(c, n) + 2 * c->gossip_interval_us;
	int64_t took = run_until_all_saw(sim, &w, &o, n, 2 * ftl_swim_detection_bound_us(c, n));
	printf("train n=%d lost host, hinted: %d/%d saw it dead after %.3f s (bound %.3f s); %d by suspicion\n", n,
	       ftl_watch_count(&w, sim), n - 1, (double)took / 1e6, (double)bound / 1e6,
	       w.subject_deaths_by[FTL_DEATH_SUSPICION]);
	assert_int_equal(ftl_watch_count(&w, sim), n - 1);
	assert_true(took <= bound);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_crash_is_declared_dead_by_refusal_within_the_refusal_bound_train(void **state)
{
	crash_is_declared_by_refusal(FTL_PROFILE_TRAIN, 100, false);
}

static void test_crash_is_declared_dead_by_refusal_within_the_refusal_bound_lan(void **state)
{
	crash_is_declared_by_refusal(FTL_PROFILE_LAN, 100, false);
}

static void test_hinted_crash_is_dead_everywhere_within_a_probe_timeout_and_the_spread(void **state)
{
	crash_is_declared_by_refusal(FTL_PROFILE_TRAIN, 32, true);
}

static void test_pause_never_takes_the_refusal_path(void **state)
{
	silence_never_takes_the_refusal_path(FTL_PROFILE_TRAIN, 32, false);
}

static void test_partition_never_takes_the_refusal_path(void **state)
{
	silence_never_takes_the_refusal_path(FTL_PROFILE_TRAIN, 32, true);
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
		cmocka_unit_test(test_crash_is_declared_dead_by_refusal_within_the_refusal_bound_train),
		cmocka_unit_test(test_crash_is_declared_dead_by_refusal_within_the_refusal_bound_lan),
		cmocka_unit_test(test_hinted_crash_is_dead_everywhere_within_a_probe_timeout_and_the_spread),
		cmocka_unit_test(test_pause_never_takes_the_refusal_path),
		cmocka_unit_test(test_lost_host_hinted_once_is_dead_everywhere_within_two_quick_probes_and_the_minimum),
		cmocka_unit_test(test_partition_never_takes_the_refusal_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
