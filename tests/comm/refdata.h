/* refdata: deterministic test data for the collectives and the f64 reference they are checked against.
 * Rank q's element i is a pure function of (seed, q, i), so every rank can compute what every other rank
 * contributed without any communication, for any size. Values are exact in their dtype (small multiples
 * of a power of two), so sums are exact in f32/f64 and only f16/bf16 round. */
#ifndef FTL_TESTS_COMM_REFDATA_H
#define FTL_TESTS_COMM_REFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl/ftl.h"

/* Stores rank's elements [0, count) into buf. */
void ref_fill(void *buf, ftl_dtype dtype, uint64_t seed, int rank, size_t count);

/* 0 when out holds the reduction over ranks 0..n-1 of ref_fill data; else -1 with the first bad element
 * described in why. f16/bf16 (and the division in avg) get a tolerance of (n+1) roundings of sum |x|. */
int ref_check_allreduce(const void *out, ftl_dtype dtype, ftl_reduce_op op, uint64_t seed, int n, size_t count,
			char *why, size_t why_len);

/* Whether the reduction order cannot change the bits of (dtype, op) on ref_fill data: integers and bool
 * always, min and max always, sums of f32 and f64 (exact on this data); not f16/bf16 sums, nor float
 * products (they round). */
bool ref_is_order_free(ftl_dtype dtype, ftl_reduce_op op);

/* The pairs that the slow sweeps (every algorithm at every size boundary) take: the four first ops on the
 * six first dtypes, and of the rest a sample that still covers each element size and kind of
 * arithmetic (u8, i8 and bool sums; i32 prod and bxor; f32 prod). The quick suites take every pair. */
bool ref_is_swept(ftl_dtype dtype, ftl_reduce_op op);

/* 0 when buf holds exactly rank's ref_fill data; else -1 with why. */
int ref_check_block(const void *buf, ftl_dtype dtype, uint64_t seed, int rank, size_t count, char *why,
		    size_t why_len);

#endif
