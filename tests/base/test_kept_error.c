/* base/kept_error.c: a kept error holds a code and its message until replaced or cleared, takes the calling
 * thread's diag and gives it back to another thread's diag, and may quote itself. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/kept_error.h"

static void test_set_keeps_code_and_message_and_returns_the_code(void **state)
{
	ftl_kept_error k = {0};
	assert_int_equal(ftl_kept_error_set(&k, FTL_ERR_PEER_LOST, "peer rank %d lost", 2), FTL_ERR_PEER_LOST);
	assert_int_equal(k.code, FTL_ERR_PEER_LOST);
	assert_string_equal(k.message, "peer rank 2 lost");
	ftl_kept_error_set(&k, FTL_ERR_PEER_LOST, "state sync: %s", k.message);
	assert_string_equal(k.message, "state sync: peer rank 2 lost");
	ftl_kept_error_clear(&k);
	assert_int_equal(k.code, FTL_OK);
	assert_string_equal(k.message, "");
}

static void *read_on_another_thread(void *arg)
{
	ftl_diag_clear();
	ftl_kept_error_to_diag(arg);
	return NULL;
}

static void test_it_moves_from_one_threads_diag_to_anothers(void **state)
{
	ftl_kept_error k = {0};
	ftl_diag_set(FTL_ERR_TIMEOUT, "allreduce: rank 3 did not answer in 5000 ms");
	assert_int_equal(ftl_kept_error_from_diag(&k), FTL_ERR_TIMEOUT);
	ftl_diag_clear(); /* the failing thread goes on; the kept copy stays */
	assert_string_equal(k.message, "allreduce: rank 3 did not answer in 5000 ms");
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, read_on_another_thread, &k), 0);
	pthread_join(t, NULL);
	assert_int_equal(ftl_kept_error_to_diag(&k), FTL_ERR_TIMEOUT);
	assert_string_equal(ftl_diag_message(), k.message);
}

static void test_a_long_message_is_cut_not_overrun(void **state)
{
	char big[3 * FTL_DIAG_MSG_MAX];
	memset(big, 'b', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ftl_kept_error k = {0};
	ftl_kept_error_set(&k, FTL_ERR_INVALID, "%s", big);
	assert_int_equal(strlen(k.message), sizeof k.message - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_keeps_code_and_message_and_returns_the_code),
		cmocka_unit_test(test_it_moves_from_one_threads_diag_to_anothers),
		cmocka_unit_test(test_a_long_message_is_cut_not_overrun),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
