/* bench_comm_tcp: allreduce busbw of the ftl tcp backend, N processes on loopback (the test harness
 * forks them), f32 sum, out of place, the sizes of bench_comm.h. Usage: bench_comm_tcp N [algorithm]
 * (auto, ring, doubling, halving: forcing one is how the crossovers in comm_tcp_collectives.c are
 * measured). Rank 0 times the loop between two barriers; one JSON line per size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_comm.h"
#include "comm_tcp.h"
#include "harness.h"

enum { REP_FIGURE = 1 };

static int bench_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 600000);
	if (comm == NULL)
		return 1;
	ftl_comm_tcp_force_algo(comm, *(enum ftl_comm_tcp_algo *)c->arg);
	size_t max = bench_comm_sizes[BENCH_COMM_N_SIZES - 1];
	float *send = malloc(max), *recv = malloc(max);
	if (send == NULL || recv == NULL)
		return 1;
	for (size_t i = 0; i < max / 4; i++)
		send[i] = (float)(i % 7);
	memset(recv, 0, max);
	for (size_t s = 0; s < BENCH_COMM_N_SIZES; s++) {
		size_t bytes = bench_comm_sizes[s];
		int iters = bench_comm_iters(bytes);
		for (int i = 0; i < BENCH_COMM_WARMUP; i++)
			ftl_comm_allreduce(comm, send, recv, bytes / 4, FTL_F32, FTL_SUM);
		ftl_err e = ftl_comm_barrier(comm);
		int64_t t0 = harness_now_ns();
		for (int i = 0; i < iters && e == FTL_OK; i++)
			e = ftl_comm_allreduce(comm, send, recv, bytes / 4, FTL_F32, FTL_SUM);
		if (e == FTL_OK)
			e = ftl_comm_barrier(comm);
		int64_t ns = harness_now_ns() - t0;
		if (e != FTL_OK) {
			fprintf(stderr, "rank %d: %s\n", c->rank, ftl_comm_error(comm));
			return 1;
		}
		if (c->rank == 0)
			harness_report(c, REP_FIGURE, iters, ns);
	}
	free(send);
	free(recv);
	ftl_comm_destroy(comm);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	enum ftl_comm_tcp_algo algo = FTL_COMM_TCP_ALGO_AUTO;
	for (int a = 0; argc > 2 && a < FTL_COMM_TCP_ALGO_MAX; a++)
		if (strcmp(argv[2], ftl_comm_tcp_algo_strs[a]) == 0)
			algo = (enum ftl_comm_tcp_algo)a;
	if (n < 2 || n > HARNESS_MAX || (argc > 2 && strcmp(argv[2], ftl_comm_tcp_algo_strs[algo]) != 0)) {
		fprintf(stderr, "usage: %s ranks (2..%d) [auto|ring|doubling|halving]\n", argv[0], HARNESS_MAX);
		return 2;
	}
	char label[64];
	snprintf(label, sizeof(label), algo == FTL_COMM_TCP_ALGO_AUTO ? "ftl_tcp" : "ftl_tcp_%s", ftl_comm_tcp_algo_strs[algo]);
	struct harness h;
	if (harness_start(&h, n, 1800, bench_child, &algo) != 0)
		return 1;
	struct harness_report rep;
	for (size_t s = 0; s < BENCH_COMM_N_SIZES && harness_read(&h, &rep) == 0; s++)
		bench_comm_print(label, n, bench_comm_sizes[s], rep.err, (double)rep.value / 1e9);
	return harness_wait(&h, 0) != 0;
}
