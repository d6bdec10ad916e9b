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
#define FTL_PROD_OF(a, b) ((a) * (b))
#define FTL_MIN_OF(a, b) ((b) < (a) ? (b) : (a))
#define FTL_MAX_OF(a, b) ((b) > (a) ? (b) : (a))
/* Integer sums and products wrap: do them in the unsigned type of the same width (a u8 or i8 is promoted
 * to int, where 255 * 255 cannot overflow, and cut back by the store). */
#define FTL_USUM_OF(T, U) ((T)((U)a[i] + (U)b[i]))
#define FTL_UPROD_OF(T, U) ((T)((U)a[i] * (U)b[i]))

/* One kernel per (native type, op). */
#define FTL_NATIVE_KERNEL(name, T, EXPR)                                                  \
	static void name(void *out_, const void *a_, const void *b_, size_t n)             \
	{                                                                                  \
		T *out = out_;                                                             \
		const T *a = a_, *b = b_;                                                  \
		for (size_t i = 0; i < n; i++)                                             \
			out[i] = EXPR;                                                     \
	}

/* The float types: sum, prod, min, max. */
#define FTL_FLOAT_KERNELS(T, SUFFIX)                                                      \
	FTL_NATIVE_KERNEL(sum_##SUFFIX, T, FTL_SUM_OF(a[i], b[i]))                         \
	FTL_NATIVE_KERNEL(prod_##SUFFIX, T, FTL_PROD_OF(a[i], b[i]))                       \
	FTL_NATIVE_KERNEL(min_##SUFFIX, T, FTL_MIN_OF(a[i], b[i]))                         \
	FTL_NATIVE_KERNEL(max_##SUFFIX, T, FTL_MAX_OF(a[i], b[i]))

/* The integer types: wrapping sum and prod, min, max and the bitwise three. */
#define FTL_INT_KERNELS(T, U, SUFFIX)                                                     \
	FTL_NATIVE_KERNEL(sum_##SUFFIX, T, FTL_USUM_OF(T, U))                              \
	FTL_NATIVE_KERNEL(prod_##SUFFIX, T, FTL_UPROD_OF(T, U))                            \
	FTL_NATIVE_KERNEL(min_##SUFFIX, T, FTL_MIN_OF(a[i], b[i]))                         \
	FTL_NATIVE_KERNEL(max_##SUFFIX, T, FTL_MAX_OF(a[i], b[i]))                         \
	FTL_NATIVE_KERNEL(band_##SUFFIX, T, (T)(a[i] & b[i]))                              \
	FTL_NATIVE_KERNEL(bor_##SUFFIX, T, (T)(a[i] | b[i]))                               \
	FTL_NATIVE_KERNEL(bxor_##SUFFIX, T, (T)(a[i] ^ b[i]))

FTL_FLOAT_KERNELS(float, f32)
FTL_FLOAT_KERNELS(double, f64)
FTL_INT_KERNELS(int32_t, uint32_t, i32)
FTL_INT_KERNELS(int64_t, uint64_t, i64)
FTL_INT_KERNELS(uint8_t, uint8_t, u8)
FTL_INT_KERNELS(int8_t, uint8_t, i8)
/* bool is one byte holding 0 or 1: and, or and xor keep it so, and are torch's sum/max (any) and
 * prod/min (all). */
FTL_NATIVE_KERNEL(and_bool, uint8_t, (uint8_t)(a[i] & b[i]))
FTL_NATIVE_KERNEL(or_bool, uint8_t, (uint8_t)(a[i] | b[i]))
FTL_NATIVE_KERNEL(xor_bool, uint8_t, (uint8_t)(a[i] ^ b[i]))

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
FTL_HALF_KERNEL(prod_f16, ftl_comm_f16_to_f32, ftl_comm_f32_to_f16, x * y)
FTL_HALF_PICK_KERNEL(min_f16, ftl_comm_f16_to_f32, <)
FTL_HALF_PICK_KERNEL(max_f16, ftl_comm_f16_to_f32, >)
FTL_HALF_KERNEL(sum_bf16, ftl_comm_bf16_widen, ftl_comm_bf16_round, x + y)
FTL_HALF_KERNEL(prod_bf16, ftl_comm_bf16_widen, ftl_comm_bf16_round, x * y)
FTL_HALF_PICK_KERNEL(min_bf16, ftl_comm_bf16_to_f32, <)
FTL_HALF_PICK_KERNEL(max_bf16, ftl_comm_bf16_to_f32, >)

/* A row of the table below: avg reduces with the sum kernel (and divides at the end). */
#define FTL_FLOAT_ROW(SUFFIX)                                                             \
	{[FTL_SUM] = sum_##SUFFIX, [FTL_AVG] = sum_##SUFFIX, [FTL_MIN] = min_##SUFFIX,      \
	 [FTL_MAX] = max_##SUFFIX, [FTL_PROD] = prod_##SUFFIX}
#define FTL_INT_ROW(SUFFIX)                                                               \
	{[FTL_SUM] = sum_##SUFFIX, [FTL_AVG] = sum_##SUFFIX, [FTL_MIN] = min_##SUFFIX,      \
	 [FTL_MAX] = max_##SUFFIX, [FTL_PROD] = prod_##SUFFIX, [FTL_BAND] = band_##SUFFIX,  \
	 [FTL_BOR] = bor_##SUFFIX, [FTL_BXOR] = bxor_##SUFFIX}

ftl_comm_reduce_fn ftl_comm_reduce_kernel(ftl_dtype dtype, ftl_reduce_op op)
{
	/* NULL where ftl_reduce_op_accepts says no. */
	static const ftl_comm_reduce_fn table[FTL_DTYPE_MAX][FTL_REDUCE_OP_MAX] = {
		[FTL_F32] = FTL_FLOAT_ROW(f32),
		[FTL_F64] = FTL_FLOAT_ROW(f64),
		[FTL_F16] = FTL_FLOAT_ROW(f16),
		[FTL_BF16] = FTL_FLOAT_ROW(bf16),
		[FTL_I32] = FTL_INT_ROW(i32),
		[FTL_I64] = FTL_INT_ROW(i64),
		[FTL_U8] = FTL_INT_ROW(u8),
		[FTL_I8] = FTL_INT_ROW(i8),
		[FTL_BOOL] = {[FTL_SUM] = or_bool, [FTL_MIN] = and_bool, [FTL_MAX] = or_bool, [FTL_PROD] = and_bool,
			      [FTL_BAND] = and_bool, [FTL_BOR] = or_bool, [FTL_BXOR] = xor_bool},
	};
	if ((unsigned)dtype >= FTL_DTYPE_MAX || (unsigned)op >= FTL_REDUCE_OP_MAX)
		return NULL;
	return table[dtype][op];
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
	case FTL_U8: {
		uint8_t *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)(p[i] / divisor);
		break;
	}
	case FTL_I8: {
		int8_t *p = buf;
		for (size_t i = 0; i < n; i++)
			p[i] = (int8_t)(p[i] / divisor);
		break;
	}
	default:
		break;
	}
}
