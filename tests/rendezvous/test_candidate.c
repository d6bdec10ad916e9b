/* The candidate view and the quorum arithmetic as pure functions: survivors keep their order, joiners
 * follow by generation then name, max_workers leaves spares, FTL_SPARES keeps spares while the job grows
 * and replaces what it loses, a restarted member is a joiner, and a new view
 * needs a strict majority of the previous view's members that did not leave. */
#include "rdv_test.h"

#include "rendezvous/rdv_candidate.h"
#include "rendezvous/rdv_view.h"

static ftl_rdv_member member(const char *name, uint64_t generation)
{
	ftl_rdv_member m = {.generation = generation};
	ftl_copy_str(m.name, name, sizeof m.name);
	snprintf(m.data_addr, sizeof m.data_addr, "10.0.0.%u:1", (unsigned)(100 - generation));
	return m;
}

static void assert_order(const rdv_candidate *c, const char *const *names, uint32_t n)
{
	assert_int_equal(c->n, n);
	for (uint32_t i = 0; i < n; i++)
		assert_string_equal(c->members[i].name, names[i]);
}

static void test_survivors_keep_view_order_and_joiners_follow_by_generation_then_name(void **state)
{
	ftl_rdv_member in_view[] = {member("c", 5), member("a", 1), member("b", 3)};
	ftl_rdv_view view = {.epoch = 4, .n = 3, .members = in_view};
	/* b is gone; ab and e joined with the same generation (ties by name), d later. */
	ftl_rdv_member alive[] = {member("e", 2), member("d", 7), member("a", 1), member("ab", 2), member("c", 5)};
	const char *expected[] = {"c", "a", "ab", "e", "d"};
	rdv_candidate c = {0};

	assert_int_equal(rdv_candidate_build(&c, &view, alive, 5, NULL, 0, 100, 0), 0);
	assert_order(&c, expected, 5);
	assert_int_equal(c.n_survivors, 2);
	assert_int_equal(c.n_spares, 0);
	assert_int_equal(c.survivors_digest, rdv_members_digest(c.members, 2));
	assert_int_equal(c.digest, rdv_members_digest(c.members, 5));
	assert_int_equal(rdv_candidate_find(&c, "ab", 2), 2);
	assert_int_equal(rdv_candidate_find(&c, "ab", 3), -1);
	rdv_candidate_free(&c);
}

static void test_without_a_view_the_oldest_member_leads(void **state)
{
	ftl_rdv_view none = {0};
	ftl_rdv_member alive[] = {member("w2", 30), member("w0", 10), member("w1", 20)};
	const char *expected[] = {"w0", "w1", "w2"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &none, alive, 3, NULL, 0, 100, 0), 0);
	assert_order(&c, expected, 3);
	assert_int_equal(c.n_survivors, 0);
	assert_int_equal(c.electorate, 0);
	assert_true(rdv_candidate_has_quorum(&c));
	rdv_candidate_free(&c);
}

static void test_restarted_member_is_a_joiner(void **state)
{
	ftl_rdv_member in_view[] = {member("a", 1), member("b", 3), member("c", 4)};
	ftl_rdv_view view = {.epoch = 2, .n = 3, .members = in_view};
	ftl_rdv_member alive[] = {member("a", 1), member("b", 9), member("c", 4)}; /* b restarted */
	const char *expected[] = {"a", "c", "b"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &view, alive, 3, NULL, 0, 100, 0), 0);
	assert_order(&c, expected, 3);
	assert_int_equal(c.n_survivors, 2);
	assert_int_equal(c.members[2].generation, 9);
	rdv_candidate_free(&c);
}

static void test_max_workers_leaves_the_youngest_as_spares(void **state)
{
	ftl_rdv_member in_view[] = {member("a", 1), member("b", 2), member("c", 3)};
	ftl_rdv_view view = {.epoch = 1, .n = 3, .members = in_view};
	ftl_rdv_member alive[] = {member("a", 1), member("c", 3), member("s1", 5), member("s2", 6)};
	const char *expected[] = {"a", "c", "s1"}; /* s1 (the oldest spare) takes dead b's place */
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &view, alive, 4, NULL, 0, 3, 0), 0);
	assert_order(&c, expected, 3);
	assert_int_equal(c.n_spares, 1);
	assert_int_equal(rdv_candidate_find(&c, "s2", 6), -1);
	rdv_candidate_free(&c);
}

