/* A slow member sent to the spares (ftl_rdv_request_bench, the pace verdict's replace policy) on the
 * simulator: asked on any member of the view, the view's members are committed again with the member
 * benched, then the oldest spare takes its place at the end of the view and the benched member waits as the
 * last spare; the benching travels in every later view, so a death is replaced by a healthy spare first and
 * by the benched one only when no other waits; a restart (a new life) is not benched. Requests that could
 * not keep the view's size, or name a non-member, are refused with a reason and change nothing. */
#include "rdv_test.h"

static void test_a_benched_member_gives_its_place_to_the_oldest_spare(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 6);
	o.rdv.max_workers = 4;
	ftl_sim *sim = sim_start_converged(&o);
	int four[] = {0, 1, 2, 3};
	assert_view_is(sim, 0, four, 4);
	uint64_t epoch = sim_view(sim, 0)->epoch;

	assert_int_equal(ftl_sim_request_bench(sim, 3, 1), FTL_OK); /* not the coordinator: via its readies */
	sim_converge_after_change(sim);
	int swapped[] = {0, 2, 3, 4};
	assert_view_is(sim, 5, swapped, 4);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch + 2); /* the same members benching 1, then the swap */
	assert_string_equal(sim_view(sim, 0)->benched.name, ftl_sim_name(sim, 1));
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 1)), FTL_RDV_SPARE);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 5)), FTL_RDV_SPARE);

	/* a death: the healthy spare (5) comes in, not the benched one, younger as it may be */
	ftl_sim_crash(sim, 2);
	sim_converge_after_change(sim);
	int after_death[] = {0, 3, 4, 5};
	assert_view_is(sim, 0, after_death, 4);
	assert_string_equal(sim_view(sim, 1)->benched.name, ftl_sim_name(sim, 1));

	/* another: no other spare waits, so the benched member is better than a smaller view */
	ftl_sim_crash(sim, 3);
	sim_converge_after_change(sim);
	int last_resort[] = {0, 4, 5, 1};
	assert_view_is(sim, 0, last_resort, 4);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_a_restarted_member_is_not_benched(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 4);
	o.rdv.max_workers = 3;
	ftl_sim *sim = sim_start_converged(&o);
	assert_int_equal(ftl_sim_request_bench(sim, 0, 2), FTL_OK);
	sim_converge_after_change(sim);
	int swapped[] = {0, 1, 3};
	assert_view_is(sim, 0, swapped, 3);
	ftl_sim_restart(sim, 2); /* a new life: a spare like any other joiner */
	ftl_sim_crash(sim, 1);
	sim_converge_after_change(sim);
	int refilled[] = {0, 3, 2};
	assert_view_is(sim, 0, refilled, 3);
	ftl_sim_delete(sim);
}

static void test_requests_that_would_shrink_the_view_are_refused(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 3);
	ftl_sim *sim = sim_start_converged(&o); /* no maximum reached: no spare */
	uint64_t epoch = sim_view(sim, 0)->epoch;
	assert_int_equal(ftl_sim_request_bench(sim, 0, 2), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "no spare waits"));
	ftl_sim_run_for(sim, 5 * SEC);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch);
	assert_int_equal(sim_view(sim, 0)->n, 3);
	assert_string_equal(sim_view(sim, 0)->benched.name, "");
	ftl_sim_delete(sim);

	rdv_options(&o, 3);
	o.rdv.max_workers = 2;
	sim = sim_start_converged(&o);
	assert_int_equal(ftl_sim_request_bench(sim, 2, 0), FTL_ERR_INVALID); /* asked on a spare */
	assert_non_null(strstr(ftl_diag_message(), "not a member of a view"));
	assert_int_equal(ftl_sim_request_bench(sim, 0, 2), FTL_ERR_INVALID); /* of a spare */
	assert_non_null(strstr(ftl_diag_message(), "is not a member of view"));
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_benched_member_gives_its_place_to_the_oldest_spare),
		cmocka_unit_test(test_a_restarted_member_is_not_benched),
		cmocka_unit_test(test_requests_that_would_shrink_the_view_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
