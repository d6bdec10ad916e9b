/* comm_reduce: the arithmetic of allreduce on the host. Native types reduce in their own type (integer
 * sums wrap, as on a GPU, instead of being undefined); f16 and bf16 are widened to f32, reduced and
 * rounded back to nearest even, which is what NCCL does per hop. The loops are plain so the compiler
 * vectorises the native ones. */
#include <string.h>

#include "comm_reduce.h"

static uint32_t f32_bits(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	return x;
}

static float f32_from_bits(uint32_t x)
{
	float f;
	memcpy(&f, &x, sizeof(f));
	return f;
}

float ftl_comm_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	if (exp == 0x1f)
		return f32_from_bits(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		float v = (float)man * 0x1p-24f; /* zero or subnormal: exact in f32 */
		return sign ? -v : v;
	}
	return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

/* Drops the low `shift` bits of m, rounding to nearest, ties to even. */
static uint32_t round_shift(uint32_t m, unsigned shift)
{
	uint32_t q = m >> shift;
	uint32_t rem = m & ((1u << shift) - 1);
	uint32_t half = 1u << (shift - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	return q;
}

uint16_t ftl_comm_f32_to_f16(float f)
{
	uint32_t x = f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) /* inf or NaN; a NaN keeps a payload bit so it stays NaN */
		return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
	if (ax >= 0x477ff000u) /* 65520 and up round to infinity */
		return (uint16_t)(sign | 0x7c00);
	if (ax < 0x33000000u) /* below 2^-25: rounds to zero */
		return sign;
	if (ax < 0x38800000u) { /* below 2^-14: a subnormal, in units of 2^-24 */
		uint32_t exp = ax >> 23;
		uint32_t man = (ax & 0x7fffffu) | 0x800000u;
		return (uint16_t)(sign | round_shift(man, 126 - exp));
	}
	/* Normal: rebias the exponent (127 - 15 = 112) and round off 13 bits; a carry into the exponent is
	 * the right answer, and cannot reach infinity below 65520. */
	return (uint16_t)(sign | round_shift(ax - 0x38000000u, 13));
}

float ftl_comm_bf16_to_f32(uint16_t h)
{
	return ftl_comm_bf16_widen(h);
}

uint16_t ftl_comm_f32_to_bf16(float f)
{
	return ftl_comm_bf16_round(f); /* NaN stays a quiet NaN */
}

#define FTL_SUM_OF(a, b) ((a) + (b))
#define FTL_MIN_OF(a, b) ((b) < (a) ? (b) : (a))
#define FTL_MAX_OF(a, b) ((b) > (a) ? (b) : (a))
/* Integer sums wrap: do them in the unsigned type of the same width. */
#define FTL_USUM_OF(T, U) ((T)((U)a[i] + (U)b[i]))

/* One kernel per (native type, op). */
#define FTL_NATIVE_KERNEL(name, T, EXPR)                                                  \
	static void name(void *out_, const void *a_, const void *b_, size_t n)             \
	{                                                                                  \
		T *out = out_;                                                             \
		const T *a = a_, *b = b_;                                                  \
		for (size_t i = 0; i < n; i++)                                             \
			out[i] = EXPR;                                                     \
	}

