/* The simulator at scale (default 10,000 nodes): after a crash, how many gossip rounds until every node
 * knows; packets and bytes each node sends per second; memory per node; and the wall time to simulate
 * 60 virtual seconds. Usage: bench_sim_scale [nodes] [profile] [virtual seconds]. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_json.h"
#include "tests/sim/watch.h"

static double wall(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	ftl_swim_profile profile = FTL_PROFILE_LAN;
	if (argc > 2 && ftl_swim_profile_from_name(argv[2], &profile) != FTL_OK) {
		fprintf(stderr, "profile %s\n", ftl_diag_message());
		return 2;
	}
	int64_t virtual_s = argc > 3 ? atoll(argv[3]) : 60;
	ftl_sim_options o;
	ftl_sim_options_default(&o, n, profile);
	o.is_insecure = true;
	long rss0 = rss_kb();
	double t0 = wall();
	ftl_sim *sim = ftl_sim_new(&o);
	double setup = wall() - t0;
	long rss1 = rss_kb();
	ftl_watch w;
	ftl_watch_init(&w, sim, n / 3, FTL_EVENT_DEAD);
	w.may_die[n / 3] = true;

	t0 = wall();
	ftl_sim_run_for(sim, 5 * 1000000LL);
	uint64_t sent0 = 0, bytes0 = 0;
	for (int i = 0; i < n; i++) {
		sent0 += ftl_swim_get_stats(ftl_sim_node(sim, i))->packets_sent;
		bytes0 += ftl_swim_get_stats(ftl_sim_node(sim, i))->bytes_sent;
	}
	int64_t crash_at = ftl_sim_now(sim);
	ftl_sim_crash(sim, n / 3);
	ftl_sim_run_for(sim, (virtual_s - 5) * 1000000LL);
	double run = wall() - t0;

	uint64_t sent = 0, bytes = 0;
	for (int i = 0; i < n; i++) {
		if (!ftl_sim_is_running(sim, i))
			continue;
		sent += ftl_swim_get_stats(ftl_sim_node(sim, i))->packets_sent;
		bytes += ftl_swim_get_stats(ftl_sim_node(sim, i))->bytes_sent;
	}
	double per_node_s = (double)(n - 1) * (double)(virtual_s - 5);
	int64_t first = INT64_MAX;
	for (int i = 0; i < n; i++)
		if (w.seen_at[i] >= 0 && w.seen_at[i] < first)
			first = w.seen_at[i];
	int knew = ftl_watch_count(&w, sim);
	const char *p = ftl_swim_profile_strs[profile];
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"setup_wall_s\",\"value\":%.2f", n, p, setup);
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"memory_per_node_bytes\",\"value\":%.0f", n, p,
		     (double)(rss1 - rss0) * 1024.0 / n);
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"wall_s_per_60_virtual_s\",\"value\":%.2f", n,
		     p, run * 60.0 / (double)virtual_s);
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"death_known_by\",\"value\":%d,\"of\":%d", n, p,
		     knew, n - 1);
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"crash_to_all_know_s\",\"value\":%.3f", n, p,
		     (double)(ftl_watch_last(&w, sim) - crash_at) / 1e6);
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"death_rounds_first_to_all\",\"value\":%.1f", n,
		     p, (double)(ftl_watch_last(&w, sim) - first) / (double)o.config.gossip_interval_us);
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"packets_per_node_per_s\",\"value\":%.2f", n, p,
		     (double)(sent - sent0) / per_node_s);
	BENCH_FIGURE("sim_scale", "\"nodes\":%d,\"profile\":\"%s\",\"figure\":\"bytes_per_node_per_s\",\"value\":%.1f", n, p,
		     (double)(bytes - bytes0) / per_node_s);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
	return 0;
}
