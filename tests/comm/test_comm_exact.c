/* The exact allreduce's promise (FTL_ALLREDUCE_EXACT, comm/comm_exact.c): the same rows summed by any
 * number of ranks, each holding any consecutive run of them, give the same bits; and those bits are the
 * true sum to within the fixed-point step (far closer than a float sum's rounding).
 *
 *   test_comm_exact pure           grouping rows differently never changes the integers; the error bound
 *   test_comm_exact world N        N processes (tcp on loopback) each sum their run of the rows; every rank
 *                                  must report the digest the single-process sum gives
 * The rows are seeded pseudo-random floats over 12 orders of magnitude, with a few exact cancellations,
 * so that a float sum in ring order would differ between world sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_exact.h"
#include "harness.h"

enum { ROWS = 12, COUNT = 5000, REP_DIGEST = 1 };

static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Row r of the test input, written to row[COUNT]. */
static void make_row(int r, float *row)
{
	uint64_t s = 0x9e3779b97f4a7c15ull + (uint64_t)r * 7919;
	for (int k = 0; k < COUNT; k++) {
		double mantissa = (double)(next_random(&s) >> 11) / 9007199254740992.0 - 0.5;
		int exponent = (int)(next_random(&s) % 40) - 30; /* 2^-30 .. 2^9 */
		row[k] = (float)ldexp(mantissa, exponent);
		if (k % 97 == 0)
			row[k] = r % 2 ? 1e6f : -1e6f; /* rows cancel in pairs: order-sensitive in float */
		if (k / FTL_EXACT_BLOCK == 3)
			row[k] = 0; /* a block of zeros */
	}
}

static uint64_t digest(const float *v, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a over the bytes */
	const unsigned char *p = (const unsigned char *)v;
	for (size_t i = 0; i < n * sizeof(float); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* The rows, their agreed exponents (one per block), as the allreduce computes them. */
static float *make_rows(int32_t *exponents)
{
	float *rows = harness_xmalloc((size_t)ROWS * COUNT * sizeof(float));
	float *block_max = calloc(ftl_exact_blocks(COUNT), sizeof(float));
	for (int r = 0; r < ROWS; r++) {
		make_row(r, rows + (size_t)r * COUNT);
		ftl_exact_block_max(rows + (size_t)r * COUNT, COUNT, block_max);
	}
	for (size_t b = 0; b < ftl_exact_blocks(COUNT); b++)
		exponents[b] = ftl_exact_exponent(block_max[b], ROWS);
	free(block_max);
	return rows;
}

/* The sum of all rows in one process, through the same pure steps as the allreduce. */
static void local_exact_sum(float *out)
{
	int32_t exponents[(COUNT + FTL_EXACT_BLOCK - 1) / FTL_EXACT_BLOCK];
	float *rows = make_rows(exponents);
	int32_t *acc = calloc(COUNT, sizeof(int32_t));
	for (int r = 0; r < ROWS; r++)
		ftl_exact_accumulate(rows + (size_t)r * COUNT, COUNT, exponents, acc);
	ftl_exact_result(acc, COUNT, exponents, out);
	free(rows);
	free(acc);
}

static int test_pure(void)
{
	int32_t exponents[(COUNT + FTL_EXACT_BLOCK - 1) / FTL_EXACT_BLOCK];
	float *rows = make_rows(exponents);
	int32_t *all = calloc(COUNT, sizeof(int32_t)), *odd = calloc(COUNT, sizeof(int32_t)),
		*even = calloc(COUNT, sizeof(int32_t));
	for (int r = ROWS - 1; r >= 0; r--) /* one order... */
		ftl_exact_accumulate(rows + (size_t)r * COUNT, COUNT, exponents, all);
	for (int r = 0; r < ROWS; r++) /* ...and two groups, added afterwards */
		ftl_exact_accumulate(rows + (size_t)r * COUNT, COUNT, exponents, r % 2 ? odd : even);
	int failures = 0, over_bound = 0;
	double worst = 0;
	for (int k = 0; k < COUNT; k++) {
		if (odd[k] + even[k] != all[k])
			failures++;
		long double exact = 0; /* the reference: 64-bit mantissas lose nothing the fixed point keeps */
		for (int r = 0; r < ROWS; r++)
			exact += rows[(size_t)r * COUNT + k];
		int e = exponents[k / FTL_EXACT_BLOCK];
		double err = fabs((double)((long double)all[k] * ldexpl(1.0L, -e) - exact));
		/* Each row rounds by at most half a step of 2^-e of its block. */
		double bound = ROWS * 0.5 * ldexp(1.0, -e);
		over_bound += err > bound * 1.0001;
		worst = err / bound > worst ? err / bound : worst;
	}
	printf("grouping changed %d sums; worst error %.2f of the bound (rows x half a step); %d over it\n", failures,
	       worst, over_bound);
	float nan_row[3] = {1, NAN, 2}, nan_max = 0;
	ftl_exact_block_max(nan_row, 3, &nan_max);
	free(rows);
	free(all);
	free(odd);
	free(even);
	return failures == 0 && over_bound == 0 && isinf(nan_max) && ftl_exact_exponent(0, 5) == 0 ? 0 : 1;
}

static int world_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 7, 60000);
	if (!comm)
		return 1;
	/* Rank r takes a consecutive run of rows, runs differing by at most one. */
	int base = ROWS / c->n, extra = ROWS % c->n;
	int first = c->rank * base + (c->rank < extra ? c->rank : extra), n = base + (c->rank < extra);
	float *rows = harness_xmalloc((size_t)(n ? n : 1) * COUNT * sizeof(float));
	for (int r = 0; r < n; r++)
		make_row(first + r, rows + (size_t)r * COUNT);
	float *out = harness_xmalloc(COUNT * sizeof(float));
	ftl_err e = harness_allreduce_exact(comm, rows, (size_t)n, COUNT, ROWS, out);
	if (e != FTL_OK)
		fprintf(stderr, "rank %d: %s\n", c->rank, ftl_comm_error(comm));
	harness_report(c, REP_DIGEST, e, (int64_t)digest(out, COUNT));
	ftl_comm_delete(comm);
	free(rows);
	free(out);
	return e == FTL_OK ? 0 : 1;
}

static int test_world(int n)
{
	float *expected = harness_xmalloc(COUNT * sizeof(float));
	local_exact_sum(expected);
	uint64_t want = digest(expected, COUNT);
	free(expected);
	struct harness h;
	if (harness_start(&h, n, 60, world_child, NULL) != 0)
		return 1;
	int agree = 0;
	struct harness_report rep;
	for (int i = 0; i < n && harness_read(&h, &rep) == 0; i++) {
		printf("rank %d of %d: %s, digest %016llx (single process: %016llx)\n", rep.rank, n,
		       ftl_strerror((ftl_err)rep.err), (unsigned long long)rep.value, (unsigned long long)want);
		agree += rep.err == FTL_OK && (uint64_t)rep.value == want;
	}
	return harness_wait(&h, 0) == 0 && agree == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "pure") == 0)
		return test_pure();
	if (argc == 3 && strcmp(argv[1], "world") == 0)
		return test_world(atoi(argv[2]));
	fprintf(stderr, "usage: %s pure | world N\n", argv[0]);
	return 2;
}
