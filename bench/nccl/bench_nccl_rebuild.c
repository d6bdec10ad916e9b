/* bench_nccl_rebuild: what rebuilding the NCCL communicator after a death costs on one rank (one GPU), each
 * figure the median (with min and max) of REPS repetitions, one JSON line per figure:
 *   init_ms                a fresh ncclCommInitRankConfig, started and awaited (no overlap);
 *   first_allreduce_ms     the first 4-byte allreduce on it (NCCL connects lazily);
 *   (no shrink figures: one rank has nobody to drop, and NCCL refuses a shrink by nobody; a shrink
 *   needs two GPUs, where the rebuild of a view that lost a rank takes that path)
 *   abort_call_ms          ftl_comm_abort + ftl_comm_delete on the caller's thread (the critical path);
 *   teardown_ms            until the detached ncclCommAbort/cudaFree finished (off the critical path);
 *   rebuild_<path>_ms      ftl_comm_rebuild after an abort, vote included, plus the first allreduce: the
 *                          whole critical path from a failed view to a working communicator, by path.
 * Usage: bench_nccl_rebuild [REPS] (default 10). Exit 77 without a GPU. */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "../membership/bench_json.h"
#include "comm/comm_rebuild.h"
#include "tests/comm/nccl_one_rank.h"

enum { MAX_REPS = 1000 };

enum figure { INIT, FIRST, ABORT_CALL, TEARDOWN, REBUILD_INIT, REBUILD_SHRINK, FIGURES };
static const char *const figure_names[FIGURES] = {
	"init_ms", "first_allreduce_ms", "abort_call_ms", "teardown_ms", "rebuild_init_ms", "rebuild_shrink_ms",
};

static double samples[FIGURES][MAX_REPS];
static int counts[FIGURES];
static float *dev;
static ftl_comm *host;
static uint64_t next_id = 1;

static void record(enum figure f, double ms)
{
	samples[f][counts[f]++] = ms;
}

static void fail(const char *what, ftl_comm *comm)
{
	fprintf(stderr, "bench_nccl_rebuild: %s: %s\n", what, comm ? ftl_comm_error(comm) : "");
	exit(1);
}

static void allreduce(ftl_comm *comm, enum figure f)
{
	int64_t t0 = nccl_one_rank_now_ns();
	if (ftl_comm_allreduce(comm, dev, dev, 1, FTL_F32, FTL_SUM, NULL, NULL) != FTL_OK)
		fail("allreduce", comm);
	record(f, nccl_one_rank_ms_since(t0));
}

static ftl_comm *fresh(void)
{
	unsigned char id[FTL_COMM_NCCL_ID_LEN];
	struct ftl_comm_config cfg = nccl_one_rank_config(id, next_id++);
	ftl_comm *comm;
	int64_t t0 = nccl_one_rank_now_ns();
	if (ftl_comm_start(&cfg, &comm) != FTL_OK || ftl_comm_await(comm) != FTL_OK) {
		fprintf(stderr, "bench_nccl_rebuild: init: %s\n", ftl_diag_message());
		exit(1);
	}
	record(INIT, nccl_one_rank_ms_since(t0));
	return comm;
}

/* Abort (a view change), then the caller-side cost of letting go of the comm, then the detached teardown. */
static void abort_and_destroy(ftl_comm *comm)
{
	int64_t t0 = nccl_one_rank_now_ns();
	ftl_comm_abort(comm);
	ftl_comm_delete(comm);
	record(ABORT_CALL, nccl_one_rank_ms_since(t0));
	int64_t drained = nccl_one_rank_drain_teardowns(120000);
	if (drained < 0)
		fail("teardowns did not finish in 120 s", NULL);
	record(TEARDOWN, (double)drained);
}

/* ftl_comm_rebuild from an aborted communicator, with the vote (host) or without (a fresh init). */
static void rebuild(bool is_voting)
{
	static const uint64_t key = 1;
	ftl_comm *old = fresh();
	allreduce(old, FIRST);
	ftl_comm_abort(old);
	unsigned char id[FTL_COMM_NCCL_ID_LEN];
	struct ftl_comm_config cfg = nccl_one_rank_config(id, next_id++);
	struct ftl_comm_rebuild rb = {.old = old, .old_keys = &key, .old_n = 1, .new_keys = &key, .new_n = 1,
				      .host = is_voting ? host : NULL, .cfg = &cfg};
	ftl_comm *comm;
	ftl_comm_rebuild_path path;
	int64_t t0 = nccl_one_rank_now_ns();
	if (ftl_comm_rebuild(&rb, &comm, &path) != FTL_OK) {
		fprintf(stderr, "bench_nccl_rebuild: rebuild: %s\n", ftl_diag_message());
		exit(1);
	}
	if (ftl_comm_allreduce(comm, dev, dev, 1, FTL_F32, FTL_SUM, NULL, NULL) != FTL_OK)
		fail("allreduce after the rebuild", comm);
	record(path == FTL_COMM_REBUILD_SHRINK ? REBUILD_SHRINK : REBUILD_INIT, nccl_one_rank_ms_since(t0));
	abort_and_destroy(comm);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 10;
	if (reps < 1 || reps > MAX_REPS / 3) {
		fprintf(stderr, "usage: bench_nccl_rebuild [REPS in 1..%d]\n", MAX_REPS / 3);
		return 2;
	}
	nccl_one_rank_require_gpu("bench_nccl_rebuild");
	host = nccl_one_rank_host();
	if (cudaMalloc((void **)&dev, sizeof(float)) != cudaSuccess)
		fail("cudaMalloc", NULL);
	for (int r = 0; r < reps; r++) {
		ftl_comm *comm = fresh();
		allreduce(comm, FIRST);
		abort_and_destroy(comm);
		rebuild(false);
		rebuild(true);
	}
	int version = 0;
	ncclGetVersion(&version);
	for (int f = 0; f < FIGURES; f++) {
		if (counts[f] == 0) {
			BENCH_FIGURE("nccl_rebuild", "\"figure\":\"%s\",\"unsupported\":true,\"nccl\":%d", figure_names[f],
				     version);
			continue;
		}
		qsort(samples[f], (size_t)counts[f], sizeof(double), by_value);
		BENCH_FIGURE("nccl_rebuild", "\"figure\":\"%s\",\"median\":%.3f,\"min\":%.3f,\"max\":%.3f,\"n\":%d,\"nccl\":%d",
			     figure_names[f], samples[f][counts[f] / 2], samples[f][0], samples[f][counts[f] - 1], counts[f],
			     version);
	}
	ftl_comm_delete(host);
	cudaFree(dev);
	return 0;
}
