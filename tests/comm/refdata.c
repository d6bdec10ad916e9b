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
	if (dtype == FTL_BF16)
		return (int64_t)(h % 255) - 127; /* fits bf16's 8 significant bits */
	return (int64_t)(h % 2001) - 1000;
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
	return dtype == FTL_I32 ? ((const int32_t *)buf)[i] : ((const int64_t *)buf)[i];
}

void ref_fill(void *buf, ftl_dtype dtype, uint64_t seed, int rank, size_t count)
{
	for (size_t i = 0; i < count; i++)
		store(buf, dtype, i, raw(dtype, seed, rank, i));
}

static double epsilon(ftl_dtype dtype)
{
	switch (dtype) {
	case FTL_F16: return 0x1p-11;
	case FTL_BF16: return 0x1p-8;
	case FTL_F32: return 0x1p-24;
	default: return 0x1p-53;
	}
}

int ref_check_allreduce(const void *out, ftl_dtype dtype, ftl_reduce_op op, uint64_t seed, int n, size_t count,
			char *why, size_t why_len)
{
	bool is_int = dtype == FTL_I32 || dtype == FTL_I64;
	for (size_t i = 0; i < count; i++) {
		double sum = 0, sum_abs = 0, lo = INFINITY, hi = -INFINITY;
		int64_t isum = 0, ilo = INT64_MAX, ihi = INT64_MIN;
		for (int q = 0; q < n; q++) {
			int64_t r = raw(dtype, seed, q, i);
			double x = as_double(dtype, r);
			int64_t v = dtype == FTL_I64 ? as_i64(r) : r;
			sum += x;
			sum_abs += fabs(x);
			lo = fmin(lo, x);
			hi = fmax(hi, x);
			isum += v;
			ilo = v < ilo ? v : ilo;
			ihi = v > ihi ? v : ihi;
		}
		if (is_int) {
			int64_t want = op == FTL_SUM ? isum : op == FTL_AVG ? isum / n : op == FTL_MIN ? ilo : ihi;
			int64_t got = load_i(out, dtype, i);
			if (got != want) {
				snprintf(why, why_len, "element %zu: got %lld, want %lld", i, (long long)got, (long long)want);
				return -1;
			}
			continue;
		}
		double want = op == FTL_SUM ? sum : op == FTL_AVG ? sum / n : op == FTL_MIN ? lo : hi;
		double tol = op == FTL_MIN || op == FTL_MAX ? 0 : (n + 1) * epsilon(dtype) * fmax(1.0, sum_abs);
		double got = load_f(out, dtype, i);
		if (!(fabs(got - want) <= tol)) {
			snprintf(why, why_len, "element %zu: got %.9g, want %.9g (tolerance %.3g)", i, got, want, tol);
			return -1;
		}
	}
	return 0;
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
