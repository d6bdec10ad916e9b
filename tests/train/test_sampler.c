/* Unit tests of the elastic sampler's promises: each data epoch is a permutation of the dataset, epochs and
 * seeds give different orders, and however the world size changes from step to step, the ranks' slices
 * cover every sample of an epoch exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "train/global_batch.h"
#include "train/sampler.h"

/* Counts how often each index of [0, m) was produced; fails on an index out of range. */
typedef struct coverage {
	uint64_t m;
	uint32_t *seen;
} coverage;

static void coverage_init(coverage *c, uint64_t m)
{
	c->m = m;
	c->seen = calloc(m ? m : 1, sizeof(*c->seen));
	assert_non_null(c->seen);
}

static void coverage_add(coverage *c, uint64_t index)
{
	if (index >= c->m)
		fail_msg("index %llu out of range [0, %llu)", (unsigned long long)index, (unsigned long long)c->m);
	c->seen[index]++;
}

static void assert_each_seen_once(const coverage *c)
{
	for (uint64_t i = 0; i < c->m; i++)
		if (c->seen[i] != 1)
			fail_msg("index %llu of %llu seen %u times", (unsigned long long)i, (unsigned long long)c->m,
				 c->seen[i]);
}

static void assert_permutation(uint64_t m, uint64_t seed, uint64_t epoch)
{
	coverage c;
	coverage_init(&c, m);
	for (uint64_t i = 0; i < m; i++)
		coverage_add(&c, ftl_sampler_permute(m, seed, epoch, i));
	assert_each_seen_once(&c);
	free(c.seen);
}

static void test_permute_is_a_bijection_for_many_sizes(void **state)
{
	/* Powers of two and their neighbours exercise the domain rounding and the cycle walk; odd bit
	 * widths exercise the unbalanced halves. */
	static const uint64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 255, 256, 257, 1000, 1023, 1024,
					 4097, 65535, 65536, 65537, 100003, 1u << 20};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (uint64_t epoch = 0; epoch < 3; epoch++)
			assert_permutation(sizes[k], 42 + k, epoch);
}

static void test_permute_handles_huge_datasets(void **state)
{
	/* No table anywhere: indices near 2^64 are computed directly and stay in range and distinct. */
	const uint64_t m = UINT64_MAX - 12345;
	uint64_t seen[64];
	for (uint64_t k = 0; k < 64; k++) {
		uint64_t i = m - 1 - k * 0x0123456789abull;
		seen[k] = ftl_sampler_permute(m, 7, 3, i);
		assert_true(seen[k] < m);
		for (uint64_t j = 0; j < k; j++)
			assert_true(seen[j] != seen[k]);
	}
	assert_true(ftl_sampler_permute((1ull << 63) + 1, 1, 1, 1ull << 63) < (1ull << 63) + 1);
}

/* How many of the first n positions two orders place differently. */
static uint64_t positions_that_differ(uint64_t m, uint64_t seed_a, uint64_t epoch_a, uint64_t seed_b,
				      uint64_t epoch_b)
{
	uint64_t differ = 0;
	for (uint64_t i = 0; i < m; i++)
		differ += ftl_sampler_permute(m, seed_a, epoch_a, i) != ftl_sampler_permute(m, seed_b, epoch_b, i);
	return differ;
}

static void test_epochs_and_seeds_give_different_orders(void **state)
{
	const uint64_t m = 1000;
	/* Two independent random permutations agree at about one position; demand most differ. */
	assert_true(positions_that_differ(m, 1, 0, 1, 1) > m * 9 / 10);
	assert_true(positions_that_differ(m, 1, 0, 2, 0) > m * 9 / 10);
	assert_true(positions_that_differ(m, 1, 5, 1, 6) > m * 9 / 10);
	/* Same (seed, epoch): the same order on every worker, every time. */
	assert_int_equal(positions_that_differ(m, 9, 4, 9, 4), 0);
	/* Small datasets get shuffled too (the domain has at least 4 elements). */
	bool any_moved = false;
	for (uint64_t epoch = 0; epoch < 8 && !any_moved; epoch++)
		any_moved = ftl_sampler_permute(2, 3, epoch, 0) != 0;
	assert_true(any_moved);
}

