/* refdata: see refdata.h. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm_reduce.h"
#include "refdata.h"

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Element i of rank as an integer; the dtype decides its scale. */
static int64_t raw(ftl_dtype dtype, uint64_t seed, int rank, size_t i)
{
	uint64_t h = mix(seed * 0x100000001b3ull ^ mix((uint64_t)rank * 0x2545f4914f6cdd1dull + i));
	switch (dtype) {
	case FTL_BF16: return (int64_t)(h % 255) - 127; /* fits bf16's 8 significant bits */
	case FTL_U8: return (int64_t)(h % 256);
	case FTL_I8: return (int64_t)(h % 256) - 128;
	case FTL_BOOL: return (int64_t)(h & 1);
	default: return (int64_t)(h % 2001) - 1000;
	}
}

static double as_double(ftl_dtype dtype, int64_t r)
{
	return dtype == FTL_BF16 ? (double)r / 32.0 : (double)r / 256.0;
}

static int64_t as_i64(int64_t r)
{
	return r * ((int64_t)1 << 40); /* exercises the upper half; 8 of them still fit */
}

static void store(void *buf, ftl_dtype dtype, size_t i, int64_t r)
{
	switch (dtype) {
	case FTL_F32: ((float *)buf)[i] = (float)as_double(dtype, r); break;
	case FTL_F64: ((double *)buf)[i] = as_double(dtype, r); break;
	case FTL_F16: ((uint16_t *)buf)[i] = ftl_comm_f32_to_f16((float)as_double(dtype, r)); break;
	case FTL_BF16: ((uint16_t *)buf)[i] = ftl_comm_f32_to_bf16((float)as_double(dtype, r)); break;
	case FTL_I32: ((int32_t *)buf)[i] = (int32_t)r; break;
	case FTL_I64: ((int64_t *)buf)[i] = as_i64(r); break;
	case FTL_U8: case FTL_BOOL: ((uint8_t *)buf)[i] = (uint8_t)r; break;
	case FTL_I8: ((int8_t *)buf)[i] = (int8_t)r; break;
	default: break;
	}
}

static double load_f(const void *buf, ftl_dtype dtype, size_t i)
{
	switch (dtype) {
	case FTL_F32: return ((const float *)buf)[i];
	case FTL_F64: return ((const double *)buf)[i];
	case FTL_F16: return ftl_comm_f16_to_f32(((const uint16_t *)buf)[i]);
	case FTL_BF16: return ftl_comm_bf16_to_f32(((const uint16_t *)buf)[i]);
	default: return 0;
	}
}

static int64_t load_i(const void *buf, ftl_dtype dtype, size_t i)
{
	switch (dtype) {
	case FTL_I32: return ((const int32_t *)buf)[i];
	case FTL_U8: case FTL_BOOL: return ((const uint8_t *)buf)[i];
	case FTL_I8: return ((const int8_t *)buf)[i];
	default: return ((const int64_t *)buf)[i];
	}
}

/* x cut to the dtype's width, as a wrapping sum or product leaves it. */
static int64_t wrap(uint64_t x, ftl_dtype dtype)
{
	switch (dtype) {
	case FTL_I32: return (int32_t)(uint32_t)x;
	case FTL_U8: return (uint8_t)x;
	case FTL_I8: return (int8_t)(uint8_t)x;
	default: return (int64_t)x;
	}
}

static bool is_integer(ftl_dtype dtype)
{
	return dtype == FTL_I32 || dtype == FTL_I64 || dtype == FTL_U8 || dtype == FTL_I8 || dtype == FTL_BOOL;
}

/* Rank q's element i as the integer the buffer holds. */
static int64_t int_value(ftl_dtype dtype, uint64_t seed, int q, size_t i)
{
	int64_t r = raw(dtype, seed, q, i);
	return dtype == FTL_I64 ? as_i64(r) : r;
}

/* The integer reduction over n ranks of element i: wrapping sum and product, bitwise ops on the
 * sign-extended values (the same bits as on the narrow ones), and bool's any / all / parity. */
