/* Rendezvous promises about view changes, on the simulator: joins close together make one change, a death
 * commits without a settle delay, a flapping member does not churn views, a hot spare takes a dead
 * member's place, ranks keep survivors' order, too few workers make no view, a coordinator that crashes
 * mid-commit is taken over, a kept spare (FTL_SPARES) joins when the job grows, and every member gets the coordinator's bootstrap blob. */
#include "rdv_test.h"

#include "rendezvous/rdv_msg.h"

static void test_four_joins_within_settle_time_make_one_view_change(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 4);
	ftl_sim *sim = sim_start_converged(&o);
	uint64_t epoch = sim_view(sim, 0)->epoch;
	int64_t t0 = ftl_sim_now(sim);

	for (int k = 0; k < 4; k++) { /* one join every 200 ms: each inside the settle time (1 s) of the last */
		ftl_sim_add_node(sim);
		ftl_sim_run_for(sim, 200 * MS);
	}
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	printf("4 -> 8: %d view change(s), epoch %llu -> %llu, converged %.2f s after the first join\n",
	       ftl_sim_epochs_since(sim, t0), (unsigned long long)epoch,
	       (unsigned long long)sim_view(sim, 0)->epoch, (double)(ftl_sim_now(sim) - t0) / SEC);
	assert_int_equal(ftl_sim_epochs_since(sim, t0), 1);
	assert_int_equal(sim_view(sim, 0)->n, 8);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch + 1);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

/* The latest membership change among the given nodes: when the last of them saw what happened. */
static int64_t last_saw(const ftl_sim *sim, const int *nodes, int n, int64_t *first)
{
	int64_t last = 0;
	*first = INT64_MAX;
	for (int k = 0; k < n; k++) {
		int64_t t = ftl_sim_last_membership_change(sim, nodes[k]);
		last = t > last ? t : last;
		*first = t < *first ? t : *first;
	}
	return last;
}

/* Crashes `dead`, waits for the next view, and returns the time from the moment the last survivor saw the
 * death to the commit (printing the details). */
static int64_t death_to_commit(ftl_sim *sim, int dead, const int *survivors, int n, const char *what)
{
	uint64_t epoch = sim_view(sim, survivors[0])->epoch;
	int64_t crashed_at = ftl_sim_now(sim), first;
	ftl_sim_crash(sim, dead);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_int_equal(sim_view(sim, survivors[0])->epoch, epoch + 1);
	int64_t all_saw = last_saw(sim, survivors, n, &first);
	int64_t committed = ftl_sim_first_taken(sim, epoch + 1);
	int64_t all_took = ftl_sim_all_members_took(sim, epoch + 1);
	printf("%s: detection took %.0f-%.0f ms; commit %.2f ms after the last survivor saw the death "
	       "(%.2f ms after the first), every member holds it %.2f ms after\n",
	       what, (double)(first - crashed_at) / MS, (double)(all_saw - crashed_at) / MS,
	       (double)(committed - all_saw) / MS, (double)(committed - first) / MS, (double)(all_took - all_saw) / MS);
	return committed - all_saw;
}

static void test_death_commits_without_settle_delay(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 8);
	ftl_sim *sim = sim_start_converged(&o);
	const int survivors[] = {0, 1, 2, 3, 4, 6, 7};
	int64_t latency = death_to_commit(sim, 5, survivors, 7, "death of rank 5 of 8");
	assert_true(latency >= 0);
	assert_true(latency < o.rdv.settle_us / 10); /* a few network round trips, not a settle time */
	assert_view_is(sim, 0, survivors, 7);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

/* Restarts node i every period (a crash loop: a new generation each time) for the given time. */
static void crash_loop(ftl_sim *sim, int i, int64_t period, int64_t duration)
{
	for (int64_t t = 0; t < duration; t += period) {
		ftl_sim_restart(sim, i);
		ftl_sim_run_for(sim, period);
	}
}

/* Takes node i off the network for `down`, back for `up`, for the given number of cycles. */
static void network_flap(ftl_sim *sim, int i, int64_t up, int64_t down, int cycles)
{
	for (int c = 0; c < cycles; c++) {
		ftl_sim_set_group(sim, i, 1);
		ftl_sim_block(sim, 0, 1, true);
		ftl_sim_block(sim, 1, 0, true);
		ftl_sim_run_for(sim, down);
		ftl_sim_heal(sim);
		ftl_sim_run_for(sim, up);
	}
}

/* The promise: a member that comes back faster than the settle time never enters a view (no change at
 * all); one that stays longer costs a bounded number of changes per cycle, never more, and the others keep
 * training on their view in between. The bound is three: added once settled, removed once detected, and,
 * with real membership under the rendezvous, at most one more: the cut-off member suspected everyone while
 * alone, and a suspicion that times out just after the heal declares a healthy member dead; the dead rumor
 * spreads before that member's refutation does, and a death commits without waiting (the member comes back
 * with the next settled view). */