/* FTL_SPARES=1, a view of three and one spare (s1): what each change of the alive set makes of them. */
static void test_kept_spares_promote_on_growth_and_replace_the_lost(void **state)
{
	ftl_rdv_member in_view[] = {member("a", 1), member("b", 2), member("c", 3)};
	ftl_rdv_view view = {.epoch = 4, .n = 3, .members = in_view};
	const char *b_left[] = {"b"};
	struct {
		const char *what;
		ftl_rdv_member alive[5];
		size_t n_alive;
		const char *const *left;
		size_t n_left;
		const char *expected[5];
		uint32_t n, n_spares;
	} cases[] = {
		{"steady: s1 waits", {member("a", 1), member("b", 2), member("c", 3), member("s1", 5)}, 4, NULL, 0,
		 {"a", "b", "c"}, 3, 1},
		{"a new worker: s1 joins the view, the new one waits",
		 {member("a", 1), member("b", 2), member("c", 3), member("s1", 5), member("n", 8)}, 5, NULL, 0,
		 {"a", "b", "c", "s1"}, 4, 1},
		{"b dies: s1 takes its place", {member("a", 1), member("c", 3), member("s1", 5)}, 3, NULL, 0,
		 {"a", "c", "s1"}, 3, 0},
		{"b leaves (its node drained): s1 takes its place too", {member("a", 1), member("c", 3),
		 member("s1", 5)}, 3, b_left, 1, {"a", "c", "s1"}, 3, 0},
		{"scaled down: the spare goes first, then the view shrinks", {member("a", 1), member("c", 3)}, 2,
		 b_left, 1, {"a", "c"}, 2, 0},
		{"b restarts (a new generation): it is the spare now",
		 {member("a", 1), member("b", 9), member("c", 3), member("s1", 5)}, 4, NULL, 0, {"a", "c", "s1"}, 3, 1},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		rdv_candidate c = {0};
		print_message("%s\n", cases[k].what);
		assert_int_equal(rdv_candidate_build(&c, &view, cases[k].alive, cases[k].n_alive, cases[k].left,
						     cases[k].n_left, 100, 1), 0);
		assert_order(&c, cases[k].expected, cases[k].n);
		assert_int_equal(c.n_spares, cases[k].n_spares);
		rdv_candidate_free(&c);
	}
	/* the first view leaves the youngest out; only spares alive (the others left at the end): one is taken */
	ftl_rdv_view none = {0};
	ftl_rdv_member first[] = {member("a", 1), member("b", 2)}, only[] = {member("s1", 5)};
	const char *a_only[] = {"a"}, *s1_only[] = {"s1"}, *all_left[] = {"a", "b", "c"};
	rdv_candidate c = {0};
	assert_int_equal(rdv_candidate_build(&c, &none, first, 2, NULL, 0, 100, 1), 0);
	assert_order(&c, a_only, 1);
	assert_int_equal(rdv_candidate_build(&c, &view, only, 1, all_left, 3, 100, 1), 0);
	assert_order(&c, s1_only, 1);
	/* max_workers still caps */
	ftl_rdv_member grown[] = {member("a", 1), member("b", 2), member("c", 3), member("s1", 5), member("n", 8)};
	assert_int_equal(rdv_candidate_build(&c, &view, grown, 5, NULL, 0, 3, 1), 0);
	assert_int_equal(c.n, 3);
	rdv_candidate_free(&c);
}

static void test_quorum_is_a_strict_majority_of_those_that_did_not_leave(void **state)
{
	static const uint32_t needed[] = {0, 1, 2, 2, 3, 3, 4, 4, 5};
	for (uint32_t n = 0; n < 9; n++)
		assert_int_equal(rdv_quorum_needed(n), needed[n]);

	ftl_rdv_member in_view[] = {member("a", 1), member("b", 2), member("c", 3), member("d", 4)};
	ftl_rdv_view view = {.epoch = 7, .n = 4, .members = in_view};
	rdv_candidate c = {0};
	struct {
		const char *alive;      /* which of a..d are alive */
		const char *left[4];
		size_t n_left;
		uint32_t electorate, electorate_alive;
		bool has_quorum;
	} cases[] = {
		{"abcd", {NULL}, 0, 4, 4, true},
		{"abc", {NULL}, 0, 4, 3, true},
		{"ab", {NULL}, 0, 4, 2, false},             /* half is not a majority: the 2|2 split pauses */
		{"ab", {"c"}, 1, 3, 2, true},               /* c left gracefully: 2 of 3 */
		{"a", {"c", "d"}, 2, 2, 1, false},          /* b died: 1 of 2 */
		{"a", {"b", "c", "d"}, 3, 1, 1, true},      /* everyone else left */
		{"", {"a", "b", "c", "d"}, 4, 0, 0, true},  /* nobody to ask */
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		ftl_rdv_member alive[4];
		size_t n_alive = 0;
		for (const char *p = cases[k].alive; *p; p++)
			alive[n_alive++] = in_view[*p - 'a'];
		assert_int_equal(rdv_candidate_build(&c, &view, alive, n_alive, cases[k].left, cases[k].n_left, 100, 0), 0);
		assert_int_equal(c.electorate, cases[k].electorate);
		assert_int_equal(c.electorate_alive, cases[k].electorate_alive);
		assert_int_equal(rdv_candidate_has_quorum(&c), cases[k].has_quorum);
	}
	rdv_candidate_free(&c);
}

static void test_digest_depends_on_order_and_generation(void **state)
{
	ftl_rdv_member ab[] = {member("a", 1), member("b", 2)}, ba[] = {member("b", 2), member("a", 1)};
	ftl_rdv_member ab3[] = {member("a", 1), member("b", 3)};
	assert_int_not_equal(rdv_members_digest(ab, 2), rdv_members_digest(ba, 2));
	assert_int_not_equal(rdv_members_digest(ab, 2), rdv_members_digest(ab3, 2));
	assert_int_not_equal(rdv_members_digest(ab, 1), rdv_members_digest(ab, 2));
	ftl_rdv_view v = {.epoch = 1, .n = 2, .members = ab}, w = v;
	w.epoch = 2;
	assert_int_not_equal(rdv_view_digest(&v), rdv_view_digest(&w));
	assert_int_equal(rdv_view_digest(&(ftl_rdv_view){0}), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_survivors_keep_view_order_and_joiners_follow_by_generation_then_name),
		cmocka_unit_test(test_without_a_view_the_oldest_member_leads),
		cmocka_unit_test(test_restarted_member_is_a_joiner),
		cmocka_unit_test(test_max_workers_leaves_the_youngest_as_spares),
		cmocka_unit_test(test_kept_spares_promote_on_growth_and_replace_the_lost),
		cmocka_unit_test(test_quorum_is_a_strict_majority_of_those_that_did_not_leave),
		cmocka_unit_test(test_digest_depends_on_order_and_generation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
