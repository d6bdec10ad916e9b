/* The elastic sampler as a pure function: a seeded permutation of [0, M) per data epoch, and which
 * indices rank r of w takes at global position pos. */
#ifndef FTL_AGENT_SAMPLER_H
#define FTL_AGENT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

/* The index at position i of data epoch e's permutation of [0, m): a bijection of [0, m), O(1) time
 * and memory whatever m is. */
uint64_t ftl_sampler_permute(uint64_t m, uint64_t seed, uint64_t epoch, uint64_t i);
/* Rank r's indices for a step at position pos: positions [pos + r*b, pos + (r+1)*b) clipped to m,
 * written to out (capacity b); returns how many. */
size_t ftl_sampler_slice(uint64_t m, uint64_t seed, uint64_t epoch, uint64_t pos, int rank, uint32_t b,
			 uint64_t *out);
/* How far a step of world ranks moves the position (clipped at the end of the data epoch). */
uint64_t ftl_sampler_advance(uint64_t m, uint64_t pos, int world, uint32_t b);

/* The contiguous order's index at position i of an epoch of m (FTL_SAMPLER_CONTIGUOUS, ftl/execute.h): steps
 * of step_len positions, each cut into chunks of `chunk` positions, chunk j of step t being chunk t of
 * stream j, and stream j the j-th contiguous stretch of [0, m). A bijection of [0, m), O(1); step_len a
 * multiple of chunk, both at least 1. */
uint64_t ftl_sampler_contiguous(uint64_t m, uint64_t step_len, uint32_t chunk, uint64_t i);

#endif