static void test_flapping_member_does_not_churn_views_forever(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 5);
	ftl_sim *sim = sim_start_converged(&o);
	const int stable[] = {0, 1, 2, 3};

	ftl_sim_crash(sim, 4);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	int64_t t0 = ftl_sim_now(sim);
	crash_loop(sim, 4, 400 * MS, 10 * SEC);
	int fast = ftl_sim_epochs_since(sim, t0);
	printf("crash loop every 400 ms for 10 s (settle 1 s): %d view change(s)\n", fast);
	assert_int_equal(fast, 0);
	assert_view_is(sim, 0, stable, 4);

	ftl_sim_crash(sim, 4);
	ftl_sim_run_for(sim, 2 * SEC);
	ftl_sim_restart(sim, 4);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	int64_t t1 = ftl_sim_now(sim);
	const int cycles = 5;
	network_flap(sim, 4, 2 * SEC, 2 * SEC, cycles);
	int slow = ftl_sim_epochs_since(sim, t1);
	printf("network flap, 2 s away / 2 s back, %d cycles (settle 1 s): %d view "
	       "change(s), bound %d\n", cycles, slow, 3 * cycles);
	assert_true(slow <= 3 * cycles);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_hot_spare_takes_dead_members_place(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 5);
	o.rdv.max_workers = 4;
	ftl_sim *sim = sim_start_converged(&o);
	const int first[] = {0, 1, 2, 3}, next[] = {0, 2, 3, 4};

	assert_view_is(sim, 0, first, 4);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 4)), FTL_RDV_SPARE);
	assert_int_equal(ftl_rdv_rank(ftl_sim_rdv(sim, 4)), -1);
	assert_int_equal(sim_view(sim, 4)->epoch, sim_view(sim, 0)->epoch); /* the spare knows the view */
	int64_t latency = death_to_commit(sim, 1, next, 4, "rank 1 of 4 dies, one spare");
	assert_true(latency < o.rdv.settle_us / 10); /* the spare settled long ago: no wait */
	assert_view_is(sim, 0, next, 4);
	assert_int_equal(ftl_rdv_rank(ftl_sim_rdv(sim, 4)), 3);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 4)), FTL_RDV_TRAINING);
	ftl_sim_delete(sim);
}

/* FTL_SPARES=1: the job grows by its warm spare the moment a new worker is seen (no settle: the spare
 * settled long ago), the newcomer waits in its place, and a death is replaced by the newcomer. */
static void test_kept_spare_joins_when_the_job_grows_and_the_newcomer_waits(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 4);
	o.rdv.spares = 1;
	ftl_sim *sim = sim_start_converged(&o);
	const int first[] = {0, 1, 2}, grown[] = {0, 1, 2, 3}, healed[] = {0, 2, 3, 4};
	assert_view_is(sim, 0, first, 3);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 3)), FTL_RDV_SPARE);

	uint64_t epoch = sim_view(sim, 0)->epoch;
	int newcomer = ftl_sim_add_node(sim);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch + 1); /* one view change */
	assert_view_is(sim, 0, grown, 4);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, newcomer)), FTL_RDV_SPARE);
	int64_t first_saw, all_saw = last_saw(sim, grown, 4, &first_saw);
	int64_t committed = ftl_sim_first_taken(sim, epoch + 1);
	printf("4 -> 5 workers, one kept spare: the spare is a member %.2f ms after the last member saw the "
	       "newcomer\n", (double)(committed - all_saw) / MS);
	assert_true(committed - all_saw < o.rdv.settle_us / 10);

	ftl_sim_run_for(sim, 2 * o.rdv.settle_us); /* the newcomer has settled too */
	int64_t latency = death_to_commit(sim, 1, healed, 4, "rank 1 of 4 dies, one kept spare");
	assert_true(latency < o.rdv.settle_us / 10);
	assert_view_is(sim, 0, healed, 4);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_ranks_survivors_keep_order_joiners_appended(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 4);
	ftl_sim *sim = sim_start_converged(&o);
	const int after_death[] = {0, 2, 3}, after_joins[] = {0, 2, 3, 4, 5, 1}, after_rank0[] = {2, 3, 4, 5, 1};

	ftl_sim_crash(sim, 1);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_view_is(sim, 0, after_death, 3);
	/* Joiners in join order: w04, w05, then w01 restarted (a new generation, so the youngest). */
	ftl_sim_add_node(sim);
	ftl_sim_add_node(sim);
	ftl_sim_restart(sim, 1);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_view_is(sim, 0, after_joins, 6);
	/* Rank 0 dies: the oldest survivor is the new rank 0 and the others keep their order. */
	ftl_sim_crash(sim, 0);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_view_is(sim, 2, after_rank0, 5);
	for (int k = 0; k < 5; k++)
		assert_int_equal(ftl_rdv_rank(ftl_sim_rdv(sim, after_rank0[k])), k);
	assert_string_equal(ftl_rdv_coordinator(ftl_sim_rdv(sim, 1)), ftl_sim_name(sim, 2));
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_below_min_workers_no_view(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 2);
	o.rdv.min_workers = 3;
	ftl_sim *sim = ftl_sim_new(&o);

	ftl_sim_run_for(sim, 5 * SEC);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sim_view(sim, i)->epoch, 0);
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), FTL_RDV_NO_VIEW);
	}
	assert_string_equal(ftl_rdv_phase_strs[FTL_RDV_NO_VIEW], "waiting for workers");
	ftl_sim_add_node(sim);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_int_equal(sim_view(sim, 0)->n, 3);
	/* A death below min_workers commits nothing: the survivors wait for workers. */
	ftl_sim_crash(sim, 2);
	ftl_sim_run_for(sim, 5 * SEC);
	assert_int_equal(sim_view(sim, 0)->epoch, 1);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 0)), FTL_RDV_NO_VIEW);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 1)), FTL_RDV_NO_VIEW);
	ftl_sim_add_node(sim);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	assert_int_equal(sim_view(sim, 0)->epoch, 2);
	assert_int_equal(sim_view(sim, 0)->n, 3);
	ftl_sim_delete(sim);
}

