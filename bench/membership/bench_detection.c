/* Crash detection time per profile on the simulator: from kill to every survivor marking the node dead,
 * over many seeded trials, at N = 8, 32, 128 with 0% and 5% loss. Median, p90 and max per cell.
 * Usage: bench_detection [trials]. Compare: memberlist via serf, kill -9 on loopback, lan 5.8 s (N=8)
 * and 9.3 s (N=32), local 4.3 s and 6.7 s (figures from the issue). */
#include <stdlib.h>

#include "bench_json.h"
#include "tests/sim/watch.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double one_trial(ftl_swim_profile profile, int n, double loss, uint64_t seed, int *false_deaths)
{
	ftl_sim_options o;
	ftl_sim_options_default(&o, n, profile);
	o.loss = loss;
	o.seed = seed;
	o.is_quiet = true;
	ftl_sim *sim = ftl_sim_new(&o);
	ftl_watch w;
	int victim = (int)(seed % (uint64_t)n);
	ftl_watch_init(&w, sim, victim, FTL_EVENT_DEAD);
	w.may_die[victim] = true;
	ftl_sim_run_for(sim, 3 * o.config.probe_interval_us + (int64_t)(seed % 997) * 1000);
	int64_t crash_at = ftl_sim_now(sim);
	ftl_sim_crash(sim, victim);
	int64_t bound = ftl_swim_detection_bound_us(&o.config, n);
	while (ftl_sim_now(sim) - crash_at < 2 * bound && ftl_watch_count(&w, sim) < n - 1)
		ftl_sim_run_for(sim, o.config.gossip_interval_us);
	double took = ftl_watch_count(&w, sim) == n - 1 ? (double)(ftl_watch_last(&w, sim) - crash_at) / 1e6 : -1;
	*false_deaths += w.false_deaths;
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
	return took;
}

int main(int argc, char **argv)
{
	int trials = argc > 1 ? atoi(argv[1]) : 50;
	const int sizes[] = {8, 32, 128};
	const double losses[] = {0.0, 0.05};
	double *t = calloc((size_t)trials, sizeof(*t));
	for (int p = 0; p < FTL_PROFILE_MAX; p++) {
		for (size_t si = 0; si < 3; si++) {
			for (size_t li = 0; li < 2; li++) {
				int false_deaths = 0, missed = 0;
				for (int k = 0; k < trials; k++) {
					t[k] = one_trial((ftl_swim_profile)p, sizes[si], losses[li], 1000 + (uint64_t)k,
							 &false_deaths);
					if (t[k] < 0)
						missed++;
				}
				qsort(t, (size_t)trials, sizeof(*t), cmp_double);
				BENCH_FIGURE("detection",
					     "\"profile\":\"%s\",\"nodes\":%d,\"loss\":%.2f,\"trials\":%d,\"median_s\":%.3f,"
					     "\"p90_s\":%.3f,\"max_s\":%.3f,\"undetected\":%d,\"false_deaths\":%d",
					     ftl_swim_profile_strs[p], sizes[si], losses[li], trials, t[trials / 2],
					     t[trials * 9 / 10], t[trials - 1], missed, false_deaths);
				fflush(stdout);
			}
		}
	}
	free(t);
	return 0;
}
