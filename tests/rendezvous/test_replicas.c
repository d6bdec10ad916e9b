/* Whole replicas (rendezvous/rdv_replicas.h) as pure functions of the candidate: a view of a sharded job
 * holds only replicas with every index present, laid out replica by replica and index by index (rank =
 * replica rank * size + index); surviving replicas keep their order, a replica that lost a member is out
 * and its other members are spares; a replica whole again rejoins after the survivors; max_workers takes
 * whole replicas only; a second claim on an index, another replica size or no replica at all is left out;
 * and the quorum still counts the workers of the previous view. */
#include "rdv_test.h"

#include "rendezvous/rdv_candidate.h"
#include "rendezvous/rdv_view.h"

static ftl_rdv_member in_replica(const char *replica, uint32_t index, uint32_t size, uint64_t generation)
{
	ftl_rdv_member m = {.generation = generation, .replica_index = index, .replica_size = size};
	snprintf(m.name, sizeof m.name, "%s.%u", replica, index);
	ftl_copy_str(m.replica, replica, sizeof m.replica);
	snprintf(m.data_addr, sizeof m.data_addr, "10.0.0.%u:1", (unsigned)(100 - generation));
	return m;
}

static void assert_order(const rdv_candidate *c, const char *const *names, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < c->n; i++)
		print_message("  rank %u: %s\n", i, c->members[i].name);
	assert_int_equal(c->n, n);
	for (uint32_t i = 0; i < n; i++)
		assert_string_equal(c->members[i].name, names[i]);
}

static void test_the_first_view_takes_whole_replicas_in_the_order_they_became_whole(void **state)
{
	ftl_rdv_view none = {0};
	/* b became whole at generation 4, c at 6, a at 7 (a.1 started last); d lacks its index 1. The alive list
	 * comes in any order, and indices within a replica too. */
	ftl_rdv_member alive[] = {in_replica("c", 1, 2, 6), in_replica("a", 0, 2, 1), in_replica("d", 0, 2, 2),
				  in_replica("b", 1, 2, 3), in_replica("a", 1, 2, 7), in_replica("b", 0, 2, 4),
				  in_replica("c", 0, 2, 5)};
	const char *expected[] = {"b.0", "b.1", "c.0", "c.1", "a.0", "a.1"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &none, alive, 7, NULL, 0, 100, 0), 0);
	assert_order(&c, expected, 6);
	assert_int_equal(c.n_spares, 1); /* d.0 waits for its partner */
	assert_int_equal(rdv_candidate_find(&c, "d.0", 2), -1);
	/* alive_index follows the members it was built with */
	for (uint32_t i = 0; i < c.n; i++)
		assert_string_equal(alive[c.alive_index[i]].name, c.members[i].name);
	rdv_candidate_free(&c);
}

static void test_a_replica_that_loses_a_member_leaves_the_view_and_its_partner_waits(void **state)
{
	ftl_rdv_member in_view[] = {in_replica("a", 0, 2, 1), in_replica("a", 1, 2, 2), in_replica("b", 0, 2, 3),
				    in_replica("b", 1, 2, 4), in_replica("c", 0, 2, 5), in_replica("c", 1, 2, 6)};
	ftl_rdv_view view = {.epoch = 3, .n = 6, .members = in_view};
	/* b.1 is gone */
	ftl_rdv_member alive[] = {in_view[0], in_view[1], in_view[2], in_view[4], in_view[5]};
	const char *expected[] = {"a.0", "a.1", "c.0", "c.1"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &view, alive, 5, NULL, 0, 100, 0), 0);
	assert_order(&c, expected, 4);
	assert_int_equal(c.n_survivors, 4);
	assert_int_equal(c.n_spares, 1);
	/* the quorum counts the view's workers: 5 of 6 alive */
	assert_int_equal(c.electorate, 6);
	assert_int_equal(c.electorate_alive, 5);
	assert_true(rdv_candidate_has_quorum(&c));

	/* b.1 restarts (a new generation): b is whole again and rejoins after the surviving replicas */
	ftl_rdv_member back[] = {in_view[0], in_view[1], in_view[2], in_replica("b", 1, 2, 9), in_view[4],
				 in_view[5]};
	const char *rejoined[] = {"a.0", "a.1", "c.0", "c.1", "b.0", "b.1"};
	assert_int_equal(rdv_candidate_build(&c, &view, back, 6, NULL, 0, 100, 0), 0);
	assert_order(&c, rejoined, 6);
	assert_int_equal(c.n_survivors, 4); /* b is a joining replica: its shard state comes from the others */
	rdv_candidate_free(&c);
}