/* Node 4 dies; the coordinator w00 crashes right after sending its k-th message of the given type. */
static void coordinator_crashes_after(int msg_type, int k)
{
	ftl_sim_options o;
	rdv_options(&o, 5);
	ftl_sim *sim = sim_start_converged(&o);
	const int survivors[] = {1, 2, 3};

	ftl_sim_crash_after_sends(sim, 0, msg_type, k);
	ftl_sim_crash(sim, 4);
	ftl_sim_run_for(sim, 2 * SEC);
	assert_false(ftl_sim_is_running(sim, 0));
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	printf("coordinator crashed after its %s #%d: survivors hold epoch %llu led by %s; views:",
	       rdv_msg_type_strs[msg_type], k, (unsigned long long)sim_view(sim, 1)->epoch,
	       sim_view(sim, 1)->members[0].name);
	int n;
	const ftl_sim_record *rec = ftl_sim_records(sim, &n);
	for (int i = 0; i < n; i++)
		if (ftl_sim_first_taken(sim, rec[i].epoch) == rec[i].at_us && (i == 0 || rec[i - 1].epoch != rec[i].epoch))
			printf(" e%llu = %u led by %s", (unsigned long long)rec[i].epoch, rec[i].n, rec[i].rank0);
	printf("\n");
	assert_view_is(sim, 1, survivors, 3);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_coordinator_crash_during_commit_is_taken_over_by_next_oldest(void **state)
{
	coordinator_crashes_after(RDV_MSG_COMMIT, 1);  /* one member holds the new view, the rest do not */
	coordinator_crashes_after(RDV_MSG_ACCEPT, 1);  /* one acceptor accepted: the successor completes it */
	coordinator_crashes_after(RDV_MSG_PREPARE, 2); /* promises only */
}

static void test_every_member_gets_the_new_rank0s_blob(void **state)
{
	ftl_sim_options o;
	rdv_options(&o, 4);
	o.is_with_blob = true;
	ftl_sim *sim = sim_start_converged(&o);
	char blob[64];
	int len = snprintf(blob, sizeof(blob), "%s@1", ftl_sim_name(sim, 0)); /* the first coordinator's */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sim_view(sim, i)->blob_len, len);
		assert_memory_equal(sim_view(sim, i)->blob, blob, (size_t)len);
	}
	ftl_sim_crash(sim, 0);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	len = snprintf(blob, sizeof(blob), "%s@2", ftl_sim_name(sim, 1)); /* the next one's */
	for (int i = 1; i < 4; i++) {
		assert_int_equal(sim_view(sim, i)->blob_len, len);
		assert_memory_equal(sim_view(sim, i)->blob, blob, (size_t)len);
	}
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_four_joins_within_settle_time_make_one_view_change),
		cmocka_unit_test(test_death_commits_without_settle_delay),
		cmocka_unit_test(test_flapping_member_does_not_churn_views_forever),
		cmocka_unit_test(test_hot_spare_takes_dead_members_place),
		cmocka_unit_test(test_kept_spare_joins_when_the_job_grows_and_the_newcomer_waits),
		cmocka_unit_test(test_ranks_survivors_keep_order_joiners_appended),
		cmocka_unit_test(test_below_min_workers_no_view),
		cmocka_unit_test(test_coordinator_crash_during_commit_is_taken_over_by_next_oldest),
		cmocka_unit_test(test_every_member_gets_the_new_rank0s_blob),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
