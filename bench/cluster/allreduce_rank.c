/* allreduce_rank: one rank of the cluster bench's allreduce busbw (cluster.py's busbw figure). The ranks run
 * on separate hosts (network namespaces) whose links go through link_shaper, so the figure is the tcp
 * backend's over links with the profile's delay and rate, not over loopback as bench_comm_tcp's. Through the
 * public comm API only: the bootstrap text of the ranks' addresses, one communicator (shared memory off: the
 * hosts share none), the sizes and iterations of bench/comm/bench_comm.h; rank 0 prints the JSON lines.
 * Usage: allreduce_rank RANK HOST:PORT,HOST:PORT,... [MAX_BYTES] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/comm/bench_comm.h"
#include "ftl/ftl.h"

#define MAX_RANKS 64

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Splits the comma-separated addresses in place; their count, or 0 when there are too many. */
static int split_addrs(char *list, const char **addrs)
{
	int n = 0;
	for (char *a = strtok(list, ","); a != NULL; a = strtok(NULL, ",")) {
		if (n == MAX_RANKS)
			return 0;
		addrs[n++] = a;
	}
	return n;
}

static ftl_comm *connect_ranks(int rank, const char *const *addrs, int n)
{
	size_t len = ftl_comm_tcp_bootstrap(NULL, 0, addrs, n);
	char *text = len ? malloc(len + 1) : NULL;
	if (text == NULL || ftl_comm_tcp_bootstrap(text, len + 1, addrs, n) != len) {
		fprintf(stderr, "allreduce_rank: bad addresses\n");
		return NULL;
	}
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.backend = FTL_COMM_TCP;
	cfg.rank = rank;
	cfg.world_size = n;
	cfg.bootstrap = text;
	cfg.bootstrap_len = len;
	cfg.comm_id = 1;
	cfg.timeout_ms = 600000;
	cfg.connect_timeout_ms = 60000;
	cfg.shm = FTL_COMM_SHM_OFF;
	ftl_comm *comm = NULL;
	if (ftl_comm_new(&cfg, &comm) != FTL_OK)
		fprintf(stderr, "allreduce_rank %d: %s\n", rank, ftl_error_message());
	free(text);
	return comm;
}

/* Every size up to the max: the timed loop between two barriers; rank 0 prints. */
static int measure(ftl_comm *comm, int rank, int n, size_t n_sizes)
{
	size_t max = bench_comm_sizes[n_sizes - 1];
	float *send = malloc(max), *recv = malloc(max);
	if (send == NULL || recv == NULL)
		return 1;
	for (size_t i = 0; i < max / 4; i++)
		send[i] = (float)(i % 7);
	for (size_t s = 0; s < n_sizes; s++) {
		size_t bytes = bench_comm_sizes[s];
		int iters = bench_comm_iters(bytes);
		ftl_err e = FTL_OK;
		for (int i = 0; i < BENCH_COMM_WARMUP && e == FTL_OK; i++)
			e = ftl_comm_allreduce(comm, send, recv, bytes / 4, FTL_F32, FTL_SUM, NULL, NULL);
		if (e == FTL_OK)
			e = ftl_comm_barrier(comm);
		double t0 = now_s();
		for (int i = 0; i < iters && e == FTL_OK; i++)
			e = ftl_comm_allreduce(comm, send, recv, bytes / 4, FTL_F32, FTL_SUM, NULL, NULL);
		if (e == FTL_OK)
			e = ftl_comm_barrier(comm);
		if (e != FTL_OK) {
			fprintf(stderr, "allreduce_rank %d: %s\n", rank, ftl_comm_error(comm));
			return 1;
		}
		if (rank == 0)
			bench_comm_print("ftl_tcp_cluster", n, bytes, iters, now_s() - t0);
	}
	free(send);
	free(recv);
	return 0;
}

int main(int argc, char **argv)
{
	const char *addrs[MAX_RANKS];
	int n = argc > 2 ? split_addrs(argv[2], addrs) : 0;
	int rank = argc > 1 ? atoi(argv[1]) : -1;
	size_t n_sizes = bench_comm_n_sizes(argc > 3 ? argv[3] : NULL);
	if (n < 2 || rank < 0 || rank >= n || n_sizes == 0) {
		fprintf(stderr, "usage: %s RANK HOST:PORT,HOST:PORT,... (2..%d ranks) [MAX_BYTES, >= %zu]\n", argv[0],
			MAX_RANKS, bench_comm_sizes[0]);
		return 2;
	}
	ftl_comm *comm = connect_ranks(rank, addrs, n);
	if (comm == NULL)
		return 1;
	int rc = measure(comm, rank, n, n_sizes);
	ftl_comm_delete(comm);
	return rc;
}
