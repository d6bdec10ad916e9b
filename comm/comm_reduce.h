/* comm_reduce: elementwise reduction kernels for the host backend, and the f16/bf16 <-> f32 conversions
 * they use. Pure functions, no I/O: unit-tested on their own (tests/comm/test_comm_reduce.c). */
#ifndef FTL_COMM_REDUCE_H
#define FTL_COMM_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ftl/comm.h"

/* The inline bf16 conversions below are device functions too where nvcc compiles this header
 * (comm_nccl_compress.cu), so the GPU rounds exactly as the host does. */
#ifdef __CUDACC__
#define FTL_COMM_HOST_DEVICE __host__ __device__
#else
#define FTL_COMM_HOST_DEVICE
#endif

/* out[i] = a[i] op b[i] for i < n. out may be a (in place); nothing else may overlap. */
typedef void (*ftl_comm_reduce_fn)(void *out, const void *a, const void *b, size_t n);

/* The kernel for (dtype, op); FTL_AVG uses the sum kernel and ftl_comm_reduce_divide at the end.
 * NULL for values out of range and for the pairs ftl_reduce_op_accepts refuses. */
ftl_comm_reduce_fn ftl_comm_reduce_kernel(ftl_dtype dtype, ftl_reduce_op op);

/* buf[i] /= divisor for i < n (integer division for the integer types; f16/bf16 divided in f32). */
void ftl_comm_reduce_divide(void *buf, size_t n, ftl_dtype dtype, int divisor);

/* IEEE binary16 and bfloat16, round to nearest even; NaN stays NaN, overflow becomes infinity. */
float ftl_comm_f16_to_f32(uint16_t h);
uint16_t ftl_comm_f32_to_f16(float f);
float ftl_comm_bf16_to_f32(uint16_t h);
uint16_t ftl_comm_f32_to_bf16(float f);

/* The bf16 conversions inline and branch-free (a select for NaN), for the loops that do them per element
 * (the bf16 sum kernel, the compressed allreduce): the same results as the functions above. */
static inline FTL_COMM_HOST_DEVICE float ftl_comm_bf16_widen(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, sizeof(f));
	return f;
}

/* The select is done on 32 bits and the top half taken with an arithmetic shift: the high half sign-extended
 * fits int16, so a vectorising compiler narrows with one saturating pack (packssdw) instead of shuffles,
 * about 20 % faster on x86 and the same bits for all 2^32 inputs (GCC and Clang shift signed values
 * arithmetically, as CUDA does). */
static inline FTL_COMM_HOST_DEVICE uint16_t ftl_comm_bf16_round(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	uint32_t y = (x & 0x7fffffffu) > 0x7f800000u ? x | 0x400000u /* quiet NaN */ : x + 0x7fffu + ((x >> 16) & 1);
	return (uint16_t)((int32_t)y >> 16);
}

#endif /* FTL_COMM_REDUCE_H */
