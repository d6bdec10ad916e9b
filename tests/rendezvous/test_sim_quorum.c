/* The quorum rule on the simulator: under random partitions (two or three sides, one-way or two-way, with
 * joins, crashes and loss on top, cut at random moments, often in the middle of a view change) no two
 * different views ever hold the same epoch; a minority side pauses and says so; and once the network
 * heals, everyone converges on one view. */
#include "rdv_test.h"

#include <stdlib.h>
#include <time.h>

#include "membership/rng.h"

#define TRIALS 40
#define EPISODES 3

static void split(ftl_sim *sim, const int *group_of, int n, int groups, bool is_two_way)
{
	for (int i = 0; i < n; i++)
		ftl_sim_set_group(sim, i, group_of[i]);
	for (int a = 0; a < groups; a++)
		for (int b = 0; b < groups; b++)
			if (a != b && (is_two_way || a < b))
				ftl_sim_block(sim, a, b, true);
}

/* Prints which side first took each epoch that appeared in [from, to), as "e3 by side 1 (4 members)". */
static void print_epochs_by_side(const ftl_sim *sim, const int *group_of, int64_t from, int64_t to)
{
	int n;
	const ftl_sim_record *rec = ftl_sim_records(sim, &n);
	bool any = false;
	for (int i = 0; i < n; i++) {
		bool is_first = rec[i].at_us >= from && rec[i].at_us < to;
		for (int j = 0; j < i && is_first; j++)
			is_first = rec[j].epoch != rec[i].epoch;
		if (!is_first)
			continue;
		printf(" e%llu by side %d (%u members)", (unsigned long long)rec[i].epoch, group_of[rec[i].node],
		       rec[i].n);
		any = true;
	}
	if (!any)
		printf(" no commit");
}

/* Something else happening while cut: a join, a crash (keeping three up), or nothing. */
static void disturb(ftl_sim *sim, ftl_rng *rng, int *group_of)
{
	uint32_t what = ftl_rng_below(rng, 10);
	int up = 0;
	for (int i = 0; i < ftl_sim_size(sim); i++)
		up += ftl_sim_is_running(sim, i);
	if (what < 3 && ftl_sim_size(sim) < RDV_MAX_NODES) {
		int i = ftl_sim_add_node(sim);
		group_of[i] = (int)ftl_rng_below(rng, 2);
		ftl_sim_set_group(sim, i, group_of[i]);
		printf(" +%s", ftl_sim_name(sim, i));
	} else if (what < 5 && up > 3) {
		int i = (int)ftl_rng_below(rng, (uint32_t)ftl_sim_size(sim));
		if (ftl_sim_is_running(sim, i)) {
			ftl_sim_crash(sim, i);
			printf(" x%s", ftl_sim_name(sim, i));
		}
	}
}

/* The newest view any up node holds. */
static const ftl_rdv_view *newest_view(ftl_sim *sim)
{
	const ftl_rdv_view *newest = NULL;
	for (int i = 0; i < ftl_sim_size(sim); i++)
		if (ftl_sim_is_running(sim, i) && (newest == NULL || sim_view(sim, i)->epoch > newest->epoch))
			newest = sim_view(sim, i);
	return newest;
}

/* Crashes (not leaves) took half or more of the newest view: no majority can ever answer for it. */
static bool is_quorum_lost_to_crashes(ftl_sim *sim)
{
	const ftl_rdv_view *v = newest_view(sim);
	uint32_t up = 0;
	for (uint32_t k = 0; k < v->n; k++)
		for (int i = 0; i < ftl_sim_size(sim); i++)
			up += ftl_sim_is_running(sim, i) && strcmp(ftl_sim_name(sim, i), v->members[k].name) == 0 &&
			      ftl_rdv_rank(ftl_sim_rdv(sim, i)) >= 0 && sim_view(sim, i)->epoch == v->epoch;
	return 2 * up <= v->n;
}

/* After healing: one view for everyone, or, where crashes took the quorum, everyone paused and saying so. */
static void check_healed(ftl_sim *sim)
{
	int64_t took = ftl_sim_run_until_converged(sim, 30 * SEC);
	const ftl_rdv_view *v = newest_view(sim);
	if (took >= 0) {
		printf("  healed: epoch %llu, %u members, converged in %.2f s", (unsigned long long)v->epoch, v->n,
		       (double)took / SEC);
	} else {
		assert_true(is_quorum_lost_to_crashes(sim));
		for (int i = 0; i < ftl_sim_size(sim); i++)
			if (ftl_sim_is_running(sim, i))
				assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), FTL_RDV_WAITING_FOR_QUORUM);
		printf("  healed: crashes took the quorum of epoch %llu (%u members): every node waits for quorum",
		       (unsigned long long)v->epoch, v->n);
	}
	printf("; %d lineage(s), %d conflicting epochs\n", ftl_sim_lineages(sim), ftl_sim_conflicts(sim));
}

