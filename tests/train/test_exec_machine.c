/* ftl_execute's state machine (train/exec_machine.c) driven by a scripted view feed, a fake comm factory
 * and a virtual clock: no process, no socket, no sleep. Each test states one promise; the last checks that
 * the tests before it took every transition the machine declares, and no other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "train/exec_machine.h"
#include "fake_comm.h"
#include "base/log.h"

/* ---- the scripted view feed ---- */

typedef struct script_view {
	uint64_t seq;                /* 0: the wait fails with `error` */
	int rank;
	uint32_t n;
	ftl_err error;
	int64_t advance_us;          /* the virtual clock moves this much while waiting */
} script_view;

typedef struct fake_feed {
	int64_t now_us;
	const script_view *script;
	int n_script, next;
	uint64_t newest;             /* is_newest(seq) answers seq == newest */
	ftl_abandoned_view seen_ab;  /* what the machine was waiting out at the last wait */
	int syncs, steppings, retries;
	uint64_t lineage_steps;      /* what lineage_steps answers for lineage 1 */
	int leaves;
} fake_feed;

static ftl_err feed_wait(void *ctx, ftl_abandoned_view *ab, ftl_rdv_view *w)
{
	fake_feed *f = ctx;
	f->seen_ab = *ab;
	assert_true(f->next < f->n_script); /* the machine asked for a view the test did not script */
	const script_view *s = &f->script[f->next++];
	f->now_us += s->advance_us;
	if (!s->seq)
		return ftl_diag_set(s->error, "scripted: the wait ends with %s", ftl_strerror(s->error));
	assert_true(s->seq != ab->seq); /* a feed never hands back the abandoned view */
	free(w->members);
	w->members = calloc(s->n, sizeof(*w->members));
	w->seq = s->seq;
	w->epoch = s->seq * 10;
	w->lineage = 1;
	w->self_rank = s->rank;
	w->n = s->n;
	f->newest = s->seq;
	return FTL_OK;
}

static bool feed_is_newest(void *ctx, uint64_t seq) { return ((fake_feed *)ctx)->newest == seq; }
static int64_t feed_now_us(void *ctx) { return ((fake_feed *)ctx)->now_us; }

static void feed_stepping(void *ctx, const ftl_rdv_view *w, uint64_t step, bool is_retry)
{
	fake_feed *f = ctx;
	f->steppings++;
	f->retries += is_retry;
}

static void feed_synced(void *ctx, const ftl_rdv_view *w, uint64_t bytes, int64_t took_us) { ((fake_feed *)ctx)->syncs++; }

static void feed_leave(void *ctx, const char *why) { ((fake_feed *)ctx)->leaves++; }

static uint64_t feed_lineage_steps(void *ctx, uint64_t lineage)
{
	return lineage == 1 ? ((fake_feed *)ctx)->lineage_steps : 0;
}

static const ftl_view_feed_ops fake_feed_ops = {
	.wait = feed_wait,
	.is_newest = feed_is_newest,
	.now_us = feed_now_us,
	.stepping = feed_stepping,
	.synced = feed_synced,
	.leave = feed_leave,
	.lineage_steps = feed_lineage_steps,
};

/* ---- the fake comm factory ---- */

typedef struct fake_factory {
	ftl_err build_error;         /* what the next failing_builds builds fail with */
	int failing_builds;
	ftl_err sync_error;          /* the first collective on the next pair built fails with this (once) */
	int builds, drops, destroyed;
	ftl_comm_pair held;
} fake_factory;

static void factory_drop(void *ctx)
{
	fake_factory *f = ctx;
	f->drops++;
	if (f->held.ctrl != f->held.data)
		ftl_comm_delete(f->held.ctrl);
	ftl_comm_delete(f->held.data);
	f->held = (ftl_comm_pair){0};
}

