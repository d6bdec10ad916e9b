/* Who goes when too many strangers are connected (agent/admission.h), as a pure queue: the oldest goes
 * for a newcomer, a full source loses its own oldest, nobody goes before two loop turns, past the hard
 * cap the next connection waits, and the caps fit the descriptor limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h>

#include "agent/admission.h"

static struct sockaddr_in from(const char *ip)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(40000)};
	inet_pton(AF_INET, ip, &sa.sin_addr);
	return sa;
}

#define SA(x) ((const struct sockaddr *)&(x))

static void test_the_oldest_goes_for_a_newcomer_never_the_newest(void **state)
{
	ftl_admit_queue q = {0};
	ftl_admit_entry e[4] = {0};
	ftl_admit_limits lim = {.total = 3, .per_source = 0, .hard = 6};
	struct sockaddr_in a = from("127.0.0.2"), b = from("127.0.0.3");
	for (int i = 0; i < 3; i++) {
		assert_null(ftl_admit_victim(&q, SA(a), &lim, 10 + i));
		ftl_admit_push(&q, &e[i], i % 2 ? SA(b) : SA(a), 10 + i);
	}
	assert_ptr_equal(ftl_admit_victim(&q, SA(b), &lim, 20), &e[0]);
	ftl_admit_remove(&q, &e[0]);
	ftl_admit_push(&q, &e[3], SA(b), 20);
	assert_ptr_equal(ftl_admit_victim(&q, SA(b), &lim, 21), &e[1]);
	ftl_admit_remove(&q, &e[2]); /* proved itself: leaves from the middle */
	assert_int_equal(q.len, 2);
	assert_null(ftl_admit_victim(&q, SA(b), &lim, 21));
	ftl_admit_remove(&q, &e[2]); /* twice: nothing */
	assert_int_equal(q.len, 2);
}

static void test_a_full_source_loses_its_own_oldest(void **state)
{
	ftl_admit_queue q = {0};
	ftl_admit_entry e[4] = {0};
	ftl_admit_limits lim = {.total = 10, .per_source = 2, .hard = 20};
	struct sockaddr_in peer = from("10.0.0.1"), flood = from("10.0.0.9");
	ftl_admit_push(&q, &e[0], SA(peer), 1);
	ftl_admit_push(&q, &e[1], SA(flood), 2);
	ftl_admit_push(&q, &e[2], SA(flood), 3);
	assert_ptr_equal(ftl_admit_victim(&q, SA(flood), &lim, 9), &e[1]);
	assert_null(ftl_admit_victim(&q, SA(peer), &lim, 9)); /* the peer's source is not full */
	struct sockaddr_in6 mapped = {.sin6_family = AF_INET6};
	inet_pton(AF_INET6, "::ffff:10.0.0.9", &mapped.sin6_addr);
	assert_ptr_equal(ftl_admit_victim(&q, SA(mapped), &lim, 9), &e[1]); /* the same address */
}

static void test_nobody_goes_before_two_turns_and_past_the_hard_cap_the_next_waits(void **state)
{
	ftl_admit_queue q = {0};
	ftl_admit_entry e[4] = {0};
	ftl_admit_limits lim = {.total = 2, .per_source = 0, .hard = 4};
	struct sockaddr_in a = from("127.0.0.2");
	for (int i = 0; i < 4; i++) /* one turn's burst: all queued in turn 7 */
		ftl_admit_push(&q, &e[i], SA(a), 7);
	assert_null(ftl_admit_victim(&q, SA(a), &lim, 8)); /* not read yet: may not go */
	assert_true(ftl_admit_must_wait(&q, &lim, 8));     /* ... and the hard cap is reached */
	ftl_admit_remove(&q, &e[3]);
	assert_false(ftl_admit_must_wait(&q, &lim, 8)); /* over the cap, under the hard cap: let in */
	assert_null(ftl_admit_victim(&q, SA(a), &lim, 8));
	ftl_admit_push(&q, &e[3], SA(a), 8);
	assert_false(ftl_admit_must_wait(&q, &lim, 9)); /* two turns on, the oldest may go */
	assert_ptr_equal(ftl_admit_victim(&q, SA(a), &lim, 9), &e[0]);
}

static void test_the_caps_fit_the_descriptor_limit(void **state)
{
	struct rlimit saved, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	low = saved;
	low.rlim_cur = 200;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	ftl_admit_limits lim = ftl_admit_limits_fitted(256, 64, 1024, 4);
	assert_int_equal(lim.hard, 50);  /* a quarter of 200 descriptors */
	assert_int_equal(lim.total, 25); /* half of them left for connections too young to go */
	assert_int_equal(lim.per_source, 25);
	lim = ftl_admit_limits_fitted(64, 0, 0, 16);
	assert_int_equal(lim.hard, 12);
	assert_int_equal(lim.total, 12);
	assert_int_equal(lim.per_source, 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	if (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur >= 4 * 1280) {
		lim = ftl_admit_limits_fitted(256, 64, 1024, 4);
		assert_int_equal(lim.hard, 1280);
		assert_int_equal(lim.total, 256);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_oldest_goes_for_a_newcomer_never_the_newest),
		cmocka_unit_test(test_a_full_source_loses_its_own_oldest),
		cmocka_unit_test(test_nobody_goes_before_two_turns_and_past_the_hard_cap_the_next_waits),
		cmocka_unit_test(test_the_caps_fit_the_descriptor_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
