/* The exact sum's pure steps (comm_exact.c), for the exact allreduce and for the unit tests that
 * check that the result cannot depend on how rows are grouped. */
#ifndef FTL_COMM_EXACT_H
#define FTL_COMM_EXACT_H

#include <stddef.h>
#include <stdint.h>

/* Elements per block: each block has its own scale. */
#define FTL_EXACT_BLOCK 64

/* Blocks of count elements (the last may be short). */
size_t ftl_exact_blocks(size_t count);
/* block_max[b] = max(block_max[b], |row[k]| for k in block b); INFINITY for a NaN or an infinity. */
void ftl_exact_block_max(const float *row, size_t count, float *block_max);
/* The power of two 2^s a block is scaled by: total_rows values of magnitude at most max_abs (finite), each
 * rounded, sum to at most 2^30 in magnitude once scaled. 0 when max_abs is 0. */
int ftl_exact_exponent(float max_abs, uint64_t total_rows);
/* acc[k] += round(row[k] * 2^exponents[block of k]), nearest with ties to even. */
void ftl_exact_accumulate(const float *row, size_t count, const int32_t *exponents, int32_t *acc);
/* out[k] = acc[k] * 2^-exponents[block of k], rounded to float. */
void ftl_exact_result(const int32_t *acc, size_t count, const int32_t *exponents, float *out);

#endif