static ftl_err factory_build(void *ctx, const ftl_rdv_view *w, ftl_comm_pair *out)
{
	fake_factory *f = ctx;
	f->builds++;
	assert_null(f->held.data); /* the machine drops the old pair before it builds a new one */
	if (f->failing_builds > 0) {
		f->failing_builds--;
		return ftl_diag_set(f->build_error, "scripted: the build fails with %s", ftl_strerror(f->build_error));
	}
	fake_comm *c = fake_comm_new(FTL_COMM_TCP, w->self_rank, (int)w->n);
	c->destroyed = &f->destroyed;
	c->fail_next = f->sync_error;
	f->sync_error = FTL_OK;
	f->held = (ftl_comm_pair){&c->base, &c->base};
	*out = f->held;
	return FTL_OK;
}

static const ftl_comm_factory_ops fake_factory_ops = {.build = factory_build, .drop = factory_drop};

/* ---- checkpoints that fail to resume ---- */

static ftl_err resume_refuses(void *ctx, ftl_state_registry *r)
{
	return ftl_diag_set(FTL_ERR_INVALID, "scripted: none of the checkpoints loads");
}

static void after_step_nothing(void *ctx, ftl_state_registry *r, uint64_t epoch, uint32_t world) {}

static const ftl_exec_checkpoint_ops refusing_checkpoints = {.resume = resume_refuses, .after_step = after_step_nothing};

/* ---- checkpoints of which there are none yet: the resume loads nothing (has_state stays false, as in
 * checkpoint.c), and the machine starts the job unless it has done steps ---- */

static ftl_err resume_finds_none(void *ctx, ftl_state_registry *r)
{
	(void)ctx;
	(void)r;
	return FTL_OK;
}

static const ftl_exec_checkpoint_ops empty_checkpoints = {.resume = resume_finds_none, .after_step = after_step_nothing};

/* ---- the step ---- */

typedef struct fake_step {
	const ftl_err *results;      /* per run; past the end: FTL_OK */
	int n_results, runs;
	int last_attempt;
	ftl_step_info last_info;     /* indices point into the registry: valid until the next step */
} fake_step;

static ftl_err step_fn(void *ctx, const ftl_step_info *info)
{
	fake_step *s = ctx;
	s->last_attempt = info->attempt;
	s->last_info = *info;
	return s->runs < s->n_results ? s->results[s->runs++] : (s->runs++, FTL_OK);
}

/* ---- the rig: one machine with its fakes, and the transitions taken ---- */

static int seen[FTL_EXEC_STATE_MAX][FTL_EXEC_STATE_MAX]; /* across every test of this file */

typedef struct rig {
	ftl_exec m;
	ftl_state_registry reg;
	fake_feed feed;
	fake_factory factory;
	fake_step step;
	float params[8];
} rig;

static const ftl_exec_retry_policy policy = {
	.max_retries = 2,
	.setup_grace_us = 30 * 1000000LL,
	.step_failure_rebuild_us = 3 * 1000000LL,
	.setup_failure_rebuild_us = 250 * 1000LL,
};

static rig *rig_new(const script_view *script, int n_script, const ftl_exec_retry_policy *p)
{
	rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	assert_int_equal(ftl_state_register_buffer(&r->reg, "params", r->params, sizeof(r->params), false), FTL_OK);
	r->feed = (fake_feed){.now_us = 1000000, .script = script, .n_script = n_script};
	ftl_exec_create(&r->m, p ? p : &policy, &r->reg, ftl_logger_stderr());
	ftl_exec_set_feed(&r->m, &fake_feed_ops, &r->feed);
	ftl_exec_set_factory(&r->m, &fake_factory_ops, &r->factory);
	return r;
}

static void rig_delete(rig *r)
{
	factory_drop(&r->factory);
	ftl_exec_destroy(&r->m);
	ftl_state_free(&r->reg);
	free(r);
}

/* One ftl_execute call, a transition at a time; every transition is checked against the declared ones. */
static ftl_err run_call(rig *r, const ftl_err *results, int n_results)
{
	r->step = (fake_step){.results = results, .n_results = n_results};
	ftl_exec_state before = ftl_exec_get_state(&r->m);
	ftl_exec_begin(&r->m, step_fn, &r->step);
	for (;;) {
		ftl_exec_state now = ftl_exec_get_state(&r->m);
		assert_true(ftl_exec_is_transition(before, now));
		seen[before][now]++;
		before = now;
		if (!ftl_exec_advance(&r->m))
			break;
	}
	return r->m.result;
}

