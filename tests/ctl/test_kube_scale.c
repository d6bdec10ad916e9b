/* The scale subresource's parse (ctl/kube_scale.c), the only input follow-replicas takes from the Kubernetes
 * API: spec.replicas as the API writes it, and every other answer an error that says what was wrong. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "ctl/kube_scale.h"

static int parse(const char *body, long *replicas, char *why)
{
	return kube_scale_parse(body, strlen(body), replicas, why, 256);
}

static void test_replicas_of_a_scale_object_are_read(void **state)
{
	long replicas = -1;
	char why[256];
	assert_int_equal(parse("{\"kind\":\"Scale\",\"apiVersion\":\"autoscaling/v1\",\"metadata\":{\"name\":\"ftl-worker\"},"
			       "\"spec\":{\"replicas\":128},\"status\":{\"replicas\":4,\"selector\":\"app=ftl\"}}",
			       &replicas, why), 0);
	assert_int_equal(replicas, 128);
}

static void test_a_spec_without_replicas_is_zero(void **state)
{
	long replicas = -1;
	char why[256];
	assert_int_equal(parse("{\"kind\":\"Scale\",\"spec\":{},\"status\":{\"replicas\":0}}", &replicas, why), 0);
	assert_int_equal(replicas, 0);
}

static void test_other_answers_are_errors_that_say_why(void **state)
{
	static const struct {
		const char *body, *why;
	} cases[] = {
		{"<html>proxy error</html>", "not JSON"},
		{"{\"kind\":\"Status\",\"code\":403}", "no spec.replicas"},
		{"{\"spec\":{\"replicas\":\"8\"}}", "no spec.replicas"},
		{"{\"spec\":{\"replicas\":-1}}", "no spec.replicas"},
		{"", "not JSON"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long replicas = 7;
		char why[256] = "";
		assert_int_equal(parse(cases[i].body, &replicas, why), -1);
		assert_non_null(strstr(why, cases[i].why));
		assert_int_equal(replicas, 7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replicas_of_a_scale_object_are_read),
		cmocka_unit_test(test_a_spec_without_replicas_is_zero),
		cmocka_unit_test(test_other_answers_are_errors_that_say_why),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
