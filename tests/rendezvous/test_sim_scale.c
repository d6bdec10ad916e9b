/* The job's maximum changed at run time (ftl_rdv_request_max, `ftlctl scale --max N`) on the simulator: a
 * request made on any member reaches the coordinator in its readies; the view's members are committed again
 * with the new maximum, then the spares join (scale up) or the youngest members step down to spares (scale
 * down); the maximum travels in every later view (a death is replaced within it); bad requests are refused
 * with a reason and change nothing. */
#include "rdv_test.h"

static void assert_max_everywhere(ftl_sim *sim, uint32_t max)
{
	for (int i = 0; i < ftl_sim_size(sim); i++)
		if (ftl_sim_is_running(sim, i))
			assert_int_equal(ftl_rdv_max_workers(ftl_sim_rdv(sim, i)), max);
}

static void test_scale_up_then_down_moves_spares_in_and_out(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 5);
	o.rdv.max_workers = 3;
	ftl_sim *sim = sim_start_converged(&o);
	int three[] = {0, 1, 2};
	assert_view_is(sim, 0, three, 3);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 4)), FTL_RDV_SPARE);
	uint64_t epoch = sim_view(sim, 0)->epoch;

	assert_int_equal(ftl_sim_request_max(sim, 2, 5), FTL_OK); /* not the coordinator: via its readies */
	sim_converge_after_change(sim);
	int five[] = {0, 1, 2, 3, 4};
	assert_view_is(sim, 4, five, 5);
	assert_max_everywhere(sim, 5);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch + 2); /* the same members with the new maximum, then the join */
	assert_int_equal(sim_view(sim, 0)->max_workers, 5);

	assert_int_equal(ftl_sim_request_max(sim, 0, 2), FTL_OK);
	sim_converge_after_change(sim);
	int two[] = {0, 1};
	assert_view_is(sim, 3, two, 2);
	assert_max_everywhere(sim, 2);
	assert_int_equal(ftl_rdv_get_phase(ftl_sim_rdv(sim, 2)), FTL_RDV_SPARE);

	/* the maximum lives in the view: a death is replaced by a spare, and the view stays at 2 */
	ftl_sim_crash(sim, 1);
	sim_converge_after_change(sim);
	assert_int_equal(sim_view(sim, 0)->n, 2);
	assert_int_equal(sim_view(sim, 0)->max_workers, 2);
	assert_int_equal(ftl_sim_conflicts(sim), 0);
	ftl_sim_delete(sim);
}

static void test_bad_requests_are_refused_and_change_nothing(void **state)
{
	(void)state;
	ftl_sim_options o;
	rdv_options(&o, 4);
	o.rdv.min_workers = 2;
	o.rdv.max_workers = 3;
	ftl_sim *sim = sim_start_converged(&o);
	uint64_t epoch = sim_view(sim, 0)->epoch;
	assert_int_equal(ftl_sim_request_max(sim, 0, 1), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "expected 2 (FTL_MIN_WORKERS)"));
	assert_int_equal(ftl_sim_request_max(sim, 0, FTL_RDV_MAX_MEMBERS + 1), FTL_ERR_INVALID);
	assert_int_equal(ftl_sim_request_max(sim, 3, 4), FTL_ERR_INVALID); /* a spare */
	assert_non_null(strstr(ftl_diag_message(), "not a member of a view"));
	assert_int_equal(ftl_sim_request_max(sim, 1, 3), FTL_OK); /* the maximum in force: nothing to commit */
	ftl_sim_run_for(sim, 5 * SEC);
	assert_int_equal(sim_view(sim, 0)->epoch, epoch);
	assert_int_equal(sim_view(sim, 0)->max_workers, 0);
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale_up_then_down_moves_spares_in_and_out),
		cmocka_unit_test(test_bad_requests_are_refused_and_change_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