static void test_permutation_is_not_near_identity(void **state)
{
	/* A shuffle for training: neighbours in position should land far apart in the dataset. */
	const uint64_t m = 50000;
	uint64_t close = 0;
	for (uint64_t i = 0; i + 1 < m; i++) {
		uint64_t a = ftl_sampler_permute(m, 11, 0, i), b = ftl_sampler_permute(m, 11, 0, i + 1);
		close += (a > b ? a - b : b - a) < 100;
	}
	/* For a random permutation about 2 * 100 / m of pairs are that close: ~200 of 50,000. */
	assert_true(close < 1000);
}

static void test_slice_takes_the_ranks_positions_and_clips_at_the_end(void **state)
{
	const uint64_t m = 10, seed = 5, epoch = 2;
	uint64_t out[4];
	/* pos 4, b 4: rank 0 takes positions 4..7, rank 1 takes 8..9, rank 2 takes none. */
	assert_int_equal(ftl_sampler_slice(m, seed, epoch, 4, 0, 4, out), 4);
	for (uint64_t k = 0; k < 4; k++)
		assert_int_equal(out[k], ftl_sampler_permute(m, seed, epoch, 4 + k));
	assert_int_equal(ftl_sampler_slice(m, seed, epoch, 4, 1, 4, out), 2);
	assert_int_equal(out[0], ftl_sampler_permute(m, seed, epoch, 8));
	assert_int_equal(out[1], ftl_sampler_permute(m, seed, epoch, 9));
	assert_int_equal(ftl_sampler_slice(m, seed, epoch, 4, 2, 4, out), 0);
	assert_int_equal(ftl_sampler_slice(m, seed, epoch, 10, 0, 4, out), 0);
	assert_int_equal(ftl_sampler_slice(m, seed, epoch, 0, -1, 4, out), 0);
}

static void test_advance_moves_by_the_global_batch_clipped_at_the_end(void **state)
{
	assert_int_equal(ftl_sampler_advance(100, 0, 4, 8), 32);
	assert_int_equal(ftl_sampler_advance(100, 90, 4, 8), 10);
	assert_int_equal(ftl_sampler_advance(100, 100, 4, 8), 0);
	assert_int_equal(ftl_sampler_advance(100, 0, 0, 8), 0);
}

/* One step of an epoch driver: every rank of a world of `world` takes its slice at pos (all added to c);
 * returns how far the step moves pos. */
typedef uint64_t (*epoch_step_fn)(const void *cfg, uint64_t m, int epoch, uint64_t pos, int world, coverage *c,
				  uint64_t *slice);

/* Runs whole data epochs of m indices, the world size taking the values of worlds in turn between steps
 * as in a job with kills and joins, and checks that within each epoch the union of every rank's slices is
 * every index exactly once. slice_cap: the most one rank takes in a step. */
static void run_epochs(uint64_t m, size_t slice_cap, const int *worlds, size_t n_worlds, int epochs,
		       epoch_step_fn step_fn, const void *cfg)
{
	uint64_t *slice = malloc(slice_cap * sizeof(*slice));
	assert_non_null(slice);
	size_t step = 0;
	for (int epoch = 0; epoch < epochs; epoch++) {
		coverage c;
		coverage_init(&c, m);
		uint64_t pos = 0;
		while (pos < m) {
			uint64_t advance = step_fn(cfg, m, epoch, pos, worlds[step++ % n_worlds], &c, slice);
			assert_true(advance > 0);
			pos += advance;
		}
		assert_int_equal(pos, m);
		assert_each_seen_once(&c);
		free(c.seen);
	}
	free(slice);
}

/* The per-rank sampler: every rank takes up to b indices, and the step advances by what they took. */
struct per_rank_cfg {
	uint64_t seed;
	uint32_t b;
};

static uint64_t per_rank_step(const void *cfg, uint64_t m, int epoch, uint64_t pos, int world, coverage *c,
			      uint64_t *slice)
{
	const struct per_rank_cfg *p = cfg;
	size_t taken = 0;
	for (int rank = 0; rank < world; rank++) {
		size_t n = ftl_sampler_slice(m, p->seed, (uint64_t)epoch, pos, rank, p->b, slice);
		for (size_t k = 0; k < n; k++)
			coverage_add(c, slice[k]);
		taken += n;
	}
	uint64_t advance = ftl_sampler_advance(m, pos, world, p->b);
	assert_int_equal(taken, advance);
	return advance;
}

