/* bench_exact: what reproducible mode costs against the plain float allreduce, N processes on loopback
 * (the test harness forks them). Usage: bench_exact N.
 *
 * A step's reduction in each mode, for a gradient of 1 MiB and 64 MiB of floats:
 *   plain:        the rank's micro-batch gradients added into one float buffer, one f32 sum allreduce;
 *   reproducible: each micro-shard's gradient rounded to int64 on its own (ftl_comm_allreduce_exact: a
 *                 4-byte max allreduce, the conversion, an i64 sum allreduce, the conversion back).
 * Two shapes: one shard per rank (the allreduce alone) and 8 shards per step (the rank converts 8/N rows).
 * Rank 0 times each loop between two barriers; one JSON line per (shape, size) with both times and their
 * ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { REP_PLAIN = 1, REP_EXACT = 2, STEP_SHARDS = 8 };

static const size_t sizes[] = {1u << 20, 64u << 20};
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

static int iters_for(size_t bytes) { return bytes >= (64u << 20) ? 4 : 40; }

/* Rows a rank holds: one, or its share of STEP_SHARDS. */
static int rows_of(int shape, int rank, int n)
{
	if (shape == 0)
		return 1;
	return STEP_SHARDS / n + (rank < STEP_SHARDS % n);
}

static ftl_err plain_step(ftl_comm *comm, const float *rows, int n_rows, size_t count, float *sum)
{
	memcpy(sum, rows, count * sizeof(float));
	for (int r = 1; r < n_rows; r++)
		for (size_t k = 0; k < count; k++)
			sum[k] += rows[(size_t)r * count + k];
	return ftl_comm_allreduce(comm, sum, sum, count, FTL_F32, FTL_SUM);
}

/* Runs iters steps of one mode between two barriers; the time in ns, or -1. */
static int64_t time_mode(ftl_comm *comm, int exact, const float *rows, int n_rows, uint64_t total_rows,
			 size_t count, float *out, int64_t *scratch, int iters)
{
	ftl_err e = ftl_comm_barrier(comm);
	int64_t t0 = harness_now_ns();
	for (int i = 0; i < iters && e == FTL_OK; i++)
		e = exact ? ftl_comm_allreduce_exact(comm, rows, (size_t)n_rows, count, total_rows, out, scratch)
			  : plain_step(comm, rows, n_rows, count, out);
	if (e == FTL_OK)
		e = ftl_comm_barrier(comm);
	return e == FTL_OK ? harness_now_ns() - t0 : -1;
}

static int bench_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 3, 600000);
	if (!comm)
		return 1;
	size_t max_count = sizes[N_SIZES - 1] / sizeof(float);
	int max_rows = rows_of(1, 0, c->n) > 1 ? rows_of(1, 0, c->n) : 1;
	float *rows = harness_xmalloc((size_t)max_rows * max_count * sizeof(float));
	float *out = harness_xmalloc(max_count * sizeof(float));
	int64_t *scratch = harness_xmalloc(max_count * sizeof(int64_t));
	for (size_t k = 0; k < (size_t)max_rows * max_count; k++)
		rows[k] = (float)((k * 2654435761u) % 1000) * 1e-3f - 0.5f;
	for (int shape = 0; shape < 2; shape++) {
		int n_rows = rows_of(shape, c->rank, c->n);
		uint64_t total = shape == 0 ? (uint64_t)c->n : STEP_SHARDS;
		for (size_t s = 0; s < N_SIZES; s++) {
			size_t count = sizes[s] / sizeof(float);
			int iters = iters_for(sizes[s]);
			for (int exact = 0; exact < 2; exact++) {
				time_mode(comm, exact, rows, n_rows, total, count, out, scratch, 1); /* warm-up */
				int64_t ns = time_mode(comm, exact, rows, n_rows, total, count, out, scratch, iters);
				if (ns < 0) {
					fprintf(stderr, "rank %d: %s\n", c->rank, ftl_comm_error(comm));
					return 1;
				}
				if (c->rank == 0)
					harness_report(c, exact ? REP_EXACT : REP_PLAIN, iters, ns);
			}
		}
	}
	free(rows);
	free(out);
	free(scratch);
	ftl_comm_destroy(comm);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	if (n < 1 || n > HARNESS_MAX) {
		fprintf(stderr, "usage: %s ranks (1..%d)\n", argv[0], HARNESS_MAX);
		return 2;
	}
	struct harness h;
	if (harness_start(&h, n, 1800, bench_child, NULL) != 0)
		return 1;
	struct harness_report plain, exact;
	for (int shape = 0; shape < 2; shape++)
		for (size_t s = 0; s < N_SIZES; s++) {
			if (harness_read(&h, &plain) != 0 || harness_read(&h, &exact) != 0)
				return harness_wait(&h, 0), 1;
			double plain_us = (double)plain.value / plain.err / 1e3, exact_us = (double)exact.value / exact.err / 1e3;
			printf("{\"bench\":\"reproducible_allreduce\",\"ranks\":%d,\"bytes\":%zu,\"shards_per_step\":%d,"
			       "\"iters\":%d,\"plain_us\":%.1f,\"exact_us\":%.1f,\"ratio\":%.2f}\n",
			       n, sizes[s], shape == 0 ? n : STEP_SHARDS, plain.err, plain_us, exact_us, exact_us / plain_us);
			fflush(stdout);
		}
	return harness_wait(&h, 0) != 0;
}
