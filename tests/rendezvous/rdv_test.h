/* What the rendezvous tests share: cmocka's includes, time units, the simulator set up for training (the
 * joined node on every simulated member: real membership under the rendezvous), and a few checks. */
#ifndef FTL_TESTS_RDV_TEST_H
#define FTL_TESTS_RDV_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/sim/sim.h"

#define SEC 1000000LL
#define MS 1000LL
#define RDV_MAX_NODES 64 /* most nodes a test starts, joins and restarts included */

/* n training nodes on the train profile, converged membership, sealed packets: 1 ms delay, 0.5 ms jitter,
 * no loss, seeds re-resolved every second (a partition heals through them); min 1, max n+16 workers,
 * settle 1 s, ready interval 100 ms. */
static inline void rdv_options(ftl_sim_options *o, int n)
{
	ftl_sim_options_default(o, n, FTL_PROFILE_TRAIN);
	o->capacity = RDV_MAX_NODES;
	o->delay_us = 1000;
	o->jitter_us = 500;
	o->reseed_interval_us = 1 * SEC;
	o->is_training = true;
	o->rdv = (ftl_rdv_config){.min_workers = 1, .max_workers = (uint32_t)n + 16, .settle_us = 1 * SEC,
				  .ready_interval_us = 100 * MS};
}

/* The view node i holds. */
static inline const ftl_rdv_view *sim_view(ftl_sim *sim, int i)
{
	return ftl_rdv_current(ftl_sim_rdv(sim, i));
}

/* Asserts that node i holds a view whose members are exactly the named nodes, in this rank order. */
static inline void assert_view_is(ftl_sim *sim, int i, const int *ranks, int n)
{
	const ftl_rdv_view *v = sim_view(sim, i);
	assert_int_equal(v->n, n);
	for (int k = 0; k < n; k++)
		assert_string_equal(v->members[k].name, ftl_sim_name(sim, ranks[k]));
}

/* After a change (a crash, a request): runs past it, since the cluster still counts as converged on the old
 * view until the change is seen, then until it holds one view again; fails the test otherwise. */
static inline void sim_converge_after_change(ftl_sim *sim)
{
	ftl_sim_run_for(sim, 3 * SEC);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
}

/* Starts n nodes with the given options and runs until they hold one view; fails the test otherwise. */
static inline ftl_sim *sim_start_converged(ftl_sim_options *o)
{
	ftl_sim *sim = ftl_sim_new(o);
	assert_true(ftl_sim_run_until_converged(sim, 10 * SEC) >= 0);
	return sim;
}

#endif
