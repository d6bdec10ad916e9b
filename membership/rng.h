/* A small seeded PRNG (splitmix64) so that every random choice of the protocol is reproducible: the
 * simulator seeds each node from one printed seed and the same seed gives the same run. Not for crypto
 * (nonces come from libsodium). */
#ifndef FTL_MEMBERSHIP_RNG_H
#define FTL_MEMBERSHIP_RNG_H

#include <stdint.h>

typedef struct ftl_rng {
	uint64_t state;
} ftl_rng;

static inline void ftl_rng_seed(ftl_rng *r, uint64_t seed) { r->state = seed; }

static inline uint64_t ftl_rng_next(ftl_rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. The modulo bias is below 2^-40 for the n we use. */
static inline uint32_t ftl_rng_below(ftl_rng *r, uint32_t n) { return (uint32_t)(ftl_rng_next(r) % n); }

/* Uniform in [0, 1). */
static inline double ftl_rng_unit(ftl_rng *r) { return (double)(ftl_rng_next(r) >> 11) * 0x1.0p-53; }

#endif
