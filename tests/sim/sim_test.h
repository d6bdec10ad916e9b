/* What the simulator tests share: cmocka's includes and a one-line simulator setup. */
#ifndef FTL_TESTS_SIM_TEST_H
#define FTL_TESTS_SIM_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "watch.h"

#define SEC 1000000LL
#define MS 1000LL

/* A converged cluster of n on the given profile, with a watch installed (no subject yet). */
static inline ftl_sim *sim_start(ftl_sim_options *o, int n, ftl_swim_profile profile, ftl_watch *w)
{
	if (o->n == 0)
		ftl_sim_options_default(o, n, profile);
	ftl_sim *sim = ftl_sim_new(o);
	ftl_watch_init(w, sim, -1, FTL_EVENT_DEAD);
	return sim;
}

/* Runs in steps of `step` until cond(sim, arg) holds or `limit` passes; returns the time it took or -1. */
static inline int64_t sim_run_until_true(ftl_sim *sim, int64_t limit, int64_t step,
					 int (*cond)(ftl_sim *, int), int arg)
{
	int64_t start = ftl_sim_now(sim);
	while (ftl_sim_now(sim) - start <= limit) {
		if (cond(sim, arg))
			return ftl_sim_now(sim) - start;
		ftl_sim_run_for(sim, step);
	}
	return -1;
}

/* Every running node sees every other running node alive (arg unused). */
static inline int sim_all_alive(ftl_sim *sim, int arg)
{
	for (int i = 0; i < ftl_sim_size(sim); i++) {
		if (!ftl_sim_is_running(sim, i))
			continue;
		if (ftl_sim_count_seeing(sim, i, FTL_MEMBER_ALIVE) != ftl_sim_running_count(sim, i))
			return 0;
	}
	return 1;
}

#endif