/* ---- the promises ---- */

static void test_first_step_builds_syncs_and_runs(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 1, NULL);
	assert_int_equal(ftl_exec_get_state(&r->m), FTL_EXEC_IDLE);
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	assert_int_equal(ftl_exec_get_state(&r->m), FTL_EXEC_IDLE);
	assert_int_equal(r->factory.builds, 1);
	assert_int_equal(r->feed.syncs, 1);
	assert_int_equal(r->reg.step, 1);
	assert_true(r->reg.has_state);
	rig_delete(r);
}

static void test_steady_state_step_skips_build_and_sync(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 2}, {.seq = 1, .rank = 0, .n = 2}};
	rig *r = rig_new(views, 2, NULL);
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	assert_int_equal(r->factory.builds, 1);
	assert_int_equal(r->feed.syncs, 1);
	assert_int_equal(r->reg.step, 2);
	rig_delete(r);
}

static void test_failed_step_backs_off_and_retries_in_the_next_view(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 2}, {.seq = 2, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 2, NULL);
	const ftl_err results[] = {FTL_ERR_PEER_LOST};
	int64_t failed_at = r->feed.now_us;
	assert_int_equal(run_call(r, results, 1), FTL_OK);
	/* view 1 was abandoned, its members to be asked for again after the step-failure grace */
	assert_int_equal(r->feed.seen_ab.seq, 1);
	assert_true(r->feed.seen_ab.rebuild_at_us == failed_at + policy.step_failure_rebuild_us);
	assert_int_equal(r->factory.builds, 2);
	assert_int_equal(r->factory.destroyed, 1);
	assert_int_equal(r->feed.syncs, 2); /* everyone re-syncs from rank 0 after a failed step */
	assert_int_equal(r->step.runs, 2);
	assert_int_equal(r->step.last_attempt, 1);
	assert_int_equal(r->feed.retries, 1);
	assert_int_equal(r->m.failures, 1);
	assert_int_equal(r->reg.step, 1);
	rig_delete(r);
}

static void test_failed_build_of_a_view_in_flux_spends_no_retry(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 1, .n = 2}, {.seq = 2, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 2, &(ftl_exec_retry_policy){.max_retries = 0, .setup_grace_us = 1000000,
							      .setup_failure_rebuild_us = 250000});
	r->factory.build_error = FTL_ERR_PEER_LOST;
	r->factory.failing_builds = 1;
	int64_t failed_at = r->feed.now_us;
	assert_int_equal(run_call(r, NULL, 0), FTL_OK); /* max_retries 0: one counted failure would end it */
	assert_int_equal(r->m.failures, 0);
	assert_int_equal(r->feed.seen_ab.seq, 1);
	assert_true(r->feed.seen_ab.rebuild_at_us == failed_at + 250000);
	assert_int_equal(r->factory.builds, 2);
	assert_int_equal(r->reg.step, 1);
	rig_delete(r);
}

static void test_build_that_keeps_failing_on_the_newest_view_spends_retries(void **state)
{
	/* The same members come back under new views, each as the newest, past the grace: a persistent fault. */
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 2}, {.seq = 2, .rank = 0, .n = 2, .advance_us = 2000000}};
	rig *r = rig_new(views, 2, &(ftl_exec_retry_policy){.max_retries = 0, .setup_grace_us = 1000000});
	r->factory.build_error = FTL_ERR_TIMEOUT;
	r->factory.failing_builds = 2;
	assert_int_equal(run_call(r, NULL, 0), FTL_ERR_TIMEOUT);
	assert_int_equal(ftl_exec_get_state(&r->m), FTL_EXEC_FAILED);
	assert_non_null(strstr(r->m.last_error.message, "FTL_MAX_RETRIES=0"));
	assert_non_null(strstr(r->m.last_error.message, "scripted: the build fails"));
	assert_int_equal(r->factory.builds, 2);
	rig_delete(r);
}

