/* The joined node (node/: membership, the member feed, the rendezvous, the abort and seed rules) at 1,000
 * members on the simulator, in the situations where those parts meet:
 *  - the coordinator crashes in the middle of a commit (part of the cluster holds the new view, part does
 *    not) while another member is dead: the next oldest takes over and one view of the survivors forms;
 *  - a partition cuts a rack off while joiners are settling: the majority side goes on with its own members
 *    only (the joiners on its side included) and the cut side commits and trains on nothing. (The
 *    heal is left to rdv_test_sim_quorum at small sizes: at 1,000 members the refutation storm that follows
 *    it takes about 50 virtual seconds, over a minute of CPU.)
 *  - every node's seed resolves to a node that has not started yet: no view forms while nobody can see
 *    anybody (expected_workers), and once the seed starts, the seed rule brings every node to it and one
 *    view of all, in one lineage, forms.
 * In every case no two different views ever hold one epoch of a lineage. FTL_SIM_NODES changes the size. */
#include "sim_test.h"

#include <stdlib.h>
#include <string.h>

#include "rendezvous/rdv_msg.h"

static int cluster_size(void)
{
	const char *env = getenv("FTL_SIM_NODES");
	return env && atoi(env) >= 8 ? atoi(env) : 1000;
}

/* n training members on the train profile (plaintext packets: faster at this scale), seeds re-resolved
 * every 2 s, settle 1 s, readies every 200 ms (the agent's). */
static void big_options(ftl_sim_options *o, int n)
{
	ftl_sim_options_default(o, n, FTL_PROFILE_TRAIN);
	o->capacity = n + 64;
	o->is_insecure = true;
	o->reseed_interval_us = 2 * SEC;
	o->is_training = true;
	o->rdv = (ftl_rdv_config){.min_workers = 1, .max_workers = (uint32_t)n + 64, .settle_us = 1 * SEC,
				  .ready_interval_us = 200 * MS};
}

static const ftl_rdv_view *view_of(ftl_sim *sim, int i) { return ftl_rdv_current(ftl_sim_rdv(sim, i)); }

/* How many nodes took a view of this epoch as members. */
static int members_took(const ftl_sim *sim, uint64_t epoch)
{
	int n, took = 0;
	const ftl_sim_record *rec = ftl_sim_records(sim, &n);
	for (int k = 0; k < n; k++)
		took += rec[k].epoch == epoch && rec[k].rank >= 0;
	return took;
}

