/* bench_comm_tcp: allreduce busbw of the ftl tcp backend, N processes on loopback (the test harness
 * forks them), f32 sum, out of place, the sizes of bench_comm.h. Usage: bench_comm_tcp N [algorithm [max bytes [chunk]]]
 * (a max of 65536 is the quick latency probe: the small sizes only; algorithm auto, ring, doubling, halving: forcing one is how the crossovers in comm_tcp_collectives.c are
 * measured; bf16 or bf16ef: the bf16 allreduce (FTL_ALLREDUCE_BF16) without or with error feedback, the figure being the
 * effective busbw, f32 bytes over time; a fourth argument sets the chunk of its pipeline in elements, 0 for
 * one pass: how the chunk in comm_bf16_pipeline.c is measured). Rank 0 times the loop between two barriers; one JSON line per size.
 * With FTL_COMM_SHM=auto the ranks talk through shared memory (label ftl_shm; the algorithm is then the
 * shared-memory one whatever is forced), with FTL_COMM_SHM_SLOT_KB as its slot size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_comm.h"
#include "comm/comm_tcp.h"
#include "tests/comm/harness.h"

enum { REP_FIGURE = 1 };

struct mode {
	enum ftl_comm_tcp_algo algo;
	size_t n_sizes; /* the first n_sizes of bench_comm_sizes */
	int compress; /* 0: f32; 1: bf16 on the wire; 2: bf16 with error feedback */
	const char *chunk; /* bf16: elements per chunk of the pipeline (0: one pass), or NULL for the default */
};

static ftl_err reduce(ftl_comm *comm, const struct mode *m, const float *send, float *recv, size_t count,
		      float *residual)
{
	if (m->compress == 0)
		return ftl_comm_allreduce(comm, send, recv, count, FTL_F32, FTL_SUM, NULL, NULL);
	return harness_allreduce_bf16(comm, send, recv, count, FTL_SUM, m->compress == 2 ? residual : NULL);
}

static int bench_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 600000);
	if (comm == NULL)
		return 1;
	const struct mode *m = c->arg;
	ftl_comm_tcp_force_algo(comm, m->algo);
	if (m->chunk != NULL)
		ftl_comm_bf16_set_chunk(comm, strtoull(m->chunk, NULL, 10));
	size_t max = bench_comm_sizes[m->n_sizes - 1];
	float *send = malloc(max), *recv = malloc(max), *residual = calloc(1, max);
	if (send == NULL || recv == NULL || residual == NULL)
		return 1;
	for (size_t i = 0; i < max / 4; i++)
		send[i] = (float)(i % 7);
	memset(recv, 0, max);
	for (size_t s = 0; s < m->n_sizes; s++) {
		size_t bytes = bench_comm_sizes[s];
		int iters = bench_comm_iters(bytes);
		for (int i = 0; i < BENCH_COMM_WARMUP; i++)
			reduce(comm, m, send, recv, bytes / 4, residual);
		ftl_err e = ftl_comm_barrier(comm);
		int64_t t0 = harness_now_ns();
		for (int i = 0; i < iters && e == FTL_OK; i++)
			e = reduce(comm, m, send, recv, bytes / 4, residual);
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
	free(residual);
	ftl_comm_delete(comm);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	struct mode m = {.algo = FTL_COMM_TCP_ALGO_AUTO};
	const char *name = argc > 2 ? argv[2] : "auto";
	for (int a = 0; a < FTL_COMM_TCP_ALGO_MAX; a++)
		if (strcmp(name, ftl_comm_tcp_algo_strs[a]) == 0)
			m.algo = (enum ftl_comm_tcp_algo)a;
	m.compress = strcmp(name, "bf16") == 0 ? 1 : strcmp(name, "bf16ef") == 0 ? 2 : 0;
	m.n_sizes = bench_comm_n_sizes(argc > 3 ? argv[3] : NULL);
	m.chunk = argc > 4 ? argv[4] : NULL;
	if (n < 2 || n > HARNESS_MAX || (m.compress == 0 && strcmp(name, ftl_comm_tcp_algo_strs[m.algo]) != 0) ||
	    m.n_sizes == 0 || (m.chunk != NULL && (m.compress == 0 || strspn(m.chunk, "0123456789") != strlen(m.chunk)))) {
		fprintf(stderr, "usage: %s ranks (2..%d) [auto|ring|doubling|halving|bf16|bf16ef [max bytes, >= %zu "
			"[bf16 chunk in elements, 0: one pass]]]\n", argv[0], HARNESS_MAX, bench_comm_sizes[0]);
		return 2;
	}
	char label[64];
	const char *shm = getenv("FTL_COMM_SHM");
	const char *path = shm != NULL && strcmp(shm, "auto") == 0 ? "shm" : "tcp";
	if (m.compress)
		snprintf(label, sizeof(label), "ftl_%s_%s", path, name);
	else if (m.algo == FTL_COMM_TCP_ALGO_AUTO)
		snprintf(label, sizeof(label), "ftl_%s", path);
	else
		snprintf(label, sizeof(label), "ftl_%s_%s", path, ftl_comm_tcp_algo_strs[m.algo]);
	struct harness h;
	if (harness_start(&h, n, 1800, bench_child, &m) != 0)
		return 1;
	struct harness_report rep;
	for (size_t s = 0; s < m.n_sizes && harness_read(&h, &rep) == 0; s++)
		bench_comm_print(label, n, bench_comm_sizes[s], rep.err, (double)rep.value / 1e9);
	return harness_wait(&h, 0) != 0;
}
