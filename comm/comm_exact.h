/* The exact sum's pure steps (comm_exact.c), for ftl_comm_allreduce_exact and for the unit tests that
 * check that the result cannot depend on how rows are grouped. */
#ifndef FTL_COMM_EXACT_H
#define FTL_COMM_EXACT_H

#include <stddef.h>
#include <stdint.h>

/* The power of two 2^s the rows are scaled by: total_rows values of magnitude at most max_abs (finite)
 * sum below 2^62 once scaled. 0 when max_abs is 0. */
int ftl_exact_exponent(float max_abs, uint64_t total_rows);
/* The largest magnitude among n floats; INFINITY when one is NaN or infinite. */
float ftl_exact_max_abs(const float *rows, size_t n);
/* acc[k] += round(row[k] * 2^exponent), nearest with ties to even. */
void ftl_exact_accumulate(const float *row, size_t count, int exponent, int64_t *acc);
/* out[k] = acc[k] * 2^-exponent, rounded to float. */
void ftl_exact_result(const int64_t *acc, size_t count, int exponent, float *out);

#endif
