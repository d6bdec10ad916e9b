/* The sampler's look-ahead (ftl_sampler_peek, global_batch.c) promises what ftl_execute will hand each rank:
 * for every order and way of cutting steps, and a world that changes from step to step, a peek from the
 * registry's position equals the step's indices and lands where the step leaves the sampler. The
 * contiguous order keeps its own promises too: every index once per data epoch across rescales, and a
 * rank's streams go on where they stopped while the view stays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "train/global_batch.h"
#include "train/sampler.h"

enum { M = 1003, CAP = 64 };

/* A registry with a sampler of M samples cut as `batch` says, in `order`. */
static void registry(ftl_state_registry *r, ftl_sampler_order order, ftl_batch_config batch)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(ftl_state_set_sampler(r, M, 7, 11), FTL_OK);
	r->order = order;
	r->batch = batch;
}

/* World sizes that change at every step: rescales everywhere. */
static int world_at(int step) { return 1 + (step * 7 + step / 3) % 5; }

static void assert_peek_matches_steps(ftl_sampler_order order, ftl_batch_config batch)
{
	ftl_state_registry r;
	registry(&r, order, batch);
	uint64_t seen[M] = {0};
	for (int step = 0; r.data_epoch == 0; step++) {
		int world = world_at(step);
		uint64_t epoch = 0, pos = 0;
		for (int rank = 0; rank < world; rank++) {
			uint64_t got[CAP];
			size_t n;
			epoch = r.data_epoch;
			pos = r.sample_pos;
			assert_int_equal(ftl_batch_peek(&r, world, rank, &epoch, &pos, got, CAP, &n), FTL_OK);
			ftl_step_info info = {0};
			assert_int_equal(ftl_batch_fill_step(&r, rank, world, &info), FTL_OK);
			if (n != info.n_indices || memcmp(got, info.indices, n * sizeof(*got)) != 0)
				fail_msg("order %s, step %d, rank %d of %d: the peek differs from the step's indices",
					 ftl_sampler_order_strs[order], step, rank, world);
			for (size_t k = 0; k < n; k++) {
				if (got[k] >= M)
					fail_msg("order %s: index %llu out of range", ftl_sampler_order_strs[order],
						 (unsigned long long)got[k]);
				seen[got[k]]++;
			}
		}
		ftl_state_advance(&r, world);
		assert_int_equal(epoch, r.data_epoch);
		assert_int_equal(pos, r.sample_pos);
	}
	for (int i = 0; i < M; i++)
		if (seen[i] != 1)
			fail_msg("order %s: index %d used %llu times in data epoch 0", ftl_sampler_order_strs[order], i,
				 (unsigned long long)seen[i]);
	ftl_state_free(&r);
}

static void test_peek_is_the_steps_indices_with_the_growing_batch(void **state)
{
	for (int order = 0; order < FTL_SAMPLER_CONTIGUOUS; order++)
		assert_peek_matches_steps((ftl_sampler_order)order, (ftl_batch_config){0});
}

static void test_peek_is_the_steps_indices_with_a_global_batch(void **state)
{
	for (int order = 0; order < FTL_SAMPLER_CONTIGUOUS; order++) {
		assert_peek_matches_steps((ftl_sampler_order)order, (ftl_batch_config){.global_batch = 30});
		assert_peek_matches_steps((ftl_sampler_order)order,
					  (ftl_batch_config){.global_batch = 30, .max_batch_per_rank = 4, .is_reproducible = true});
	}
}

static void test_peek_is_the_steps_indices_in_contiguous_order(void **state)
{
	assert_peek_matches_steps(FTL_SAMPLER_CONTIGUOUS, (ftl_batch_config){.global_batch = 24, .max_batch_per_rank = 4});
}

static void test_contiguous_order_is_a_bijection(void **state)
{
	static const struct { uint64_t m, step; uint32_t chunk; } cases[] = {
		{1, 1, 1}, {10, 4, 2}, {11, 4, 2}, {12, 4, 2}, {13, 4, 2}, {1003, 24, 4}, {1000, 24, 4}, {7, 30, 3},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint64_t m = cases[c].m;
		char *seen = calloc(m, 1);
		for (uint64_t i = 0; i < m; i++) {
			uint64_t x = ftl_sampler_contiguous(m, cases[c].step, cases[c].chunk, i);
			if (x >= m || seen[x]++)
				fail_msg("m %llu: position %llu gives %llu twice or out of range", (unsigned long long)m,
					 (unsigned long long)i, (unsigned long long)x);
		}
		free(seen);
	}
}

/* With the view fixed, each of a rank's streams gives, step after step, the samples right after the last. */
static void test_contiguous_streams_go_on_where_they_stopped(void **state)
{
	ftl_state_registry r;
	registry(&r, FTL_SAMPLER_CONTIGUOUS, (ftl_batch_config){.global_batch = 24, .max_batch_per_rank = 4});
	enum { WORLD = 3, STREAMS = 6, CHUNK = 4 };
	uint64_t next[STREAMS];
	for (int step = 0; r.sample_pos + 24 <= M && r.data_epoch == 0; step++) {
		for (int rank = 0; rank < WORLD; rank++) {
			ftl_step_info info = {0};
			assert_int_equal(ftl_batch_fill_step(&r, rank, WORLD, &info), FTL_OK);
			assert_int_equal(info.first_micro, rank * 2); /* the same streams at every step */
			for (size_t k = 0; k < info.n_indices; k++) {
				uint64_t s = info.first_micro + k / CHUNK;
				if (k % CHUNK == 0 && step > 0)
					assert_int_equal(info.indices[k], next[s]);
				if (k % CHUNK)
					assert_int_equal(info.indices[k], info.indices[k - 1] + 1);
				next[s] = info.indices[k] + 1;
			}
		}
		ftl_state_advance(&r, WORLD);
	}
	ftl_state_free(&r);
}

static void test_peek_refuses_what_it_cannot_answer(void **state)
{
	ftl_state_registry r;
	uint64_t out[CAP], epoch = 0, pos = 0;
	size_t n;
	registry(&r, FTL_SAMPLER_SHUFFLE, (ftl_batch_config){0});
	assert_int_equal(ftl_batch_peek(&r, 2, 2, &epoch, &pos, out, CAP, &n), FTL_ERR_INVALID);
	assert_int_equal(ftl_batch_peek(&r, 2, 0, &epoch, &pos, out, 6, &n), FTL_ERR_INVALID); /* batch is 7 */
	assert_int_equal(n, 7);
	r.order = FTL_SAMPLER_CONTIGUOUS;
	assert_int_equal(ftl_batch_peek(&r, 2, 0, &epoch, &pos, out, CAP, &n), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "FTL_GLOBAL_BATCH"));
	ftl_step_info info = {0};
	assert_int_equal(ftl_batch_fill_step(&r, 0, 2, &info), FTL_ERR_INVALID);
	assert_int_equal(pos, 0);
	ftl_state_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peek_is_the_steps_indices_with_the_growing_batch),
		cmocka_unit_test(test_peek_is_the_steps_indices_with_a_global_batch),
		cmocka_unit_test(test_peek_is_the_steps_indices_in_contiguous_order),
		cmocka_unit_test(test_contiguous_order_is_a_bijection),
		cmocka_unit_test(test_contiguous_streams_go_on_where_they_stopped),
		cmocka_unit_test(test_peek_refuses_what_it_cannot_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
