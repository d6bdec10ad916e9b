/* Dissemination on the simulator: news of a join and of a death reaches all of 1,000 nodes within
 * 2*ceil(log2 N) gossip rounds of the first node knowing it. (A node gossips fresh news at once rather
 * than at its next gossip tick, so in practice it takes one or two rounds.) */
#include <math.h>

#include "sim_test.h"

static int first_seen(const ftl_watch *w, ftl_sim *sim, int64_t *t)
{
	*t = INT64_MAX;
	for (int i = 0; i < ftl_sim_size(sim); i++)
		if (ftl_sim_is_running(sim, i) && i != w->subject && w->seen_at[i] >= 0 && w->seen_at[i] < *t)
			*t = w->seen_at[i];
	return *t != INT64_MAX;
}

static ftl_watch *current;
static int watch_complete(ftl_sim *sim, int arg) { return ftl_watch_count(current, sim) >= arg; }

static void check_rounds(const char *what, ftl_watch *w, ftl_sim *sim, const ftl_swim_config *cfg, int n)
{
	int64_t first;
	assert_true(first_seen(w, sim, &first));
	double rounds = (double)(ftl_watch_last(w, sim) - first) / (double)cfg->gossip_interval_us;
	int limit = 2 * (int)ceil(log2((double)n));
	printf("%s reached %d of %d nodes in %.1f gossip rounds (limit %d)\n", what, ftl_watch_count(w, sim),
	       ftl_sim_running_count(sim, w->subject), rounds, limit);
	assert_true(rounds <= limit);
}

static void test_join_and_death_reach_1000_nodes_within_2_log2_n_rounds(void **state)
{
	const int n = 1000;
	ftl_sim_options o;
	ftl_sim_options_default(&o, n, FTL_PROFILE_LAN);
	o.capacity = n + 1;
	o.is_insecure = true; /* 1,000 nodes: leave the crypto to the keyring tests */
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, n, FTL_PROFILE_LAN, &w);
	current = &w;
	ftl_sim_run_for(sim, 2 * SEC);

	ftl_watch_reset(&w, n, FTL_EVENT_JOIN);
	int joiner = ftl_sim_add_node(sim);
	assert_int_equal(joiner, n);
	assert_true(sim_run_until_true(sim, 60 * SEC, 10 * MS, watch_complete, n) >= 0);
	check_rounds("join", &w, sim, &o.config, n + 1);

	int victim = 123;
	w.may_die[victim] = true;
	ftl_watch_reset(&w, victim, FTL_EVENT_DEAD);
	ftl_sim_crash(sim, victim);
	assert_true(sim_run_until_true(sim, 120 * SEC, 10 * MS, watch_complete, n - 1) >= 0);
	check_rounds("death", &w, sim, &o.config, n);
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_and_death_reach_1000_nodes_within_2_log2_n_rounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
