/* One ftl_execute at a time per agent (issue 24, item 6, for C callers): while a step runs, a second call
 * from another thread, or from inside the step itself, is refused with a sentence, and the running call
 * goes on and completes. A real agent on loopback, alone in its job (min_workers 1, no settle). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/older_layout.h"
#include <pthread.h>

#include "ftl/ftl.h"
#include "lone_agent.h"

typedef struct stepper {
	ftl_agent *a;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	bool is_in_step, may_finish;
	ftl_err nested;                  /* what ftl_execute returned when the step called it */
} stepper;

static ftl_err noop_step(void *ctx, const ftl_step_info *info) { return FTL_OK; }

/* Calls ftl_execute from inside itself, then waits until the test lets it finish. */
static ftl_err held_step(void *ctx, const ftl_step_info *info)
{
	stepper *s = ctx;
	s->nested = ftl_execute(s->a, noop_step, NULL);
	pthread_mutex_lock(&s->lock);
	s->is_in_step = true;
	pthread_cond_broadcast(&s->changed);
	while (!s->may_finish)
		pthread_cond_wait(&s->changed, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return FTL_OK;
}

static void *run_held(void *arg)
{
	stepper *s = arg;
	return (void *)(intptr_t)ftl_execute(s->a, held_step, s);
}

static void test_a_second_execute_is_refused_while_one_runs(void **state)
{
	char run_dir[] = "/tmp/ftl-execute-once-XXXXXX";
	assert_non_null(mkdtemp(run_dir));
	stepper s = {.a = ftl_test_lone_agent("once", run_dir), .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
	assert_int_equal(ftl_execute(s.a, noop_step, NULL), FTL_OK); /* the view exists: the next step runs at once */
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, run_held, &s), 0);
	pthread_mutex_lock(&s.lock);
	while (!s.is_in_step)
		pthread_cond_wait(&s.changed, &s.lock);
	pthread_mutex_unlock(&s.lock);
	assert_int_equal(s.nested, FTL_ERR_INVALID); /* from inside the step */
	assert_int_equal(ftl_execute(s.a, noop_step, NULL), FTL_ERR_INVALID); /* from another thread */
	assert_non_null(strstr(ftl_error_message(), "one ftl_execute at a time per agent"));
	pthread_mutex_lock(&s.lock);
	s.may_finish = true;
	pthread_cond_broadcast(&s.changed);
	pthread_mutex_unlock(&s.lock);
	void *rc;
	pthread_join(th, &rc);
	assert_int_equal((ftl_err)(intptr_t)rc, FTL_OK); /* the running call was not disturbed */
	ftl_job_status job = {.struct_size = sizeof job};
	assert_int_equal(ftl_get_job_status(s.a, &job), FTL_OK);
	assert_int_equal(job.step, 2);
	/* both output structs of an agent as a program built against 0.3.2 has them (tests/older_layout.h) */
	struct {
		struct {
			size_t struct_size;
			uint64_t step, view_epoch;
			int rank, world_size;
			uint64_t views_seen, retries, data_epoch;
		} s;
		unsigned char guard[OLDER_LAYOUT_GUARD];
	} job_0_3_2;
	older_layout_prepare(&job_0_3_2, sizeof job_0_3_2.s);
	assert_int_equal(ftl_get_job_status(s.a, (ftl_job_status *)&job_0_3_2), FTL_OK);
	assert_int_equal(job_0_3_2.s.step, 2);
	assert_int_equal(job_0_3_2.s.world_size, 1);
	assert_true(older_layout_guard_is_untouched(&job_0_3_2, sizeof job_0_3_2.s));
	struct {
		struct {
			size_t struct_size;
			uint32_t alive, suspect, dead, left;
		} s;
		unsigned char guard[OLDER_LAYOUT_GUARD];
	} counts_0_3_2;
	older_layout_prepare(&counts_0_3_2, sizeof counts_0_3_2.s);
	assert_int_equal(ftl_agent_get_counts(s.a, (ftl_agent_counts *)&counts_0_3_2), FTL_OK);
	assert_int_equal(counts_0_3_2.s.alive, 1);
	assert_int_equal(counts_0_3_2.s.dead, 0);
	assert_true(older_layout_guard_is_untouched(&counts_0_3_2, sizeof counts_0_3_2.s));
	ftl_job_status unset = {0}; /* struct_size never set: refused, nothing written (not a silent zero step) */
	assert_int_equal(ftl_get_job_status(s.a, &unset), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "set struct_size = sizeof(ftl_job_status)"));
	assert_int_equal(unset.step, 0);
	assert_int_equal(ftl_execute(s.a, noop_step, NULL), FTL_OK); /* and the agent takes calls again */
	ftl_agent_delete(s.a);
	rmdir(run_dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_second_execute_is_refused_while_one_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
