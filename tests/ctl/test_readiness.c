/* The readiness rule of `ftlctl ready` (ctl/readiness.c), the Kubernetes readiness probe of a worker:
 * ready exactly when this member holds a rank in a committed view that has quorum. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ctl/readiness.h"

/* A STATUS reply for self "w1" with the given view (JSON text or "null") and w1's rank ("null" or N). */
static json_t *status_with(const char *view, const char *self_rank)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "{\"ok\":true,\"self\":{\"name\":\"w1\"},\"view\":%s,\"members\":["
		 "{\"name\":\"w0\",\"status\":\"alive\",\"rank\":0},"
		 "{\"name\":\"w1\",\"status\":\"alive\",\"rank\":%s}]}",
		 view, self_rank);
	json_t *status = json_loads(text, 0, NULL);
	assert_non_null(status);
	return status;
}

static void expect(const char *view, const char *self_rank, bool ready, const char *reason)
{
	char got[256];
	json_t *status = status_with(view, self_rank);
	assert_int_equal(ctl_readiness(status, false, got, sizeof got), ready);
	assert_string_equal(got, reason);
	json_decref(status);
}

static void test_member_with_a_rank_in_a_training_view_is_ready(void **state)
{
	expect("{\"epoch\":7,\"phase\":\"training\",\"world_size\":5}", "1", true,
	       "ready: rank 1 of 5 in view 7 (training)");
}

static void test_member_stays_ready_while_the_next_view_is_agreed(void **state)
{
	expect("{\"epoch\":7,\"phase\":\"rendezvous\",\"world_size\":5}", "1", true,
	       "ready: rank 1 of 5 in view 7 (rendezvous)");
}

static void test_minority_side_of_a_partition_is_not_ready(void **state)
{
	expect("{\"epoch\":7,\"phase\":\"waiting for quorum\",\"world_size\":5}", "1", false,
	       "not ready: waiting for quorum (rank 1 of 5 in view 7)");
}

static void test_joiner_and_hot_spare_without_a_rank_are_not_ready(void **state)
{
	expect("{\"epoch\":7,\"phase\":\"rendezvous\",\"world_size\":5}", "null", false,
	       "not ready: not a member of view 7 (rendezvous)");
	expect("{\"epoch\":7,\"phase\":\"hot spare\",\"world_size\":5}", "null", false,
	       "not ready: not a member of view 7 (hot spare)");
}

static void test_before_the_first_view_is_not_ready(void **state)
{
	expect("{\"epoch\":0,\"phase\":\"waiting for workers\",\"world_size\":0}", "null", false,
	       "not ready: no view committed yet (waiting for workers)");
}

static void test_agent_without_training_is_not_ready(void **state)
{
	expect("null", "null", false, "not ready: this agent runs no training job (no view)");
}

static void test_malformed_reply_is_not_ready(void **state)
{
	char got[256];
	json_t *empty = json_object();
	assert_false(ctl_readiness(empty, false, got, sizeof got));
	assert_non_null(strstr(got, "not ready"));
	json_decref(empty);
	expect("{\"epoch\":\"seven\"}", "1", false, "not ready: no view committed yet (?)");
}

/* `ftlctl ready --spares`: a hot spare of a committed view counts as ready (so a PodDisruptionBudget does
 * not count it as disrupted and `kubectl drain` goes on); a joiner, the minority side and a node before
 * the first view still do not. */
static void test_hot_spare_is_ready_with_spares_so_drain_is_not_blocked(void **state)
{
	struct { const char *view, *rank; bool ready; } cases[] = {
		{"{\"epoch\":7,\"phase\":\"hot spare\",\"world_size\":5}", "null", true},
		{"{\"epoch\":7,\"phase\":\"training\",\"world_size\":5}", "1", true},
		{"{\"epoch\":7,\"phase\":\"rendezvous\",\"world_size\":5}", "null", false},
		{"{\"epoch\":7,\"phase\":\"waiting for quorum\",\"world_size\":5}", "1", false},
		{"{\"epoch\":0,\"phase\":\"hot spare\",\"world_size\":0}", "null", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char got[256];
		json_t *status = status_with(cases[i].view, cases[i].rank);
		assert_int_equal(ctl_readiness(status, true, got, sizeof got), cases[i].ready);
		json_decref(status);
	}
	char got[256];
	json_t *status = status_with("{\"epoch\":7,\"phase\":\"hot spare\",\"world_size\":5}", "null");
	ctl_readiness(status, true, got, sizeof got);
	assert_string_equal(got, "ready: hot spare of view 7 (world size 5; --spares)");
	json_decref(status);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_member_with_a_rank_in_a_training_view_is_ready),
		cmocka_unit_test(test_member_stays_ready_while_the_next_view_is_agreed),
		cmocka_unit_test(test_minority_side_of_a_partition_is_not_ready),
		cmocka_unit_test(test_joiner_and_hot_spare_without_a_rank_are_not_ready),
		cmocka_unit_test(test_before_the_first_view_is_not_ready),
		cmocka_unit_test(test_agent_without_training_is_not_ready),
		cmocka_unit_test(test_malformed_reply_is_not_ready),
		cmocka_unit_test(test_hot_spare_is_ready_with_spares_so_drain_is_not_blocked),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
