/* What the rendezvous tests share: cmocka's includes, time units, and a few checks on simulator runs. */
#ifndef FTL_TESTS_RDV_TEST_H
#define FTL_TESTS_RDV_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rdv_sim.h"

#define SEC 1000000LL
#define MS 1000LL

/* The view node i holds. */
static inline const ftl_rdv_view *sim_view(rdv_sim *sim, int i)
{
	return ftl_rdv_current(rdv_sim_node(sim, i));
}

/* Asserts that node i holds a view whose members are exactly the named nodes, in this rank order. */
static inline void assert_view_is(rdv_sim *sim, int i, const int *ranks, int n)
{
	const ftl_rdv_view *v = sim_view(sim, i);
	assert_int_equal(v->n, n);
	for (int k = 0; k < n; k++)
		assert_string_equal(v->members[k].name, rdv_sim_name(sim, ranks[k]));
}

/* Starts n nodes with the given options and runs until they hold one view; fails the test otherwise. */
static inline rdv_sim *sim_start_converged(rdv_sim_options *o)
{
	rdv_sim *sim = rdv_sim_new(o);
	assert_true(rdv_sim_run_until_converged(sim, 10 * SEC) >= 0);
	return sim;
}

#endif