static void test_max_workers_and_spares_take_whole_replicas(void **state)
{
	ftl_rdv_view none = {0};
	ftl_rdv_member alive[] = {in_replica("a", 0, 2, 1), in_replica("a", 1, 2, 2), in_replica("b", 0, 2, 3),
				  in_replica("b", 1, 2, 4), in_replica("c", 0, 2, 5), in_replica("c", 1, 2, 6)};
	const char *two[] = {"a.0", "a.1", "b.0", "b.1"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &none, alive, 6, NULL, 0, 5, 0), 0); /* 5 workers: 2 replicas */
	assert_order(&c, two, 4);
	assert_int_equal(c.n_spares, 2);
	assert_int_equal(rdv_candidate_build(&c, &none, alive, 6, NULL, 0, 100, 1), 0); /* one spare: a replica */
	assert_order(&c, two, 4);
	assert_int_equal(rdv_candidate_build(&c, &none, alive, 6, NULL, 0, 1, 0), 0); /* not even one fits */
	assert_int_equal(c.n, 0);
	rdv_candidate_free(&c);
}

static void test_claims_that_do_not_fit_the_job_are_left_out(void **state)
{
	ftl_rdv_member in_view[] = {in_replica("a", 0, 2, 1), in_replica("a", 1, 2, 2)};
	ftl_rdv_view view = {.epoch = 1, .n = 2, .members = in_view};
	ftl_rdv_member twin = in_replica("a", 1, 2, 3); /* a second a.1: another process, the same claim */
	ftl_copy_str(twin.name, "a.1-twin", sizeof twin.name);
	ftl_rdv_member plain = {.generation = 4};
	ftl_copy_str(plain.name, "plain", sizeof plain.name);
	ftl_rdv_member alive[] = {twin, in_view[0], in_view[1], in_replica("x", 0, 3, 5), plain,
				  in_replica("b", 0, 2, 6), in_replica("b", 1, 2, 7)};
	const char *expected[] = {"a.0", "a.1", "b.0", "b.1"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &view, alive, 7, NULL, 0, 100, 0), 0);
	assert_order(&c, expected, 4); /* the survivor keeps a.1; size 3 and no replica are not this job's */
	assert_int_equal(c.n_spares, 3);
	assert_int_equal(c.members[1].generation, 2);

	/* and a job without replicas leaves out the members that declare one */
	ftl_rdv_view none = {0};
	ftl_rdv_member mixed[] = {plain, in_replica("b", 0, 1, 6)};
	const char *alone[] = {"plain"};
	assert_int_equal(rdv_candidate_build(&c, &none, mixed, 2, NULL, 0, 100, 0), 0);
	assert_order(&c, alone, 1);
	rdv_candidate_free(&c);
}

static void test_a_replica_with_a_restarted_member_is_not_a_survivor(void **state)
{
	ftl_rdv_member in_view[] = {in_replica("a", 0, 2, 1), in_replica("a", 1, 2, 2), in_replica("b", 0, 2, 3),
				    in_replica("b", 1, 2, 4)};
	ftl_rdv_view view = {.epoch = 2, .n = 4, .members = in_view};
	/* a.0 restarted before anyone noticed it died: a is whole, but its rank 0 lost its shard */
	ftl_rdv_member alive[] = {in_replica("a", 0, 2, 8), in_view[1], in_view[2], in_view[3]};
	const char *expected[] = {"b.0", "b.1", "a.0", "a.1"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &view, alive, 4, NULL, 0, 100, 0), 0);
	assert_order(&c, expected, 4);
	assert_int_equal(c.n_survivors, 2);
	assert_int_equal(c.survivors_digest, rdv_members_digest(c.members, 2));
	rdv_candidate_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_first_view_takes_whole_replicas_in_the_order_they_became_whole),
		cmocka_unit_test(test_a_replica_that_loses_a_member_leaves_the_view_and_its_partner_waits),
		cmocka_unit_test(test_max_workers_and_spares_take_whole_replicas),
		cmocka_unit_test(test_claims_that_do_not_fit_the_job_are_left_out),
		cmocka_unit_test(test_a_replica_with_a_restarted_member_is_not_a_survivor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