static void one_trial(int trial, uint64_t seed)
{
	ftl_rng rng;
	ftl_rng_seed(&rng, seed);
	int n = 3 + (int)ftl_rng_below(&rng, 7);
	ftl_sim_options o;
	rdv_options(&o, n);
	o.seed = seed;
	o.is_quiet = true;
	o.loss = ftl_rng_below(&rng, 2) ? 0.05 : 0;
	ftl_sim *sim = sim_start_converged(&o);
	int group_of[RDV_MAX_NODES] = {0};

	printf("trial %2d seed %llu: %d nodes, loss %.2f\n", trial, (unsigned long long)seed, n, o.loss);
	for (int ep = 0; ep < EPISODES; ep++) {
		int groups = 2 + (int)ftl_rng_below(&rng, 2);
		bool is_two_way = ftl_rng_below(&rng, 4) != 0;
		int64_t start = ftl_sim_now(sim);
		printf("  cut %d (%s):", ep + 1, is_two_way ? "two-way" : "one-way");
		for (int i = 0; i < ftl_sim_size(sim); i++)
			group_of[i] = (int)ftl_rng_below(&rng, (uint32_t)groups);
		for (int g = 0; g < groups; g++) {
			printf(" {");
			for (int i = 0; i < ftl_sim_size(sim); i++)
				if (group_of[i] == g && ftl_sim_is_running(sim, i))
					printf(" %s", ftl_sim_name(sim, i));
			printf(" }");
		}
		ftl_sim_run_for(sim, (int64_t)ftl_rng_below(&rng, 1500) * MS); /* often mid-change */
		int64_t cut_at = ftl_sim_now(sim);
		split(sim, group_of, ftl_sim_size(sim), groups, is_two_way);
		disturb(sim, &rng, group_of);
		ftl_sim_run_for(sim, 300 * MS + (int64_t)ftl_rng_below(&rng, 3000) * MS);
		printf(" -> after %.2f s,", (double)(cut_at - start) / SEC);
		print_epochs_by_side(sim, group_of, cut_at, ftl_sim_now(sim));
		printf("\n");
		ftl_sim_heal(sim);
	}
	check_healed(sim);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_quorum_holds_under_every_partition_tried(void **state)
{
	const char *env = getenv("FTL_SIM_SEED");
	uint64_t master = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	ftl_rng rng;
	printf("partition trials: master seed %llu (replay with FTL_SIM_SEED=%llu; a trial's own seed replays "
	       "it alone with FTL_SIM_TRIAL_SEED)\n", (unsigned long long)master, (unsigned long long)master);
	const char *one = getenv("FTL_SIM_TRIAL_SEED");
	if (one != NULL) {
		one_trial(0, strtoull(one, NULL, 0));
		return;
	}
	ftl_rng_seed(&rng, master);
	for (int t = 0; t < TRIALS; t++)
		one_trial(t, ftl_rng_next(&rng) | 1);
}

/* w00, w01 on one side, w02..w04 on the other. */
static ftl_sim *split_two_three(void)
{
	ftl_sim_options o;
	rdv_options(&o, 5);
	ftl_sim *sim = sim_start_converged(&o);
	const int group_of[] = {0, 0, 1, 1, 1};
	split(sim, group_of, 5, 2, true);
	ftl_sim_run_for(sim, 3 * SEC);
	return sim;
}

static void test_minority_side_pauses_and_says_so(void **state)
{
	ftl_sim *sim = split_two_three();
	const int majority[] = {2, 3, 4};
	for (int i = 0; i < 2; i++) {
		const ftl_rdv *r = ftl_sim_rdv(sim, i);
		assert_int_equal(ftl_rdv_get_phase(r), FTL_RDV_WAITING_FOR_QUORUM);
		assert_int_equal(ftl_rdv_current(r)->epoch, 1); /* it committed nothing */
		printf("%s (minority): phase \"%s\", still at epoch %llu\n", ftl_sim_name(sim, i),
		       ftl_rdv_phase_strs[ftl_rdv_get_phase(r)], (unsigned long long)ftl_rdv_current(r)->epoch);
	}
	for (int k = 0; k < 3; k++) {
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, majority[k])), FTL_RDV_TRAINING);
		assert_view_is(sim, majority[k], majority, 3);
	}
	assert_int_equal(sim_view(sim, 2)->epoch, 2);
	assert_string_equal(ftl_rdv_phase_strs[FTL_RDV_WAITING_FOR_QUORUM], "waiting for quorum");
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_healed_partition_converges_to_one_view(void **state)
{
	ftl_sim *sim = split_two_three();
	const int all[] = {2, 3, 4, 0, 1}; /* the majority's view, then the minority as joiners in join order */
	ftl_sim_heal(sim);
	int64_t took = ftl_sim_run_until_converged(sim, 10 * SEC);
	printf("healed 2|3 partition: one view of %u at epoch %llu after %.2f s (settle 1 s)\n", sim_view(sim, 0)->n,
	       (unsigned long long)sim_view(sim, 0)->epoch, (double)took / SEC);
	assert_true(took >= 0);
	for (int i = 0; i < 5; i++)
		assert_view_is(sim, i, all, 5);
	assert_int_equal(sim_view(sim, 0)->epoch, 3);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

/* Two workers and a hot spare (max 2): w00 and w01 in the view, w02 waiting. */
static ftl_sim *two_and_a_spare(void)
{
	ftl_sim_options o;
	rdv_options(&o, 3);
	o.rdv.max_workers = 2;
	ftl_sim *sim = ftl_sim_new(&o);
	ftl_sim_run_for(sim, 5 * SEC);
	const int pair[] = {0, 1};
	assert_view_is(sim, 0, pair, 2);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 2)), FTL_RDV_SPARE);
	return sim;
}

