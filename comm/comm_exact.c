/* The exact sum of float rows (ftl/elastic.h): the reproducible mode's allreduce.
 *
 * Why fixed point: float addition is not associative, so a ring over 3 ranks and one over 5 add the same
 * rows in different orders and round differently. Scaled to integers by one power of two that every rank
 * agrees on (from an allreduce-max, which is exact), the rows add up as int64 in any order to the same
 * integer, and the conversion back is one deterministic rounding. The scale leaves two bits of headroom
 * below 2^63 for the rounding of each row (at most 1/2 each) and keeps every partial sum in range.
 *
 * Each row is rounded on its own (not the rank's local sum of rows), so the integers do not depend on
 * which rows share a rank. Cost: O(n_rows * count) conversions here, then a float allreduce of one
 * element and an i64 allreduce of count elements (twice the f32 bytes). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "comm_exact.h"

enum { HEADROOM_BITS = 62 };

int ftl_exact_exponent(float max_abs, uint64_t total_rows)
{
	if (!(max_abs > 0))
		return 0; /* every element is zero: any scale gives zeros */
	int max_exp; /* max_abs < 2^max_exp */
	frexpf(max_abs, &max_exp);
	int rows_bits = 0; /* total_rows <= 2^rows_bits */
	while (rows_bits < 64 && (1ull << rows_bits) < total_rows)
		rows_bits++;
	return HEADROOM_BITS - max_exp - rows_bits;
}

float ftl_exact_max_abs(const float *rows, size_t n)
{
	float max_abs = 0;
	for (size_t k = 0; k < n; k++) {
		float v = fabsf(rows[k]);
		if (!(v <= max_abs)) /* also true for NaN: it must win, so that every rank sees it */
			max_abs = isnan(v) ? INFINITY : v;
	}
	return max_abs;
}

void ftl_exact_accumulate(const float *row, size_t count, int exponent, int64_t *acc)
{
	double scale = ldexp(1.0, exponent); /* exact: a power of two; row * scale is exact in double */
	for (size_t k = 0; k < count; k++)
		acc[k] += llrint((double)row[k] * scale);
}

void ftl_exact_result(const int64_t *acc, size_t count, int exponent, float *out)
{
	double unscale = ldexp(1.0, -exponent);
	for (size_t k = 0; k < count; k++)
		out[k] = (float)((double)acc[k] * unscale);
}

ftl_err ftl_comm_allreduce_exact(ftl_comm *comm, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
				 float *out, int64_t *scratch)
{
	if (!comm || (!rows && n_rows) || !out || !scratch || total_rows < n_rows || total_rows == 0)
		return FTL_ERR_INVALID;
	if (comm->backend != FTL_COMM_TCP) {
		snprintf(comm->error, sizeof(comm->error),
			 "ftl: the exact allreduce works on host memory (tcp backend); use FTL_COMM=tcp for FTL_REPRODUCIBLE");
		return FTL_ERR_UNSUPPORTED;
	}
	float max_abs = ftl_exact_max_abs(rows, n_rows * count);
	ftl_err e = ftl_comm_allreduce(comm, &max_abs, &max_abs, 1, FTL_F32, FTL_MAX);
	if (e != FTL_OK)
		return e;
	if (isinf(max_abs)) {
		snprintf(comm->error, sizeof(comm->error),
			 "ftl: the exact allreduce got a NaN or an infinity in a row (a diverged gradient); nothing was summed");
		return FTL_ERR_INVALID;
	}
	int exponent = ftl_exact_exponent(max_abs, total_rows);
	memset(scratch, 0, count * sizeof(*scratch));
	for (size_t r = 0; r < n_rows; r++)
		ftl_exact_accumulate(rows + r * count, count, exponent, scratch);
	e = ftl_comm_allreduce(comm, scratch, scratch, count, FTL_I64, FTL_SUM);
	if (e == FTL_OK)
		ftl_exact_result(scratch, count, exponent, out);
	return e;
}
