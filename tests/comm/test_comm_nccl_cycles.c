/* test_comm_nccl_cycles: 100 view changes in a row on one GPU, the way the training layer makes them: each
 * cycle aborts the communicator (what a view change does to the old one), rebuilds the next with
 * ftl_comm_rebuild (every other cycle with the host comm's vote; one rank keeps the same members, which
 * NCCL cannot shrink by, so every cycle takes a fresh init from a new unique id), and runs a checked
 * allreduce on it. The promise:
 * nothing leaks. Once every detached teardown has finished, the free device memory (cudaMemGetInfo) and the
 * open file descriptors (/proc/self/fd) are back where they were after the warm-up cycles (NCCL allocates
 * some things once per process). Prints the rebuild timings by path as JSON lines. Exit 77 without a GPU. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "comm/comm_rebuild.h"
#include "nccl_one_rank.h"

enum { CYCLES = 100, WARMUP = 4, N = 1 << 16 };
/* Generous bounds: one leaked communicator costs NCCL's buffers (megabytes) and several descriptors. */
static const size_t LEAK_BOUND_BYTES = 48u << 20;
static const int FD_BOUND = 4;
static const int64_t DRAIN_LIMIT_MS = 120000;

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
		n += e->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static size_t free_device_bytes(void)
{
	size_t free_b = 0, total = 0;
	cudaMemGetInfo(&free_b, &total);
	return free_b;
}

struct path_times {
	int count;
	double rebuild_ms, first_call_ms, max_ms;
};

/* One cycle: rebuild from old (consumed), allreduce checked, abort. Returns the new, aborted communicator. */
static ftl_comm *cycle(ftl_comm *old, ftl_comm *host, int i, float *dev, struct path_times times[])
{
	static const uint64_t key = 1;
	unsigned char id[FTL_COMM_NCCL_ID_LEN];
	struct ftl_comm_config cfg = nccl_one_rank_config(id, (uint64_t)i + 1);
	struct ftl_comm_rebuild rb = {.old = old, .old_keys = &key, .old_n = old ? 1 : 0, .new_keys = &key, .new_n = 1,
				      .host = i % 2 ? host : NULL, .cfg = &cfg};
	ftl_comm *comm = NULL;
	ftl_comm_rebuild_path path;
	int64_t t0 = nccl_one_rank_now_ns();
	ftl_err e = ftl_comm_rebuild(&rb, &comm, &path);
	double rebuilt_ms = nccl_one_rank_ms_since(t0);
	if (e != FTL_OK) {
		fprintf(stderr, "cycle %d: rebuild: %s\n", i, ftl_diag_message());
		nccl_one_rank_failures++;
		return NULL;
	}
	int64_t t1 = nccl_one_rank_now_ns();
	e = ftl_comm_allreduce(comm, dev, dev, N, FTL_F32, FTL_SUM, NULL, NULL); /* completes a started init */
	double call_ms = nccl_one_rank_ms_since(t1);
	float back[2] = {0};
	cudaMemcpy(back, dev + N - 2, sizeof(back), cudaMemcpyDeviceToHost);
	CHECK(e == FTL_OK && back[0] == 1.0f && back[1] == 1.0f); /* a world of one: the sum is the input */
	if (e != FTL_OK)
		fprintf(stderr, "cycle %d (%s): %s\n", i, ftl_comm_rebuild_path_strs[path], ftl_comm_error(comm));
	struct path_times *p = &times[path];
	p->count++;
	p->rebuild_ms += rebuilt_ms;
	p->first_call_ms += call_ms;
	if (rebuilt_ms + call_ms > p->max_ms)
		p->max_ms = rebuilt_ms + call_ms;
	ftl_comm_abort(comm);
	CHECK(ftl_comm_barrier(comm) == FTL_ERR_ABORTED);
	return comm;
}

int main(void)
{
	nccl_one_rank_require_gpu("test_comm_nccl_cycles");
	ftl_comm *host = nccl_one_rank_host();
	float *dev = NULL;
	CHECK(cudaMalloc((void **)&dev, N * sizeof(float)) == cudaSuccess);
	float *ones = malloc(N * sizeof(float));
	for (int k = 0; k < N && ones; k++)
		ones[k] = 1.0f;
	struct path_times times[FTL_COMM_REBUILD_PATH_MAX] = {0};
	ftl_comm *comm = NULL;
	size_t base_free = 0;
	int base_fds = 0;
	for (int i = 0; i < CYCLES && nccl_one_rank_failures == 0; i++) {
		nccl_one_rank_upload(dev, ones, N * sizeof(float));
		comm = cycle(comm, host, i, dev, times);
		if (i == WARMUP - 1) {
			CHECK(nccl_one_rank_drain_teardowns(DRAIN_LIMIT_MS) >= 0);
			base_free = free_device_bytes();
			base_fds = open_fds();
		}
	}
	ftl_comm_delete(comm);
	int64_t drain_ms = nccl_one_rank_drain_teardowns(DRAIN_LIMIT_MS);
	CHECK(drain_ms >= 0);
	size_t end_free = free_device_bytes();
	int end_fds = open_fds();
	for (int p = 0; p < FTL_COMM_REBUILD_PATH_MAX; p++) {
		if (times[p].count == 0)
			continue;
		printf("{\"figure\":\"nccl_rebuild_cycle\",\"path\":\"%s\",\"cycles\":%d,\"rebuild_ms_mean\":%.3f,"
		       "\"first_allreduce_ms_mean\":%.3f,\"cycle_ms_max\":%.3f}\n",
		       ftl_comm_rebuild_path_strs[p], times[p].count, times[p].rebuild_ms / times[p].count,
		       times[p].first_call_ms / times[p].count, times[p].max_ms);
	}
	long long leaked = (long long)base_free - (long long)end_free;
	printf("{\"figure\":\"nccl_rebuild_leaks\",\"cycles\":%d,\"device_bytes_lost\":%lld,\"fds_gained\":%d,"
	       "\"teardown_drain_ms\":%lld,\"nccl_can_shrink\":%s}\n",
	       CYCLES, leaked, end_fds - base_fds, (long long)drain_ms, ftl_comm_nccl_can_shrink() ? "true" : "false");
	CHECK(times[FTL_COMM_REBUILD_INIT].count + times[FTL_COMM_REBUILD_SHRINK].count == CYCLES);
	CHECK(times[FTL_COMM_REBUILD_SHRINK].count == 0); /* the same members: never a shrink by nobody */
	CHECK(leaked < (long long)LEAK_BOUND_BYTES);
	CHECK(end_fds - base_fds <= FD_BOUND);
	ftl_comm_delete(host);
	cudaFree(dev);
	free(ones);
	printf("%s\n", nccl_one_rank_failures ? "FAIL" : "PASS");
	return nccl_one_rank_failures ? 1 : 0;
}