/* w00 on one side of a two-way cut, w01 and the spare on the other. */
static void cut_w00_off(ftl_sim *sim)
{
	const int group_of[] = {0, 1, 1};
	split(sim, group_of, 3, 2, true);
}

/* A crash is proven (the crashed node's own address refuses the check), so the dead member leaves the
 * quorum's denominator: the survivor alone is a majority of what is left, and the spare fills the place. */
static void test_a_job_of_two_survives_a_proven_death(void **state)
{
	ftl_sim *sim = two_and_a_spare();
	uint64_t epoch = sim_view(sim, 0)->epoch;
	ftl_sim_crash(sim, 1);
	ftl_sim_run_for(sim, 5 * SEC);
	const int promoted[] = {0, 2};
	for (int i = 0; i < 3; i += 2) {
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), FTL_RDV_TRAINING);
		assert_view_is(sim, i, promoted, 2);
	}
	printf("2 + spare, w01 crashed: epoch %llu -> %llu, view {w00, w02}\n", (unsigned long long)epoch,
	       (unsigned long long)sim_view(sim, 0)->epoch);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

/* Cut 1 | 1 (the spare with w01): no check gets an answer across the cut, so no death is proven, and
 * neither side is a majority of the two: both wait; healed, they go on in one view. */
static void test_a_job_of_two_cut_in_half_stops_on_both_sides(void **state)
{
	ftl_sim *sim = two_and_a_spare();
	uint64_t epoch = sim_view(sim, 0)->epoch;
	cut_w00_off(sim);
	ftl_sim_run_for(sim, 10 * SEC);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), FTL_RDV_WAITING_FOR_QUORUM);
		assert_int_equal(sim_view(sim, i)->epoch, epoch); /* neither side committed */
	}
	ftl_sim_heal(sim);
	assert_true(ftl_sim_run_until_converged(sim, 30 * SEC) >= 0);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	printf("2 + spare cut 1|1: both sides waited at epoch %llu; healed to epoch %llu\n", (unsigned long long)epoch,
	       (unsigned long long)sim_view(sim, 0)->epoch);
	ftl_sim_delete(sim);
}

/* The spare's side of the cut: w01 crashes there and w02 proves it, but the view's other member, w00, is
 * unreachable, not proven dead, and still counts: that side holds none of what is left of the view, and
 * w00, alone with an absence nothing proves, waits too. */
static void test_a_death_proven_on_one_side_of_a_cut_takes_no_quorum(void **state)
{
	ftl_sim *sim = two_and_a_spare();
	uint64_t epoch = sim_view(sim, 0)->epoch;
	cut_w00_off(sim);
	ftl_sim_run_for(sim, 200 * MS);
	ftl_sim_crash(sim, 1);
	ftl_sim_run_for(sim, 10 * SEC);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 0)), FTL_RDV_WAITING_FOR_QUORUM);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch);
	assert_true(ftl_rdv_get_phase(ftl_sim_rdv(sim, 2)) != FTL_RDV_TRAINING);
	ftl_sim_heal(sim);
	assert_true(ftl_sim_run_until_converged(sim, 30 * SEC) >= 0); /* w00 proves w01 dead once it can reach it */
	const int promoted[] = {0, 2};
	assert_view_is(sim, 0, promoted, 2);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quorum_holds_under_every_partition_tried),
		cmocka_unit_test(test_minority_side_pauses_and_says_so),
		cmocka_unit_test(test_healed_partition_converges_to_one_view),
		cmocka_unit_test(test_a_job_of_two_survives_a_proven_death),
		cmocka_unit_test(test_a_job_of_two_cut_in_half_stops_on_both_sides),
		cmocka_unit_test(test_a_death_proven_on_one_side_of_a_cut_takes_no_quorum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
