/* The cost of ftl_execute around a step when nothing changes: one worker (a view of one), an empty
 * step, many steps; the time per ftl_execute call minus the time of calling the step directly.
 * Target (issue 5): under 10 us. Usage: bench_execute_overhead [steps]. One JSON line per figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ftl/ftl.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile uint64_t sink;

static ftl_err empty_step(void *ctx, const ftl_step_info *info)
{
	sink += info->step + info->n_indices;
	return FTL_OK;
}

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 200000;
	char dir[] = "/tmp/ftl-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	ftl_agent_config cfg;
	ftl_agent_config_default(&cfg);
	snprintf(cfg.name, sizeof(cfg.name), "bench");
	snprintf(cfg.bind, sizeof(cfg.bind), "127.0.0.1:0");
	snprintf(cfg.advertise, sizeof(cfg.advertise), "127.0.0.1:%d", 30000 + (int)(getpid() % 20000));
	snprintf(cfg.bind, sizeof(cfg.bind), "%s", cfg.advertise);
	snprintf(cfg.run_dir, sizeof(cfg.run_dir), "%s", dir);
	snprintf(cfg.log_level, sizeof(cfg.log_level), "warn");
	cfg.is_insecure = true;
	ftl_training_config t;
	ftl_training_config_default(&t);
	t.settle_ms = 0;
	ftl_agent *a = ftl_agent_new(&cfg);
	if (!a || ftl_set_training(a, &t) != FTL_OK) {
		fprintf(stderr, "bench: %s\n", ftl_error_message());
		return 1;
	}
	static float params[1024];
	ftl_register_buffer(a, "params", params, sizeof(params), false);
	ftl_set_sampler(a, 1000000, 64, 1);
	if (ftl_agent_start(a) != FTL_OK) {
		fprintf(stderr, "bench: %s\n", ftl_error_message());
		return 1;
	}
	if (ftl_execute(a, empty_step, NULL) != FTL_OK) { /* the first one waits for the view */
		fprintf(stderr, "bench: %s\n", ftl_last_error(a));
		return 1;
	}
	ftl_step_info info = {0};
	double t0 = now_s();
	for (long i = 0; i < steps; i++)
		empty_step(NULL, &info);
	double direct = (now_s() - t0) / (double)steps;
	t0 = now_s();
	for (long i = 0; i < steps; i++)
		if (ftl_execute(a, empty_step, NULL) != FTL_OK)
			return 1;
	double wrapped = (now_s() - t0) / (double)steps;
	printf("{\"bench\":\"execute_overhead\",\"steps\":%ld,\"figure\":\"overhead_us_per_step\",\"value\":%.3f}\n",
	       steps, (wrapped - direct) * 1e6);
	ftl_agent_stop(a);
	ftl_agent_delete(a);
	return 0;
}