FTL_NATIVE_KERNEL(sum_f32, float, FTL_SUM_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(min_f32, float, FTL_MIN_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(max_f32, float, FTL_MAX_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(sum_f64, double, FTL_SUM_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(min_f64, double, FTL_MIN_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(max_f64, double, FTL_MAX_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(sum_i32, int32_t, FTL_USUM_OF(int32_t, uint32_t))
FTL_NATIVE_KERNEL(min_i32, int32_t, FTL_MIN_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(max_i32, int32_t, FTL_MAX_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(sum_i64, int64_t, FTL_USUM_OF(int64_t, uint64_t))
FTL_NATIVE_KERNEL(min_i64, int64_t, FTL_MIN_OF(a[i], b[i]))
FTL_NATIVE_KERNEL(max_i64, int64_t, FTL_MAX_OF(a[i], b[i]))

/* One kernel per (16-bit float type, op): widen, reduce in f32, round back. Min and max pick one of the
 * inputs, so they never round. */
#define FTL_HALF_KERNEL(name, TO_F32, FROM_F32, EXPR)                                     \
	static void name(void *out_, const void *a_, const void *b_, size_t n)             \
	{                                                                                  \
		uint16_t *out = out_;                                                      \
		const uint16_t *a = a_, *b = b_;                                           \
		for (size_t i = 0; i < n; i++) {                                           \
			float x = TO_F32(a[i]), y = TO_F32(b[i]);                          \
			out[i] = FROM_F32(EXPR);                                           \
		}                                                                          \
	}
#define FTL_HALF_PICK_KERNEL(name, TO_F32, CMP)                                           \
	static void name(void *out_, const void *a_, const void *b_, size_t n)             \
	{                                                                                  \
		uint16_t *out = out_;                                                      \
		const uint16_t *a = a_, *b = b_;                                           \
		for (size_t i = 0; i < n; i++)                                             \
			out[i] = TO_F32(b[i]) CMP TO_F32(a[i]) ? b[i] : a[i];              \
	}

FTL_HALF_KERNEL(sum_f16, ftl_comm_f16_to_f32, ftl_comm_f32_to_f16, x + y)
FTL_HALF_PICK_KERNEL(min_f16, ftl_comm_f16_to_f32, <)
FTL_HALF_PICK_KERNEL(max_f16, ftl_comm_f16_to_f32, >)
FTL_HALF_KERNEL(sum_bf16, ftl_comm_bf16_widen, ftl_comm_bf16_round, x + y)
FTL_HALF_PICK_KERNEL(min_bf16, ftl_comm_bf16_to_f32, <)
FTL_HALF_PICK_KERNEL(max_bf16, ftl_comm_bf16_to_f32, >)

ftl_comm_reduce_fn ftl_comm_reduce_kernel(ftl_dtype dtype, ftl_reduce_op op)
{
	/* Indexed [dtype][sum, min, max]. */
	static const ftl_comm_reduce_fn table[FTL_DTYPE_MAX][3] = {
		[FTL_F32] = {sum_f32, min_f32, max_f32},
		[FTL_F64] = {sum_f64, min_f64, max_f64},
		[FTL_F16] = {sum_f16, min_f16, max_f16},
		[FTL_BF16] = {sum_bf16, min_bf16, max_bf16},
		[FTL_I32] = {sum_i32, min_i32, max_i32},
		[FTL_I64] = {sum_i64, min_i64, max_i64},
	};
	if ((unsigned)dtype >= FTL_DTYPE_MAX)
		return NULL;
	switch (op) {
	case FTL_SUM:
	case FTL_AVG:
		return table[dtype][0];
	case FTL_MIN:
		return table[dtype][1];
	case FTL_MAX:
		return table[dtype][2];
	default:
		return NULL;
	}
}

void ftl_comm_reduce_divide(void *buf, size_t n, ftl_dtype dtype, int divisor)
{
	switch (dtype) {
	case FTL_F32: {
		float *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] /= (float)divisor;
		break;
	}
	case FTL_F64: {
		double *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] /= (double)divisor;
		break;
	}
	case FTL_F16: {
		uint16_t *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] = ftl_comm_f32_to_f16(ftl_comm_f16_to_f32(p[i]) / (float)divisor);
		break;
	}
	case FTL_BF16: {
		uint16_t *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] = ftl_comm_f32_to_bf16(ftl_comm_bf16_to_f32(p[i]) / (float)divisor);
		break;
	}
	case FTL_I32: {
		int32_t *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] /= divisor;
		break;
	}
	case FTL_I64: {
		int64_t *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] /= divisor;
		break;
	}
	default:
		break;
	}
}