static int64_t int_want(ftl_dtype dtype, ftl_reduce_op op, uint64_t seed, int n, size_t i)
{
	uint64_t sum = 0, prod = 1, band = ~0ull, bor = 0, bxor = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (int q = 0; q < n; q++) {
		int64_t v = int_value(dtype, seed, q, i);
		sum += (uint64_t)v;
		prod *= (uint64_t)v;
		band &= (uint64_t)v;
		bor |= (uint64_t)v;
		bxor ^= (uint64_t)v;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	if (dtype == FTL_BOOL) /* 0 and 1 only: any is or, all is and */
		return op == FTL_SUM || op == FTL_MAX || op == FTL_BOR ? (int64_t)bor
		     : op == FTL_BXOR ? (int64_t)bxor : (int64_t)band;
	switch (op) {
	case FTL_SUM: return wrap(sum, dtype);
	case FTL_AVG: return wrap(sum, dtype) / n;
	case FTL_MIN: return lo;
	case FTL_MAX: return hi;
	case FTL_PROD: return wrap(prod, dtype);
	case FTL_BAND: return wrap(band, dtype);
	case FTL_BOR: return wrap(bor, dtype);
	default: return wrap(bxor, dtype);
	}
}

void ref_fill(void *buf, ftl_dtype dtype, uint64_t seed, int rank, size_t count)
{
	for (size_t i = 0; i < count; i++)
		store(buf, dtype, i, raw(dtype, seed, rank, i));
}

/* A float dtype's unit roundoff, and its smallest positive value (a subnormal). */
static double epsilon(ftl_dtype dtype)
{
	return dtype == FTL_F16 ? 0x1p-11 : dtype == FTL_BF16 ? 0x1p-8 : dtype == FTL_F32 ? 0x1p-24 : 0x1p-53;
}

static double tiniest(ftl_dtype dtype)
{
	return dtype == FTL_F16 ? 0x1p-24 : dtype == FTL_BF16 ? 0x1p-133 : dtype == FTL_F32 ? 0x1p-149 : 0x1p-1074;
}

int ref_check_allreduce(const void *out, ftl_dtype dtype, ftl_reduce_op op, uint64_t seed, int n, size_t count,
			char *why, size_t why_len)
{
	for (size_t i = 0; i < count; i++) {
		if (is_integer(dtype)) {
			int64_t want = int_want(dtype, op, seed, n, i);
			int64_t got = load_i(out, dtype, i);
			if (got != want) {
				snprintf(why, why_len, "element %zu: got %lld, want %lld", i, (long long)got, (long long)want);
				return -1;
			}
			continue;
		}
		double sum = 0, sum_abs = 0, prod = 1, lo = INFINITY, hi = -INFINITY;
		for (int q = 0; q < n; q++) {
			double x = as_double(dtype, raw(dtype, seed, q, i));
			sum += x;
			sum_abs += fabs(x);
			prod *= x;
			lo = fmin(lo, x);
			hi = fmax(hi, x);
		}
		double want = op == FTL_SUM ? sum : op == FTL_AVG ? sum / n : op == FTL_MIN ? lo : op == FTL_MAX ? hi : prod;
		double tol = (n + 1) * epsilon(dtype) * fmax(1.0, sum_abs);
		if (op == FTL_MIN || op == FTL_MAX)
			tol = 0;
		else if (op == FTL_PROD) /* relative, once per product; a partial product that fell among the
					  * subnormals errs by half their step, and later factors (|x| < 4) scale it */
			tol = (n + 1) * epsilon(dtype) * fabs(want) + (n + 1) * tiniest(dtype) * pow(4.0, n - 1);
		double got = load_f(out, dtype, i);
		if (!(fabs(got - want) <= tol)) {
			snprintf(why, why_len, "element %zu: got %.9g, want %.9g (tolerance %.3g)", i, got, want, tol);
			return -1;
		}
	}
	return 0;
}

bool ref_is_order_free(ftl_dtype dtype, ftl_reduce_op op)
{
	if (is_integer(dtype) || op == FTL_MIN || op == FTL_MAX)
		return true;
	return op != FTL_PROD && dtype != FTL_F16 && dtype != FTL_BF16;
}

bool ref_is_swept(ftl_dtype dtype, ftl_reduce_op op)
{
	bool is_old_op = op <= FTL_MAX, is_old_dtype = dtype <= FTL_I64;
	if (is_old_op && is_old_dtype)
		return true;
	if (!is_old_dtype)
		return op == FTL_SUM;
	return (dtype == FTL_I32 && (op == FTL_PROD || op == FTL_BXOR)) || (dtype == FTL_F32 && op == FTL_PROD);
}

int ref_check_block(const void *buf, ftl_dtype dtype, uint64_t seed, int rank, size_t count, char *why,
		    size_t why_len)
{
	size_t size = ftl_dtype_size(dtype);
	unsigned char want[8];
	for (size_t i = 0; i < count; i++) {
		store(want, dtype, 0, raw(dtype, seed, rank, i));
		if (memcmp((const unsigned char *)buf + i * size, want, size) != 0) {
			snprintf(why, why_len, "element %zu of rank %d's block differs", i, rank);
			return -1;
		}
	}
	return 0;
}
