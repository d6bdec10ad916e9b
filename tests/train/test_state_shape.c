/* A joiner whose state or settings differ from the job's is refused at the state sync's first broadcast,
 * which is of one size whatever the state (so it pairs with rank 0's and poisons nothing), with a sentence
 * naming the difference, and sends nothing more (issue 24, item 1). Rank 0's header is recorded on a tape
 * and played back to the joiner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_comm.h"
#include "train/state_sync.h"

static float params[16], momentum[16], ballast[4];

/* The job's registry: params and momentum, a sampler. */
static void job_state(ftl_state_registry *r)
{
	memset(r, 0, sizeof(*r));
	r->backend = FTL_COMM_TCP;
	assert_int_equal(ftl_state_register_buffer(r, "params", params, sizeof(params), false), 0);
	assert_int_equal(ftl_state_register_buffer(r, "momentum", momentum, sizeof(momentum), false), 0);
	assert_int_equal(ftl_state_set_sampler(r, 20000, 16, 7), 0);
}

/* Rank 0 with the job's state, then a joiner with `joiner`'s: what the joiner's sync returns; *calls is the
 * number of collectives the joiner called. */
static ftl_err join_with(ftl_state_registry *joiner, int *calls)
{
	fake_tape tape = {0};
	ftl_state_registry job;
	uint64_t moved;
	job_state(&job);
	job.has_state = true;
	for (int rank = 0; rank < 2; rank++) {
		fake_comm *c = fake_comm_new(FTL_COMM_TCP, rank, 2);
		c->tape = &tape;
		ftl_comm_pair pair = {&c->base, &c->base};
		ftl_err e = ftl_state_sync(rank ? joiner : &job, &pair, rank, 0, &moved);
		*calls = c->calls;
		ftl_comm_delete(&c->base);
		if (rank == 1) {
			fake_tape_free(&tape);
			ftl_state_free(&job);
			return e;
		}
		assert_int_equal(e, FTL_OK);
	}
	return FTL_OK;
}

/* The joiner is refused after the header alone, and the diag says each of `says`. */
static void refused_saying(ftl_state_registry *joiner, const char *const *says)
{
	int calls = 0;
	assert_int_equal(join_with(joiner, &calls), FTL_ERR_REFUSED);
	assert_int_equal(calls, 1);
	assert_non_null(strstr(ftl_diag_message(), "ftl: refused by the job: "));
	for (; *says; says++)
		if (!strstr(ftl_diag_message(), *says))
			fail_msg("the refusal does not say \"%s\": %s", *says, ftl_diag_message());
	ftl_state_free(joiner);
}

static void test_a_joiner_like_the_job_syncs(void **state)
{
	ftl_state_registry r;
	int calls = 0;
	job_state(&r);
	assert_int_equal(join_with(&r, &calls), FTL_OK);
	assert_true(calls > 1);
	ftl_state_free(&r);
}

static void test_one_more_buffer_is_refused_naming_it(void **state)
{
	ftl_state_registry r;
	job_state(&r);
	assert_int_equal(ftl_state_register_buffer(&r, "ballast", ballast, sizeof(ballast), false), 0);
	refused_saying(&r, (const char *[]){"3 buffers here, 2 in the job", "'ballast' (16 bytes)", NULL});
}

static void test_a_missing_buffer_is_refused_naming_it(void **state)
{
	ftl_state_registry r = {.backend = FTL_COMM_TCP};
	assert_int_equal(ftl_state_register_buffer(&r, "params", params, sizeof(params), false), 0);
	assert_int_equal(ftl_state_set_sampler(&r, 20000, 16, 7), 0);
	refused_saying(&r, (const char *[]){"1 buffers here, 2 in the job", "the job registers buffer 'momentum'", NULL});
}

static void test_another_size_is_refused_naming_both(void **state)
{
	ftl_state_registry r;
	job_state(&r);
	r.buffers[1].bytes = 32;
	refused_saying(&r, (const char *[]){"buffer 'momentum' is 32 bytes here but 64 in the job", NULL});
}

static void test_another_name_is_refused_naming_it(void **state)
{
	ftl_state_registry r;
	job_state(&r);
	snprintf(r.buffers[1].name, sizeof(r.buffers[1].name), "velocity");
	refused_saying(&r, (const char *[]){"'velocity'", "not in the job", NULL});
}

static void test_another_order_is_refused(void **state)
{
	ftl_state_registry r;
	job_state(&r);
	ftl_buffer_reg first = r.buffers[0];
	r.buffers[0] = r.buffers[1];
	r.buffers[1] = first;
	refused_saying(&r, (const char *[]){"another order", "buffer 0 is 'momentum' here, 'params' in the job", NULL});
}

static void test_another_sampler_is_refused_naming_the_setting(void **state)
{
	ftl_state_registry r;
	job_state(&r);
	r.batch_per_rank = 32;
	refused_saying(&r, (const char *[]){"the sampler's batch per rank is 32 here but 16 in the job", NULL});
}

static void test_another_sampler_order_is_refused_naming_both(void **state)
{
	ftl_state_registry r;
	job_state(&r);
	r.order = FTL_SAMPLER_CONTIGUOUS;
	refused_saying(&r, (const char *[]){"the sampler's order is contiguous here but shuffle in the job", NULL});
}

/* The rebalance policy deals the global batch by weights every rank computes alike: a worker without it
 * (an older ftl packs 0 in its place) is refused, and the reproducible bit beside it still reads right. */
static void test_another_slow_policy_is_refused_naming_it(void **state)
{
	ftl_state_registry r;
	job_state(&r);
	r.is_rebalanced = true;
	refused_saying(&r, (const char *[]){"FTL_SLOW_POLICY=rebalance here but not in the job", "0.4.5", NULL});
	job_state(&r);
	r.is_rebalanced = true;
	r.batch.is_reproducible = true;
	r.batch.global_batch = 64;
	r.batch.max_batch_per_rank = 8;
	refused_saying(&r, (const char *[]){"FTL_SLOW_POLICY=rebalance here", NULL});
	job_state(&r);
	r.batch.is_reproducible = true;
	refused_saying(&r, (const char *[]){"FTL_REPRODUCIBLE=1 here but 0, 0, 0 in the job", NULL});
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_joiner_like_the_job_syncs),
		cmocka_unit_test(test_one_more_buffer_is_refused_naming_it),
		cmocka_unit_test(test_a_missing_buffer_is_refused_naming_it),
		cmocka_unit_test(test_another_size_is_refused_naming_both),
		cmocka_unit_test(test_another_name_is_refused_naming_it),
		cmocka_unit_test(test_another_order_is_refused),
		cmocka_unit_test(test_another_sampler_is_refused_naming_the_setting),
		cmocka_unit_test(test_another_sampler_order_is_refused_naming_both),
		cmocka_unit_test(test_another_slow_policy_is_refused_naming_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