static void run_epochs_with_changing_world(uint64_t m, uint32_t b, const int *worlds, size_t n_worlds,
					   uint64_t seed, int epochs)
{
	struct per_rank_cfg cfg = {.seed = seed, .b = b};
	run_epochs(m, b, worlds, n_worlds, epochs, per_rank_step, &cfg);
}

static void test_changing_world_size_covers_every_index_exactly_once(void **state)
{
	static const int worlds[] = {4, 4, 3, 3, 5, 2, 1, 7, 4, 6};
	const size_t n_worlds = sizeof(worlds) / sizeof(worlds[0]);
	run_epochs_with_changing_world(1000, 16, worlds, n_worlds, 1, 3);
	run_epochs_with_changing_world(65537, 64, worlds, n_worlds, 2, 2);
	run_epochs_with_changing_world(7, 3, worlds, n_worlds, 3, 4); /* epochs shorter than one step */
	static const int shrink_to_one[] = {8, 1};
	run_epochs_with_changing_world(999, 5, shrink_to_one, 2, 4, 2);
}

/* A fixed global batch of 100 on 3 ranks: 34, 33, 33 consecutive positions, whatever the data. */
static void test_global_batch_of_100_on_3_ranks_splits_34_33_33(void **state)
{
	static const uint64_t offsets[] = {0, 34, 67}, counts[] = {34, 33, 33};
	for (int rank = 0; rank < 3; rank++) {
		ftl_batch_share s;
		ftl_batch_share_of(100, 0, false, 3, rank, NULL, &s);
		assert_int_equal(s.offset, offsets[rank]);
		assert_int_equal(s.count, counts[rank]);
	}
	assert_int_equal(ftl_batch_step_len(1000, 0, 100), 100);
	assert_int_equal(ftl_batch_step_len(1000, 950, 100), 50); /* the end of the data epoch */
	assert_int_equal(ftl_batch_step_len(1000, 1000, 100), 0);
}

/* Whole data epochs with a fixed global batch while the world changes between steps: every step takes the
 * global batch (fewer only at the epoch's end) in consecutive runs, in rank order. */
struct global_batch_cfg {
	uint64_t batch;
	uint32_t micro;
	bool is_reproducible;
	bool is_weighted;               /* shares by made-up uneven weights (the rebalance policy's) */
};

/* Uneven weights for a world (as the rebalance policy's: at least 1, changing with the world). */
static const uint32_t *weights_of(int world)
{
	static uint32_t w[64];
	for (int i = 0; i < world && i < 64; i++)
		w[i] = 1 + (uint32_t)((i * 7919 + world * 31) % 4096);
	return w;
}

static uint64_t global_batch_step(const void *cfg, uint64_t m, int epoch, uint64_t pos, int world, coverage *c,
				  uint64_t *slice)
{
	const struct global_batch_cfg *g = cfg;
	uint64_t len = ftl_batch_step_len(m, pos, g->batch), taken = 0;
	assert_int_equal(len, m - pos < g->batch ? m - pos : g->batch);
	for (int rank = 0; rank < world; rank++) {
		ftl_batch_share sh;
		ftl_batch_share_of(len, g->micro, g->is_reproducible, world, rank, g->is_weighted ? weights_of(world) : NULL,
				   &sh);
		assert_int_equal(sh.offset, taken);
		size_t n = sh.count ? ftl_sampler_slice(m, 9, (uint64_t)epoch, pos + sh.offset, 0, (uint32_t)sh.count,
							slice) : 0;
		assert_int_equal(n, sh.count);
		for (size_t k = 0; k < n; k++)
			coverage_add(c, slice[k]);
		taken += n;
	}
	assert_int_equal(taken, len);
	return len;
}

