/* Replicas on the simulator (rendezvous/rdv_replicas.h), with real membership under the rendezvous: 3
 * replicas of 2 form one view laid out replica by replica; a crash of one member takes its replica out (the
 * partner waits as a spare, the other replicas train on in a view of their own), and its restart brings the
 * replica back whole; under random partitions with crashes no two views share an epoch, every view any
 * node holds is made of whole replicas, and once healed all converge on one. */
#include "rdv_test.h"

#include "membership/rng.h"

#define SIZE 2
#define REPLICAS 3
#define TRIALS 12

static void replica_options(ftl_sim_options *o)
{
	rdv_options(o, SIZE * REPLICAS);
	o->replica_size = SIZE;
}

/* Every rank r of v is index r % size of one replica, a replica's members are adjacent, and no replica
 * appears twice. */
static void assert_whole_replicas(const ftl_rdv_view *v)
{
	assert_int_equal(v->n % SIZE, 0);
	for (uint32_t r = 0; r < v->n; r++) {
		const ftl_rdv_member *m = &v->members[r];
		assert_int_equal(m->replica_size, SIZE);
		assert_int_equal(m->replica_index, r % SIZE);
		assert_string_equal(m->replica, v->members[r - r % SIZE].replica);
		for (uint32_t q = 0; q < r - r % SIZE; q += SIZE)
			assert_string_not_equal(m->replica, v->members[q].replica);
	}
}

static void test_a_crash_takes_its_replica_out_and_a_restart_brings_it_back(void **state)
{
	(void)state;
	ftl_sim_options o;
	replica_options(&o);
	ftl_sim *sim = sim_start_converged(&o);
	int all[] = {0, 1, 2, 3, 4, 5};
	assert_view_is(sim, 0, all, 6);
	assert_whole_replicas(sim_view(sim, 0));
	assert_string_equal(sim_view(sim, 0)->members[2].replica, "r1");

	ftl_sim_crash(sim, 3); /* r1's index 1 */
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	int without_r1[] = {0, 1, 4, 5};
	for (int i = 0; i < 6; i++) {
		if (i == 3)
			continue;
		assert_view_is(sim, i, without_r1, 4);
		assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, i)), i == 2 ? FTL_RDV_SPARE : FTL_RDV_TRAINING);
	}
	assert_int_equal(ftl_rdv_rank(ftl_sim_rdv(sim, 2)), -1);

	ftl_sim_restart(sim, 3);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	int rejoined[] = {0, 1, 4, 5, 2, 3};
	assert_view_is(sim, 2, rejoined, 6);
	assert_whole_replicas(sim_view(sim, 2));
	assert_int_equal(ftl_rdv_rank(ftl_sim_rdv(sim, 3)), 5);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

/* Two replicas each lose a shard: 4 of 6 workers are alive (a majority), and the one whole replica trains on.
 * The partners left out still vote on the view that leaves them out (they are members of the current one). */
static void test_one_whole_replica_trains_on_with_a_majority_of_the_workers(void **state)
{
	(void)state;
	ftl_sim_options o;
	replica_options(&o);
	ftl_sim *sim = sim_start_converged(&o);
	ftl_sim_crash(sim, 1); /* r0's index 1 */
	ftl_sim_crash(sim, 3); /* r1's index 1 */
	sim_converge_after_change(sim);
	int r2[] = {4, 5};
	assert_view_is(sim, 0, r2, 2);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 0)), FTL_RDV_SPARE);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 4)), FTL_RDV_TRAINING);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_partitions_and_crashes_never_make_a_view_of_part_of_a_replica(void **state)
{
	(void)state;
	ftl_rng rng;
	ftl_rng_seed(&rng, 0x5eed0040);
	for (int trial = 0; trial < TRIALS; trial++) {
		ftl_sim_options o;
		replica_options(&o);
		o.seed = 40 + (uint64_t)trial;
		o.is_quiet = true;
		ftl_sim *sim = sim_start_converged(&o);
		printf("trial %d:", trial);
		for (int i = 0; i < SIZE * REPLICAS; i++) {
			int side = (int)ftl_rng_below(&rng, 2);
			ftl_sim_set_group(sim, i, side);
			printf(" %s|%d", ftl_sim_name(sim, i), side);
		}
		ftl_sim_block(sim, 0, 1, true);
		ftl_sim_block(sim, 1, 0, true);
		if (ftl_rng_below(&rng, 2)) {
			int victim = (int)ftl_rng_below(&rng, SIZE * REPLICAS);
			ftl_sim_crash(sim, victim);
			printf(" crash %s", ftl_sim_name(sim, victim));
		}
		ftl_sim_run_for(sim, (int64_t)(1 + ftl_rng_below(&rng, 8)) * SEC);
		for (int i = 0; i < SIZE * REPLICAS; i++)
			if (ftl_sim_is_running(sim, i))
				assert_whole_replicas(sim_view(sim, i));
		ftl_sim_heal(sim);
		for (int i = 0; i < SIZE * REPLICAS; i++)
			if (!ftl_sim_is_running(sim, i))
				ftl_sim_restart(sim, i);
		assert_true(ftl_sim_run_until_converged(sim, 30 * SEC) >= 0);
		assert_int_equal(sim_view(sim, 0)->n, SIZE * REPLICAS);
		assert_whole_replicas(sim_view(sim, 0));
		assert_int_equal(ftl_sim_conflicts(sim), 0);
		printf(" -> %u members, epoch %llu\n", sim_view(sim, 0)->n, (unsigned long long)sim_view(sim, 0)->epoch);
		ftl_sim_delete(sim);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_crash_takes_its_replica_out_and_a_restart_brings_it_back),
		cmocka_unit_test(test_one_whole_replica_trains_on_with_a_majority_of_the_workers),
		cmocka_unit_test(test_partitions_and_crashes_never_make_a_view_of_part_of_a_replica),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
