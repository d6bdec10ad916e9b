/* How a cluster gets out of trouble, on the simulator (issue 17):
 *  - a member whose communicator failed with no membership change asks for a rebuild, and the cluster
 *    commits the same members under the next epoch, so every rebuild has an epoch all members agree on;
 *  - a side that lost its quorum waits, names the members it waits for, and goes on only after an
 *    operator waives the quorum (`ftlctl quorum reset`) on any one survivor;
 *  - expected_workers holds the first view until the expected members see each other, so nodes that
 *    start apart do not form clusters (lineages) of their own while the wait lasts;
 *  - a partition much longer than detection heals into one view of one lineage. */
#include "rdv_test.h"

static void test_rebuild_request_commits_the_same_members_under_the_next_epoch(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 4);
	ftl_sim *sim = sim_start_converged(&o);
	uint64_t epoch = sim_view(sim, 0)->epoch;
	int ranks[] = {0, 1, 2, 3};

	/* A stale request (an older epoch) changes nothing. */
	ftl_sim_request_rebuild(sim, 2, epoch - 1 + (epoch == 1));
	ftl_sim_run_for(sim, 2 * SEC);
	if (epoch > 1)
		assert_int_equal(sim_view(sim, 0)->epoch, epoch);

	epoch = sim_view(sim, 0)->epoch;
	ftl_sim_request_rebuild(sim, 2, epoch);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 2)), FTL_RDV_RENDEZVOUS);
	assert_true(ftl_sim_run_until_converged(sim, 5 * SEC) >= 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sim_view(sim, i)->epoch, epoch + 1);
		assert_view_is(sim, i, ranks, 4);
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), FTL_RDV_TRAINING);
	}
	/* One request, one new epoch: the cluster is quiet afterwards. */
	ftl_sim_run_for(sim, 3 * SEC);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch + 1);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

/* Two of four hosts lost (crashed where nothing answers: no refusal proves the deaths, as when a machine or
 * its link goes; a proven death would leave the quorum's count, test_sim_quorum.c). */
static void test_quorum_loss_waits_and_says_what_is_missing(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 4);
	ftl_sim *sim = sim_start_converged(&o);
	uint64_t epoch = sim_view(sim, 0)->epoch;

	ftl_sim_set_group(sim, 1, 1);
	ftl_sim_set_group(sim, 3, 1);
	ftl_sim_block(sim, 0, 1, true);
	ftl_sim_block(sim, 1, 0, true);
	ftl_sim_crash(sim, 1);
	ftl_sim_crash(sim, 3);
	ftl_sim_run_for(sim, 20 * SEC);
	for (int i = 0; i < 4; i += 2) {
		const ftl_rdv *r = ftl_sim_rdv(sim, i);
		assert_int_equal(ftl_rdv_get_phase(r), FTL_RDV_WAITING_FOR_QUORUM);
		assert_int_equal(ftl_rdv_current(r)->epoch, epoch); /* the safety rule: no view without a majority */
		const char *missing[4];
		ftl_rdv_quorum q;
		assert_int_equal(ftl_rdv_missing(r, missing, 4, &q), 2);
		assert_string_equal(missing[0], ftl_sim_name(sim, 1));
		assert_string_equal(missing[1], ftl_sim_name(sim, 3));
		assert_int_equal(q.electorate, 4);
		assert_int_equal(q.alive, 2);
		assert_int_equal(q.needed, 3);
		assert_false(q.is_waived);
	}
	/* Not waiting for quorum: a waiver is refused. On a survivor that is not the coordinator, it reaches
	 * the coordinator in its readies. */
	assert_int_equal(ftl_sim_waive_quorum(sim, 2), FTL_OK);
	assert_true(ftl_sim_run_until_converged(sim, 5 * SEC) >= 0);
	int survivors[] = {0, 2};
	for (int i = 0; i < 4; i += 2) {
		assert_int_equal(sim_view(sim, i)->epoch, epoch + 1);
		assert_view_is(sim, i, survivors, 2);
	}
	assert_int_equal(ftl_sim_waive_quorum(sim, 0), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "not waiting for quorum"));
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_expected_workers_hold_the_first_view_until_all_see_each_other(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 4);
	o.rdv.min_workers = 1;
	o.rdv.expected_workers = 4;
	o.rdv.expected_wait_us = 60 * SEC;
	o.is_cold_start = true; /* each starts alone and joins whom its seeds answer */
	ftl_sim *sim = ftl_sim_new(&o);
	/* Start apart, as pods do when DNS answers them differently: 1 | 3. */
	ftl_sim_set_group(sim, 0, 1);
	ftl_sim_block(sim, 0, 1, true);
	ftl_sim_block(sim, 1, 0, true);
	ftl_sim_run_for(sim, 20 * SEC);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sim_view(sim, i)->epoch, 0);
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), FTL_RDV_NO_VIEW);
	}
	ftl_sim_heal(sim);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_int_equal(sim_view(sim, 0)->n, 4);
	assert_int_equal(ftl_sim_lineages(sim), 1);
	ftl_sim_delete(sim);

	/* The wait is bounded: past it, min_workers rules again (and sides apart form their own lineages). */
	sim = ftl_sim_new(&o);
	ftl_sim_set_group(sim, 0, 1);
	ftl_sim_block(sim, 0, 1, true);
	ftl_sim_block(sim, 1, 0, true);
	ftl_sim_run_for(sim, 59 * SEC);
	assert_int_equal(sim_view(sim, 0)->epoch, 0);
	ftl_sim_run_for(sim, 3 * SEC);
	assert_int_equal(sim_view(sim, 0)->n, 1);
	assert_int_equal(sim_view(sim, 1)->n, 3);
	assert_int_equal(ftl_sim_lineages(sim), 2);
	ftl_sim_delete(sim);
}

static void test_partition_longer_than_reap_heals_into_one_view(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 5);
	ftl_sim *sim = sim_start_converged(&o);
	uint64_t epoch = sim_view(sim, 0)->epoch;
	/* 3 | 2, the minority still reaching each other, for 100 detection times. */
	for (int i = 3; i < 5; i++)
		ftl_sim_set_group(sim, i, 1);
	ftl_sim_block(sim, 0, 1, true);
	ftl_sim_block(sim, 1, 0, true);
	ftl_sim_run_for(sim, 60 * SEC);
	for (int i = 3; i < 5; i++) {
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), FTL_RDV_WAITING_FOR_QUORUM);
		assert_int_equal(sim_view(sim, i)->epoch, epoch);
	}
	assert_int_equal(sim_view(sim, 0)->n, 3);
	ftl_sim_heal(sim);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_int_equal(sim_view(sim, 0)->n, 5);
	assert_int_equal(ftl_sim_lineages(sim), 1);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rebuild_request_commits_the_same_members_under_the_next_epoch),
		cmocka_unit_test(test_quorum_loss_waits_and_says_what_is_missing),
		cmocka_unit_test(test_expected_workers_hold_the_first_view_until_all_see_each_other),
		cmocka_unit_test(test_partition_longer_than_reap_heals_into_one_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
