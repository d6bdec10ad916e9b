/* The exact sum of float rows (FTL_ALLREDUCE_EXACT, ftl/comm.h): the reproducible mode's allreduce.
 *
 * Why fixed point: float addition is not associative, so a ring over 3 ranks and one over 5 add the same
 * rows in different orders and round differently. Scaled to integers by a power of two that every rank
 * agrees on (from an allreduce-max, which is exact), the rows add up in any order to the same integer,
 * and the conversion back is one deterministic rounding.
 *
 * Why int32 with a scale per block of 64 elements, not int64 with one scale: the collective moves as many
 * bytes as the plain f32 one (int64 doubled them, and reproducible mode cost 2-3.5x the plain allreduce on
 * loopback; the block maxima add 1/64), and each element is rounded relative to its own block's largest
 * magnitude rather than the whole gradient's, so a layer of small gradients next to one of large ones
 * keeps its precision. The scale leaves log2(total_rows) bits of headroom below 2^30, so no partial sum
 * can overflow, whatever the grouping: an element keeps 30 - log2(total_rows) bits below its block's
 * maximum (27 with 8 micro-shards; float keeps 24 below the element itself).
 *
 * Each row is rounded on its own (not the rank's local sum of rows), so the integers do not depend on
 * which rows share a rank. Cost: O(n_rows * count) conversions here, a max allreduce of count/64 floats,
 * and an i32 sum allreduce of count elements. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "comm_exact.h"

enum { HEADROOM_BITS = 30 };

/* rintf into an int32: nearest, ties to even (the default rounding mode), the same value either way; GCC
 * vectorizes its builtin (cvtps2dq) where lrintf's long stays scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#define ROUND_TO_INT32(x) __builtin_irintf(x)
#else
#define ROUND_TO_INT32(x) ((int32_t)lrintf(x))
#endif

size_t ftl_exact_blocks(size_t count) { return (count + FTL_EXACT_BLOCK - 1) / FTL_EXACT_BLOCK; }

void ftl_exact_block_max(const float *row, size_t count, float *block_max)
{
	for (size_t b = 0, k = 0; k < count; b++) {
		size_t end = k + FTL_EXACT_BLOCK < count ? k + FTL_EXACT_BLOCK : count;
		/* On the bits: a non-negative float orders as its bit pattern, and a NaN's (sign cleared) is above
		 * infinity's, so an integer max (which the compiler vectorizes) finds both. */
		uint32_t m, u;
		memcpy(&m, &block_max[b], sizeof(m));
		for (; k < end; k++) {
			memcpy(&u, &row[k], sizeof(u));
			u &= 0x7fffffffu;
			m = u > m ? u : m;
		}
		float max_abs;
		memcpy(&max_abs, &m, sizeof(max_abs));
		block_max[b] = m >= 0x7f800000u ? INFINITY : max_abs; /* a NaN must win, so that every rank sees it */
	}
}

int ftl_exact_exponent(float max_abs, uint64_t total_rows)
{
	if (!(max_abs > 0))
		return 0; /* every element is zero: any scale gives zeros */
	int max_exp; /* max_abs < 2^max_exp */
	frexpf(max_abs, &max_exp);
	int rows_bits = 0; /* total_rows <= 2^rows_bits */
	while (rows_bits < 64 && (1ull << rows_bits) < total_rows)
		rows_bits++;
	int e = HEADROOM_BITS - max_exp - rows_bits;
	/* 2^e must be a normal float. Clamped above, a block of values below 2^-97 keeps fewer bits; below,
	 * only a block near FLT_MAX summed over more than 2^28 rows could reach it. */
	return e > FLT_MAX_EXP - 1 ? FLT_MAX_EXP - 1 : e < FLT_MIN_EXP - 1 ? FLT_MIN_EXP - 1 : e;
}

void ftl_exact_accumulate(const float *row, size_t count, const int32_t *exponents, int32_t *acc)
{
	for (size_t b = 0, k = 0; k < count; b++) {
		size_t end = k + FTL_EXACT_BLOCK < count ? k + FTL_EXACT_BLOCK : count;
		float scale = ldexpf(1.0f, exponents[b]); /* a power of two: row * scale is exact (or a subnormal
							   * rounded the same way everywhere) */
		for (; k < end; k++)
			acc[k] += ROUND_TO_INT32(row[k] * scale);
	}
}

void ftl_exact_result(const int32_t *acc, size_t count, const int32_t *exponents, float *out)
{
	for (size_t b = 0, k = 0; k < count; b++) {
		size_t end = k + FTL_EXACT_BLOCK < count ? k + FTL_EXACT_BLOCK : count;
		float unscale = ldexpf(1.0f, -exponents[b]); /* one rounding: int32 to float; the scale is exact */
		for (; k < end; k++)
			out[k] = (float)acc[k] * unscale;
	}
}

/* Room in comm->exact_scratch for count elements' integers, the blocks' maxima and their exponents. */
static ftl_err reserve_scratch(ftl_comm *comm, size_t count)
{
	size_t need = (count + 2 * ftl_exact_blocks(count)) * sizeof(int32_t);
	if (comm->exact_scratch_cap >= need)
		return FTL_OK;
	void *scratch = realloc(comm->exact_scratch, need);
	if (scratch == NULL)
		return ftl_comm_fail(comm, FTL_ERR_SYSTEM, false, "allreduce_exact: out of memory for %zu bytes", need);
	comm->exact_scratch = scratch;
	comm->exact_scratch_cap = need;
	return FTL_OK;
}

/* Agrees on every block's scale: the maxima over every row of every rank, then the exponents. */
static ftl_err agree_on_scales(ftl_comm *comm, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
			       float *block_max, int32_t *exponents)
{
	size_t blocks = ftl_exact_blocks(count);
	memset(block_max, 0, blocks * sizeof(*block_max));
	for (size_t r = 0; r < n_rows; r++)
		ftl_exact_block_max(rows + r * count, count, block_max);
	ftl_err e = ftl_comm_async_allreduce(comm, block_max, block_max, blocks, FTL_F32, FTL_MAX);
	for (size_t b = 0; e == FTL_OK && b < blocks; b++) {
		if (isinf(block_max[b])) {
			return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "the exact allreduce got a NaN or an "
					     "infinity in a row (a diverged gradient?); nothing was summed");
		}
		exponents[b] = ftl_exact_exponent(block_max[b], total_rows);
	}
	return e;
}

ftl_err ftl_comm_exact_sum(struct ftl_comm *comm, const float *rows, size_t n_rows, size_t count,
			   uint64_t total_rows, float *out)
{
	ftl_err e = reserve_scratch(comm, count);
	if (e != FTL_OK)
		return e;
	int32_t *acc = comm->exact_scratch, *exponents = acc + count + ftl_exact_blocks(count);
	float *block_max = (float *)(void *)(acc + count); /* its own words: never read as integers */
	e = agree_on_scales(comm, rows, n_rows, count, total_rows, block_max, exponents);
	if (e != FTL_OK)
		return e;
	memset(acc, 0, count * sizeof(*acc));
	for (size_t r = 0; r < n_rows; r++)
		ftl_exact_accumulate(rows + r * count, count, exponents, acc);
	e = ftl_comm_async_allreduce(comm, acc, acc, count, FTL_I32, FTL_SUM);
	if (e == FTL_OK)
		ftl_exact_result(acc, count, exponents, out);
	return e;
}
