/* nccl_one_rank: the shared setup of the one-GPU NCCL programs (see nccl_one_rank.h). */
#include "nccl_one_rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

int nccl_one_rank_failures;

void nccl_one_rank_require_gpu(const char *program)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* lines reach a log file at once, also from a run that hangs */
	if (!ftl_comm_nccl_probe()) {
		printf("SKIP: %s needs a GPU: %s\n", program, ftl_diag_message());
		exit(NCCL_ONE_RANK_SKIP);
	}
}

void nccl_one_rank_upload(void *dev, const void *host, size_t bytes)
{
	CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
	CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

struct ftl_comm *nccl_one_rank_host(void)
{
	static const char boot[] = "127.0.0.1:1\n"; /* a world of one never connects */
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.bootstrap = boot;
	cfg.bootstrap_len = strlen(boot);
	struct ftl_comm *host;
	if (ftl_comm_new(&cfg, &host) != FTL_OK) {
		fprintf(stderr, "host communicator: %s\n", ftl_diag_message());
		exit(1);
	}
	return host;
}

struct ftl_comm_config nccl_one_rank_config(unsigned char id[FTL_COMM_NCCL_ID_LEN], uint64_t comm_id)
{
	if (ftl_comm_nccl_unique_id(id, FTL_COMM_NCCL_ID_LEN) != FTL_OK) {
		fprintf(stderr, "unique id: %s\n", ftl_diag_message());
		exit(1);
	}
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.backend = FTL_COMM_NCCL;
	cfg.bootstrap = id;
	cfg.bootstrap_len = FTL_COMM_NCCL_ID_LEN;
	cfg.comm_id = comm_id;
	cfg.timeout_ms = 30000;
	return cfg;
}

int64_t nccl_one_rank_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double nccl_one_rank_ms_since(int64_t t0_ns)
{
	return (double)(nccl_one_rank_now_ns() - t0_ns) / 1e6;
}

int64_t nccl_one_rank_drain_teardowns(int64_t limit_ms)
{
	int64_t t0 = nccl_one_rank_now_ns();
	while (ftl_comm_nccl_pending_teardowns() > 0) {
		if (nccl_one_rank_ms_since(t0) > (double)limit_ms)
			return -1;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return (int64_t)nccl_one_rank_ms_since(t0);
}