static void run_global_batch_epochs(uint64_t m, uint64_t batch, uint32_t micro, bool is_reproducible,
				    const int *worlds, size_t n_worlds, int epochs)
{
	struct global_batch_cfg cfg = {.batch = batch, .micro = micro, .is_reproducible = is_reproducible};
	run_epochs(m, batch, worlds, n_worlds, epochs, global_batch_step, &cfg);
	cfg.is_weighted = true;
	run_epochs(m, batch, worlds, n_worlds, epochs, global_batch_step, &cfg);
}

static void test_global_batch_covers_every_index_exactly_once_as_the_world_changes(void **state)
{
	static const int three[] = {3};
	static const int changing[] = {4, 4, 3, 5, 5, 2, 1, 7, 3, 6};
	run_global_batch_epochs(10000, 100, 0, false, three, 1, 2);          /* B = 100 on 3 workers */
	run_global_batch_epochs(1003, 100, 0, false, changing, 10, 3);       /* a short last step */
	run_global_batch_epochs(1003, 100, 16, true, changing, 10, 3);       /* whole micro-shards */
	run_global_batch_epochs(50, 100, 0, false, changing, 10, 2);         /* an epoch shorter than a step */
}

/* Reproducible mode: micro-shard k of a step holds the same positions whatever the world size, and a rank
 * that gets none (more ranks than shards) takes nothing. */
static void test_micro_shards_do_not_depend_on_the_world_size(void **state)
{
	const uint64_t len = 100;
	const uint32_t micro = 16; /* 7 shards: six of 16 and one of 4 */
	for (int world = 1; world <= 9; world++) {
		uint32_t next_shard = 0;
		for (int rank = 0; rank < world; rank++) {
			ftl_batch_share sh;
			ftl_batch_share_of(len, micro, true, world, rank, NULL, &sh);
			assert_int_equal(sh.total_micro, 7);
			if (sh.count == 0)
				continue;
			assert_int_equal(sh.first_micro, next_shard);
			assert_int_equal(sh.offset, (uint64_t)sh.first_micro * micro);
			uint64_t shards = (sh.count + micro - 1) / micro;
			next_shard += (uint32_t)shards;
			uint64_t end = (uint64_t)next_shard * micro < len ? (uint64_t)next_shard * micro : len;
			assert_int_equal(sh.offset + sh.count, end); /* whole shards only */
		}
		assert_int_equal(next_shard, 7);
	}
}

/* The rebalance policy's weights: shares in proportion, consecutive, whole micro-shards in reproducible mode. */
static void test_weighted_shares_follow_the_weights(void **state)
{
	static const uint32_t half_speed_last[] = {2, 2, 2, 1};
	static const uint64_t counts[] = {20, 20, 20, 10};
	for (int rank = 0, next = 0; rank < 4; rank++) {
		ftl_batch_share s;
		ftl_batch_share_of(70, 0, false, 4, rank, half_speed_last, &s);
		assert_int_equal(s.offset, next);
		assert_int_equal(s.count, counts[rank]);
		next += (int)s.count;
	}
	static const uint64_t shards[] = {2, 2, 2, 1}; /* 7 micro-shards of 10: the last rank takes one */
	for (int rank = 0, next = 0; rank < 4; rank++) {
		ftl_batch_share s;
		ftl_batch_share_of(70, 10, true, 4, rank, half_speed_last, &s);
		assert_int_equal(s.first_micro, next);
		assert_int_equal(s.count, shards[rank] * 10);
		next += (int)shards[rank];
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_permute_is_a_bijection_for_many_sizes),
		cmocka_unit_test(test_permute_handles_huge_datasets),
		cmocka_unit_test(test_epochs_and_seeds_give_different_orders),
		cmocka_unit_test(test_permutation_is_not_near_identity),
		cmocka_unit_test(test_slice_takes_the_ranks_positions_and_clips_at_the_end),
		cmocka_unit_test(test_advance_moves_by_the_global_batch_clipped_at_the_end),
		cmocka_unit_test(test_changing_world_size_covers_every_index_exactly_once),
		cmocka_unit_test(test_global_batch_of_100_on_3_ranks_splits_34_33_33),
		cmocka_unit_test(test_global_batch_covers_every_index_exactly_once_as_the_world_changes),
		cmocka_unit_test(test_micro_shards_do_not_depend_on_the_world_size),
		cmocka_unit_test(test_weighted_shares_follow_the_weights),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