static void test_coordinator_crash_during_a_commit_at_scale(void **state)
{
	int n = cluster_size();
	ftl_sim_options o;
	big_options(&o, n);
	ftl_sim *sim = ftl_sim_new(&o);
	int64_t took = ftl_sim_run_until_converged(sim, 60 * SEC);
	assert_true(took >= 0);
	uint64_t epoch = view_of(sim, 1)->epoch;
	printf("%d members: first view (epoch %llu) after %.2f s\n", n, (unsigned long long)epoch, (double)took / SEC);

	/* A member dies; the coordinator sends a third of its commits for the view without it, then crashes. */
	ftl_sim_crash_after_sends(sim, 0, RDV_MSG_COMMIT, n / 3);
	ftl_sim_crash(sim, n / 2);
	int64_t crashed_at = ftl_sim_now(sim);
	while (ftl_sim_is_running(sim, 0) && ftl_sim_now(sim) - crashed_at < 10 * SEC)
		ftl_sim_run_for(sim, 1 * MS);
	assert_false(ftl_sim_is_running(sim, 0));
	int holding = members_took(sim, epoch + 1); /* when the coordinator died */
	took = ftl_sim_run_until_converged(sim, 60 * SEC);
	printf("coordinator crashed mid-commit (%d of %d members held its epoch %llu then); survivors "
	       "converged on epoch %llu of %u led by %s %.2f s after the crash; %llu aborts\n", holding, n - 2,
	       (unsigned long long)epoch + 1, (unsigned long long)view_of(sim, 1)->epoch, view_of(sim, 1)->n,
	       view_of(sim, 1)->members[0].name, (double)(ftl_sim_now(sim) - crashed_at) / SEC,
	       (unsigned long long)ftl_sim_get_stats(sim)->aborts);
	assert_true(holding > 0 && holding < n - 2); /* it did crash in the middle of the commit */
	assert_true(took >= 0);
	assert_int_equal(view_of(sim, 1)->n, n - 2);
	assert_string_equal(view_of(sim, 1)->members[0].name, ftl_sim_name(sim, 1));
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_partition_while_joins_settle_at_scale(void **state)
{
	int n = cluster_size(), joiners = 16, cut = 20; /* a rack */
	ftl_sim_options o;
	big_options(&o, n);
	ftl_sim *sim = ftl_sim_new(&o);
	assert_true(ftl_sim_run_until_converged(sim, 60 * SEC) >= 0);
	uint64_t epoch = view_of(sim, 0)->epoch;

	for (int k = 0; k < joiners; k++)
		ftl_sim_add_node(sim);
	ftl_sim_run_for(sim, 300 * MS); /* the joiners are settling (1 s) */
	/* The last `cut` members and half of the joiners: a rack cut off both ways. */
	for (int i = 0; i < ftl_sim_size(sim); i++)
		ftl_sim_set_group(sim, i, (i >= n - cut && i < n) || (i >= n && (i - n) % 2 == 1) ? 1 : 0);
	ftl_sim_block(sim, 0, 1, true);
	ftl_sim_block(sim, 1, 0, true);
	ftl_sim_run_for(sim, 15 * SEC); /* the cut side sees the others die more slowly: few confirm it */

	int majority = n - cut + joiners / 2, waiting = 0;
	const ftl_rdv_view *v = view_of(sim, 0);
	printf("%d members + %d joiners, %d cut off while settling: majority at epoch %llu with %u members\n", n,
	       joiners, cut + joiners / 2, (unsigned long long)v->epoch, v->n);
	assert_int_equal(v->n, majority);
	for (int i = 0; i < ftl_sim_size(sim); i++) {
		bool is_cut = (i >= n - cut && i < n) || (i >= n && (i - n) % 2 == 1);
		const ftl_rdv *r = ftl_sim_rdv(sim, i);
		if (!is_cut) {
			assert_int_equal(ftl_rdv_current(r)->epoch, v->epoch);
		} else {
			/* The cut side commits nothing and trains on nothing. (Its members end up waiting for quorum,
			 * but at this size that takes them longer than the test runs: missing every ack, Lifeguard
			 * stretches their probe period, so they declare the other side dead slowly.) */
			assert_true(ftl_rdv_current(r)->epoch <= epoch);
			assert_int_not_equal(ftl_rdv_get_phase(r), FTL_RDV_TRAINING);
			waiting += ftl_rdv_get_phase(r) == FTL_RDV_WAITING_FOR_QUORUM;
		}
	}
	printf("cut side: %d of %d already waiting for quorum, none committed\n", waiting, cut + joiners / 2);
	assert_int_equal(ftl_sim_lineages(sim), 1);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_seeds_resolving_to_a_node_not_started_yet_at_scale(void **state)
{
	int n = cluster_size();
	ftl_sim_options o;
	big_options(&o, n);
	o.is_cold_start = true;
	o.seeds[0] = 0; /* every node's seed: n0's address, whose process is not running yet */
	o.n_seeds = 1;
	o.rdv.expected_workers = (uint32_t)n;
	o.rdv.expected_wait_us = 600 * SEC;
	ftl_sim *sim = ftl_sim_new(&o);
	ftl_sim_crash(sim, 0); /* before it ever ran */
	ftl_sim_run_for(sim, 10 * SEC);
	for (int i = 1; i < n; i++) {
		assert_int_equal(view_of(sim, i)->epoch, 0);
		assert_int_equal(ftl_swim_count(ftl_sim_node(sim, i), FTL_MEMBER_ALIVE), 1); /* alone */
	}
	ftl_sim_restart(sim, 0); /* the seed starts */
	int64_t took = ftl_sim_run_until_converged(sim, 60 * SEC);
	printf("%d members whose seed started 10 s after them: one view of %u %.2f s after it started, %d "
	       "lineage(s), %llu seed joins\n", n, view_of(sim, 0)->n, (double)took / SEC, ftl_sim_lineages(sim),
	       (unsigned long long)ftl_sim_get_stats(sim)->seed_joins);
	assert_true(took >= 0);
	assert_int_equal(view_of(sim, 0)->n, n);
	assert_int_equal(ftl_sim_lineages(sim), 1);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

/* An argument runs only the scenarios whose names match it (cmocka's pattern), to time them one by one. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coordinator_crash_during_a_commit_at_scale),
		cmocka_unit_test(test_partition_while_joins_settle_at_scale),
		cmocka_unit_test(test_seeds_resolving_to_a_node_not_started_yet_at_scale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