static void test_build_error_that_is_not_about_a_peer_fails_at_once(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 1}, {.seq = 1, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 2, NULL);
	r->factory.build_error = FTL_ERR_SYSTEM;
	r->factory.failing_builds = 1;
	assert_int_equal(run_call(r, NULL, 0), FTL_ERR_SYSTEM);
	assert_int_equal(ftl_exec_get_state(&r->m), FTL_EXEC_FAILED);
	assert_int_equal(r->factory.builds, 1);
	/* the next call starts over from failed */
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	rig_delete(r);
}

static void test_failed_state_sync_backs_off(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 1, .n = 2}, {.seq = 2, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 2, NULL);
	r->factory.sync_error = FTL_ERR_PEER_LOST; /* the header broadcast of view 1 fails */
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	assert_int_equal(r->feed.seen_ab.seq, 1);
	assert_int_equal(r->m.failures, 0);
	assert_int_equal(r->factory.builds, 2);
	assert_int_equal(r->factory.destroyed, 1);
	assert_int_equal(r->feed.syncs, 1);
	rig_delete(r);
}

static void test_checkpoint_that_cannot_resume_stops_the_job(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 1, NULL);
	ftl_exec_set_checkpoints(&r->m, &refusing_checkpoints, NULL);
	assert_int_equal(run_call(r, NULL, 0), FTL_ERR_INVALID);
	assert_int_equal(ftl_exec_get_state(&r->m), FTL_EXEC_FAILED);
	assert_string_equal(r->m.last_error.message, "scripted: none of the checkpoints loads");
	assert_string_equal(ftl_diag_message(), r->m.last_error.message); /* the calling thread's diag says it too */
	assert_int_equal(r->step.runs, 0);
	rig_delete(r);
}

/* A spare promoted once the job's workers left at its end (or died): rank 0, no state, no checkpoint, and the
 * job has done steps. It trains nothing from step 0; it leaves and says so. */
static void test_rank_0_without_the_state_of_a_job_that_has_steps_leaves_instead_of_starting_over(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 1, NULL);
	r->feed.lineage_steps = 61;
	assert_int_equal(run_call(r, NULL, 0), FTL_ERR_STATE_LOST);
	assert_int_equal(ftl_exec_get_state(&r->m), FTL_EXEC_FAILED);
	assert_int_equal(r->step.runs, 0);
	assert_int_equal(r->reg.step, 0);
	assert_int_equal(r->feed.leaves, 1);
	assert_non_null(strstr(r->m.last_error.message, "the job's state is gone: it has done 61 steps"));
	assert_null(r->factory.held.data); /* its communicators went before it left */
	rig_delete(r);

	/* the same with checkpoints, none of which holds the job */
	r = rig_new(views, 1, NULL);
	ftl_exec_set_checkpoints(&r->m, &empty_checkpoints, NULL);
	r->feed.lineage_steps = 61;
	assert_int_equal(run_call(r, NULL, 0), FTL_ERR_STATE_LOST);
	assert_int_equal(r->step.runs, 0);
	assert_int_equal(r->feed.leaves, 1);
	rig_delete(r);

	/* a job that has done no step yet is started, as always */
	r = rig_new(views, 1, NULL);
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	assert_int_equal(r->feed.leaves, 0);
	assert_int_equal(r->reg.step, 1);
	rig_delete(r);
}

static void test_step_error_that_is_not_about_a_peer_fails_at_once(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 1}};
	rig *r = rig_new(views, 1, NULL);
	const ftl_err results[] = {FTL_ERR_INVALID};
	assert_int_equal(run_call(r, results, 1), FTL_ERR_INVALID);
	assert_int_equal(r->step.runs, 1);
	assert_int_equal(r->reg.step, 0);
	rig_delete(r);
}

