/* bench_exact: what reproducible mode costs against the plain float allreduce, N processes on loopback
 * (the test harness forks them). Usage: bench_exact N.
 *
 * A step's reduction in each mode, for a gradient of 1 MiB and 64 MiB of floats:
 *   plain:        the rank's micro-batch gradients added into one float buffer, one f32 sum allreduce;
 *   reproducible: each micro-shard's gradient rounded to int32 on its own (FTL_ALLREDUCE_EXACT: a
 *                 max allreduce of a scale per 64 elements, the conversion, an i32 sum allreduce, the
 *                 conversion back).
 * Two shapes: one shard per rank and 8 shards per step (the rank converts 8/N rows). Besides each mode's
 * total, the collective alone (the f32 sum, the i32 sum): how much of the cost is the collective and how
 * much the conversions. Rank 0 times each loop between two barriers; one JSON line per (shape, size). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/comm/harness.h"

enum { STEP_SHARDS = 8 };

/* What a timed loop runs. */
enum mode { PLAIN, PLAIN_ALLREDUCE, EXACT, EXACT_ALLREDUCE, MODE_MAX };
static const char *const mode_strs[MODE_MAX] = {"plain_us", "f32_allreduce_us", "exact_us", "i32_allreduce_us"};

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
	return ftl_comm_allreduce(comm, sum, sum, count, FTL_F32, FTL_SUM, NULL, NULL);
}

/* Runs iters steps of one mode between two barriers; the time in ns, or -1. */
static ftl_err run_mode(ftl_comm *comm, enum mode m, const float *rows, int n_rows, uint64_t total_rows,
			size_t count, float *out, void *scratch)
{
	switch (m) {
	case PLAIN:
		return plain_step(comm, rows, n_rows, count, out);
	case PLAIN_ALLREDUCE:
		return ftl_comm_allreduce(comm, out, out, count, FTL_F32, FTL_SUM, NULL, NULL);
	case EXACT:
		return harness_allreduce_exact(comm, rows, (size_t)n_rows, count, total_rows, out);
	default:
		return ftl_comm_allreduce(comm, scratch, scratch, count, FTL_I32, FTL_SUM, NULL, NULL);
	}
}

static int64_t time_mode(ftl_comm *comm, enum mode m, const float *rows, int n_rows, uint64_t total_rows,
			 size_t count, float *out, void *scratch, int iters)
{
	ftl_err e = ftl_comm_barrier(comm);
	int64_t t0 = harness_now_ns();
	for (int i = 0; i < iters && e == FTL_OK; i++)
		e = run_mode(comm, m, rows, n_rows, total_rows, count, out, scratch);
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
	void *scratch = harness_xmalloc(max_count * sizeof(int32_t)); /* the int32 allreduce's buffer */
	for (size_t k = 0; k < (size_t)max_rows * max_count; k++)
		rows[k] = (float)((k * 2654435761u) % 1000) * 1e-3f - 0.5f;
	for (int shape = 0; shape < 2; shape++) {
		int n_rows = rows_of(shape, c->rank, c->n);
		uint64_t total = shape == 0 ? (uint64_t)c->n : STEP_SHARDS;
		for (size_t s = 0; s < N_SIZES; s++) {
			size_t count = sizes[s] / sizeof(float);
			int iters = iters_for(sizes[s]);
			memset(scratch, 0, count * sizeof(int32_t)); /* an i32 sum of zeros cannot overflow */
			for (int m = 0; m < MODE_MAX; m++) {
				time_mode(comm, m, rows, n_rows, total, count, out, scratch, 1); /* warm-up */
				int64_t ns = time_mode(comm, m, rows, n_rows, total, count, out, scratch, iters);
				if (ns < 0) {
					fprintf(stderr, "rank %d: %s\n", c->rank, ftl_comm_error(comm));
					return 1;
				}
				if (c->rank == 0)
					harness_report(c, m, iters, ns);
			}
		}
	}
	free(rows);
	free(out);
	free(scratch);
	ftl_comm_delete(comm);
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
	for (int shape = 0; shape < 2; shape++)
		for (size_t s = 0; s < N_SIZES; s++) {
			double us[MODE_MAX];
			struct harness_report rep;
			for (int m = 0; m < MODE_MAX; m++) {
				if (harness_read(&h, &rep) != 0)
					return harness_wait(&h, 0), 1;
				us[m] = (double)rep.value / rep.err / 1e3;
			}
			printf("{\"bench\":\"reproducible_allreduce\",\"ranks\":%d,\"bytes\":%zu,\"shards_per_step\":%d,"
			       "\"iters\":%d", n, sizes[s], shape == 0 ? n : STEP_SHARDS, rep.err);
			for (int m = 0; m < MODE_MAX; m++)
				printf(",\"%s\":%.1f", mode_strs[m], us[m]);
			printf(",\"ratio\":%.2f,\"allreduce_ratio\":%.2f}\n", us[EXACT] / us[PLAIN],
			       us[EXACT_ALLREDUCE] / us[PLAIN_ALLREDUCE]);
			fflush(stdout);
		}
	return harness_wait(&h, 0) != 0;
}
