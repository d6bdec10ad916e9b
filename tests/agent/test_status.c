/* ftl_agent_status: the status `ftlctl status --json` shows, asked from another thread of the process
 * (the Python package's Agent.status()): the loop builds it, the caller gets it whole; a buffer too small
 * is told the size needed and gets nothing; callers on several threads at once each get an answer; an
 * agent that is not running refuses with a sentence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>

#include "ftl/ftl.h"
#include "lone_agent.h"

/* The status as JSON, asked with a buffer of the size it needs. */
static json_t *status_of(ftl_agent *a)
{
	char small[8];
	size_t len = 0;
	assert_int_equal(ftl_agent_status(a, small, sizeof small, &len, 10000), FTL_ERR_INVALID);
	assert_true(len > sizeof small);
	assert_non_null(strstr(ftl_error_message(), "call again with a larger one"));
	size_t cap = len + 4096; /* the status may have grown since */
	char *text = malloc(cap);
	assert_int_equal(ftl_agent_status(a, text, cap, &len, 10000), FTL_OK);
	assert_int_equal(strlen(text), len);
	json_t *status = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(status);
	return status;
}

static void *ask_often(void *arg)
{
	ftl_agent *a = arg;
	static __thread char mine[1 << 16];
	for (int i = 0; i < 20; i++) {
		size_t len;
		if (ftl_agent_status(a, mine, sizeof mine, &len, 10000) != FTL_OK || mine[0] != '{')
			return (void *)1;
	}
	return NULL;
}

static void test_the_status_comes_whole_to_any_thread(void **state)
{
	char run_dir[] = "/tmp/ftl-status-XXXXXX";
	assert_non_null(mkdtemp(run_dir));
	ftl_agent *a = ftl_test_lone_agent("st", run_dir);
	json_t *status = status_of(a);
	assert_true(json_is_true(json_object_get(status, "ok")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(status, "self"), "name")), "st");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(status, "counts"), "alive")), 1);
	json_decref(status);

	pthread_t askers[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&askers[i], NULL, ask_often, a);
	for (int i = 0; i < 4; i++) {
		void *failed;
		pthread_join(askers[i], &failed);
		assert_null(failed);
	}

	ftl_agent_stop(a);
	char buf[64];
	size_t len = 99;
	assert_int_equal(ftl_agent_status(a, buf, sizeof buf, &len, 1000), FTL_ERR_INVALID);
	assert_int_equal(len, 0);
	assert_non_null(strstr(ftl_error_message(), "not started"));
	ftl_agent_delete(a);
	rmdir(run_dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_status_comes_whole_to_any_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
