/* base/diag.c: a failure leaves its code and reason on the calling thread only, set returns the code so a
 * failure is one statement, context can be put in front of a callee's reason, and errno survives. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/diag.h"

static ftl_err refuse_seeds(const char *value)
{
	return ftl_diag_set(FTL_ERR_INVALID, "FTL_SEEDS=%s: expected host:port", value);
}

static void test_set_returns_the_code_and_keeps_the_message(void **state)
{
	assert_int_equal(refuse_seeds("x"), FTL_ERR_INVALID);
	assert_int_equal(ftl_diag_code(), FTL_ERR_INVALID);
	assert_string_equal(ftl_diag_message(), "FTL_SEEDS=x: expected host:port");
	assert_int_equal(ftl_error_code(), FTL_ERR_INVALID);
	assert_string_equal(ftl_error_message(), ftl_diag_message());
	ftl_diag_clear();
	assert_int_equal(ftl_diag_code(), FTL_OK);
	assert_string_equal(ftl_diag_message(), "");
}

static void test_prefix_puts_context_in_front_and_keeps_the_code(void **state)
{
	ftl_diag_set(FTL_ERR_SYSTEM, "write: %s", "no space left on device");
	assert_int_equal(ftl_diag_prefix("checkpoint %s: ", "/ck/step-9"), FTL_ERR_SYSTEM);
	assert_string_equal(ftl_diag_message(), "checkpoint /ck/step-9: write: no space left on device");
}

static void test_the_message_may_quote_itself(void **state)
{
	ftl_diag_set(FTL_ERR_PEER_LOST, "peer rank 2 lost");
	ftl_diag_set(FTL_ERR_PEER_LOST, "state sync: %s", ftl_diag_message());
	assert_string_equal(ftl_diag_message(), "state sync: peer rank 2 lost");
}

static void test_a_long_message_is_cut_not_overrun(void **state)
{
	char big[3 * FTL_DIAG_MSG_MAX];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ftl_diag_set(FTL_ERR_INVALID, "%s", big);
	assert_int_equal(strlen(ftl_diag_message()), FTL_DIAG_MSG_MAX - 1);
	ftl_diag_prefix("%s", big);
	assert_int_equal(strlen(ftl_diag_message()), FTL_DIAG_MSG_MAX - 1);
}

static void test_setting_keeps_errno(void **state)
{
	errno = ECONNRESET;
	ftl_diag_set(FTL_ERR_SYSTEM, "send: %s", strerror(errno));
	assert_int_equal(errno, ECONNRESET);
}

static void *fail_on_another_thread(void *arg)
{
	ftl_diag_set(FTL_ERR_TIMEOUT, "the other thread's reason");
	return NULL;
}

static void test_each_thread_has_its_own_reason(void **state)
{
	ftl_diag_set(FTL_ERR_INVALID, "this thread's reason");
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, fail_on_another_thread, NULL), 0);
	pthread_join(t, NULL);
	assert_int_equal(ftl_diag_code(), FTL_ERR_INVALID);
	assert_string_equal(ftl_diag_message(), "this thread's reason");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_returns_the_code_and_keeps_the_message),
		cmocka_unit_test(test_prefix_puts_context_in_front_and_keeps_the_code),
		cmocka_unit_test(test_the_message_may_quote_itself),
		cmocka_unit_test(test_a_long_message_is_cut_not_overrun),
		cmocka_unit_test(test_setting_keeps_errno),
		cmocka_unit_test(test_each_thread_has_its_own_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
