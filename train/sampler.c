/* The elastic sampler: which dataset index sits at each position of a data epoch, and which positions a
 * rank takes in a step.
 *
 * Why a keyed permutation rather than a shuffled array: the position in the epoch is the only state, so it
 * can be broadcast and checkpointed as one number, and any worker computes any index in O(1) time and
 * memory, for datasets of any size, without agreeing on an array first.
 *
 * The permutation is a Feistel network over [0, 2^bits), 2^bits the smallest power of two >= m (at least
 * 4, so that tiny datasets still get shuffled). The halves may differ by one bit: each round maps
 * (hi, lo) to (lo, hi ^ F(lo)) truncated to hi's width, which is invertible whatever the widths, so every
 * round (and the network) is a bijection of [0, 2^bits). Values >= m are walked through the network again
 * ("cycle walking"): the walk stays on the cycle of the start value, which contains a value < m, and as
 * 2^bits < 2m (for m > 4) it takes fewer than two passes on average: O(1) expected time per index.
 * Round keys come from splitmix64 of the seed and the data epoch, so every (seed, epoch) gives its own
 * order. */
#include "sampler.h"

enum { FEISTEL_ROUNDS = 6, MIN_DOMAIN_BITS = 2 };

/* Sebastiano Vigna's splitmix64 finaliser: a bijective 64-bit mixer with full avalanche. */
static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Half widths are at most 32 bits (bits <= 64). */
static uint64_t low_bits_mask(unsigned bits)
{
	return (1ull << bits) - 1;
}

/* The smallest bits with 2^bits >= m, at least MIN_DOMAIN_BITS. */
static unsigned domain_bits(uint64_t m)
{
	unsigned bits = MIN_DOMAIN_BITS;
	while (bits < 64 && (1ull << bits) < m)
		bits++;
	return bits;
}

typedef struct feistel {
	unsigned bits;
	uint64_t round_keys[FEISTEL_ROUNDS];
} feistel;

static void feistel_init(feistel *f, uint64_t m, uint64_t seed, uint64_t epoch)
{
	f->bits = domain_bits(m);
	uint64_t base = splitmix64(splitmix64(seed) ^ epoch);
	for (int r = 0; r < FEISTEL_ROUNDS; r++)
		f->round_keys[r] = splitmix64(base + (uint64_t)r);
}

/* One pass through the network: a bijection of [0, 2^bits). */
static uint64_t feistel_encrypt(const feistel *f, uint64_t x)
{
	unsigned lo_bits = f->bits / 2;
	for (int r = 0; r < FEISTEL_ROUNDS; r++) {
		unsigned hi_bits = f->bits - lo_bits;
		uint64_t lo = x & low_bits_mask(lo_bits);
		uint64_t hi = x >> lo_bits;
		uint64_t mixed = (hi ^ splitmix64(lo ^ f->round_keys[r])) & low_bits_mask(hi_bits);
		/* The new high half is the old low half (lo_bits wide), the new low half is hi_bits wide. */
		x = (lo << hi_bits) | mixed;
		lo_bits = hi_bits;
	}
	return x;
}

/* Cycle walking: encrypt until the value falls in [0, m). i < m, so the walk ends back in range. */
static uint64_t feistel_permute(const feistel *f, uint64_t m, uint64_t i)
{
	uint64_t x = i;
	do
		x = feistel_encrypt(f, x);
	while (x >= m);
	return x;
}

uint64_t ftl_sampler_permute(uint64_t m, uint64_t seed, uint64_t epoch, uint64_t i)
{
	if (i >= m)
		return i; /* an out-of-range position is the caller's bug: left unchanged rather than looping */
	feistel f;
	feistel_init(&f, m, seed, epoch);
	return feistel_permute(&f, m, i);
}

size_t ftl_sampler_slice(uint64_t m, uint64_t seed, uint64_t epoch, uint64_t pos, int rank, uint32_t b,
			 uint64_t *out)
{
	if (rank < 0 || pos >= m)
		return 0;
	uint64_t left_in_epoch = m - pos;
	uint64_t offset = (uint64_t)rank * b; /* rank < 2^31 and b < 2^32: no overflow */
	if (offset >= left_in_epoch)
		return 0;
	uint64_t n = left_in_epoch - offset < b ? left_in_epoch - offset : b;
	feistel f;
	feistel_init(&f, m, seed, epoch);
	for (uint64_t k = 0; k < n; k++)
		out[k] = feistel_permute(&f, m, pos + offset + k);
	return (size_t)n;
}

uint64_t ftl_sampler_advance(uint64_t m, uint64_t pos, int world, uint32_t b)
{
	if (world <= 0 || pos >= m)
		return 0;
	uint64_t step = (uint64_t)world * b;
	return step < m - pos ? step : m - pos;
}

/* Stream j holds chunks 0..last-1 whole and, in the last step (which has `rest` positions), a chunk of
 * b, of rest % b or of nothing, as j is below, at or above rest / b. It starts where the streams before it
 * end. */
uint64_t ftl_sampler_contiguous(uint64_t m, uint64_t step_len, uint32_t chunk, uint64_t i)
{
	if (i >= m || step_len == 0 || chunk == 0)
		return i;
	uint64_t b = chunk, last = (m - 1) / step_len, rest = m - last * step_len;
	uint64_t full = rest / b, part = rest % b;
	uint64_t t = i / step_len, j = (i % step_len) / b, k = i % b;
	uint64_t start = j * last * b + (j < full ? j : full) * b + (j > full ? part : 0);
	return start + t * b + k;
}