static void test_retries_are_spent_then_the_step_fails(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 0, .n = 2}, {.seq = 2, .rank = 0, .n = 2}, {.seq = 3, .rank = 0, .n = 2}};
	rig *r = rig_new(views, 3, NULL);
	const ftl_err results[] = {FTL_ERR_PEER_LOST, FTL_ERR_ABORTED, FTL_ERR_TIMEOUT};
	assert_int_equal(run_call(r, results, 3), FTL_ERR_TIMEOUT);
	assert_int_equal(r->step.runs, 3);
	assert_non_null(strstr(r->m.last_error.message, "failed 3 times (FTL_MAX_RETRIES=2)"));
	assert_int_equal(r->reg.step, 0);
	rig_delete(r);
}

static void test_wait_that_ends_fails_the_call(void **state)
{
	const script_view views[] = {{.seq = 0, .error = FTL_ERR_PEER_LOST}};
	rig *r = rig_new(views, 1, NULL);
	assert_int_equal(run_call(r, NULL, 0), FTL_ERR_PEER_LOST);
	assert_int_equal(ftl_exec_get_state(&r->m), FTL_EXEC_FAILED);
	assert_non_null(strstr(r->m.last_error.message, "scripted: the wait ends"));
	assert_int_equal(r->factory.builds, 0);
	rig_delete(r);
}

/* A fixed global batch: the step's info holds this rank's even share of the same global batch at every
 * world size, and a step moves the sampler by the global batch, not by world x batch_per_rank. */
static void test_fixed_global_batch_cuts_each_step_the_same_at_any_world_size(void **state)
{
	const script_view views[] = {{.seq = 1, .rank = 1, .n = 3}, {.seq = 2, .rank = 1, .n = 2}};
	rig *r = rig_new(views, 2, NULL);
	assert_int_equal(ftl_state_set_sampler(&r->reg, 1000, 4, 7), 0);
	r->reg.batch = (ftl_batch_config){.global_batch = 10};
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	const ftl_step_info *info = &r->step.last_info;
	assert_int_equal(info->global_batch, 10);
	assert_int_equal(info->n_indices, 3); /* 10 on 3 ranks: 4, 3, 3 */
	assert_int_equal(r->reg.sample_pos, 10);
	assert_int_equal(run_call(r, NULL, 0), FTL_OK);
	assert_int_equal(info->sample_pos, 10);
	assert_int_equal(info->n_indices, 5); /* 10 on 2 ranks: 5, 5 */
	assert_int_equal(r->reg.sample_pos, 20);
	rig_delete(r);
}

static void test_every_declared_transition_was_taken(void **state)
{
	int declared = 0;
	for (int from = 0; from < FTL_EXEC_STATE_MAX; from++) {
		for (int to = 0; to < FTL_EXEC_STATE_MAX; to++) {
			if (!ftl_exec_is_transition((ftl_exec_state)from, (ftl_exec_state)to))
				continue;
			declared++;
			if (!seen[from][to])
				fail_msg("transition %s -> %s is declared but no test took it", ftl_exec_state_strs[from],
					 ftl_exec_state_strs[to]);
		}
	}
	assert_int_equal(declared, 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_step_builds_syncs_and_runs),
		cmocka_unit_test(test_steady_state_step_skips_build_and_sync),
		cmocka_unit_test(test_failed_step_backs_off_and_retries_in_the_next_view),
		cmocka_unit_test(test_failed_build_of_a_view_in_flux_spends_no_retry),
		cmocka_unit_test(test_build_that_keeps_failing_on_the_newest_view_spends_retries),
		cmocka_unit_test(test_build_error_that_is_not_about_a_peer_fails_at_once),
		cmocka_unit_test(test_failed_state_sync_backs_off),
		cmocka_unit_test(test_checkpoint_that_cannot_resume_stops_the_job),
		cmocka_unit_test(test_rank_0_without_the_state_of_a_job_that_has_steps_leaves_instead_of_starting_over),
		cmocka_unit_test(test_step_error_that_is_not_about_a_peer_fails_at_once),
		cmocka_unit_test(test_retries_are_spent_then_the_step_fails),
		cmocka_unit_test(test_wait_that_ends_fails_the_call),
		cmocka_unit_test(test_fixed_global_batch_cuts_each_step_the_same_at_any_world_size),
		cmocka_unit_test(test_every_declared_transition_was_taken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
