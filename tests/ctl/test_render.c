/* ftlctl's pure parts: the human status screen (header, view line, aligned table), last-heard
 * formatting, member filters, and the one shared definition of the run directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl_render.h"
#include "ctl/member_filter.h"
#include "base/diag.h"
#include "base/run_dir.h"
#include "ctl/top.h"

static const char status_with_view[] =
	"{\"ok\":true,\"cluster\":\"prod\",\"profile\":\"lan\","
	"\"self\":{\"name\":\"a\",\"addr\":\"10.0.0.1:7946\",\"generation\":2,\"incarnation\":1},"
	"\"view\":{\"epoch\":4,\"phase\":\"training\",\"coordinator\":\"a\",\"world_size\":2,\"step\":1200},"
	"\"health\":2,\"counts\":{\"alive\":2,\"suspect\":0,\"dead\":0,\"left\":1},"
	"\"members\":["
	"{\"name\":\"a\",\"addr\":\"10.0.0.1:7946\",\"status\":\"alive\",\"incarnation\":1,\"generation\":2,"
	"\"last_heard_ms\":0,\"rank\":0},"
	"{\"name\":\"long-worker-name\",\"addr\":\"10.0.0.22:7946\",\"status\":\"alive\",\"incarnation\":0,"
	"\"generation\":1,\"last_heard_ms\":250000,\"rank\":1},"
	"{\"name\":\"c\",\"addr\":\"10.0.0.3:7946\",\"status\":\"left\",\"incarnation\":3,\"generation\":1,"
	"\"last_heard_ms\":45600,\"rank\":null}]}";

static json_t *parse(const char *text)
{
	json_t *value = json_loads(text, 0, NULL);
	assert_non_null(value);
	return value;
}

/* Renders with render into a string (the caller frees it). */
static char *render_to_string(void (*render)(FILE *, const json_t *), const json_t *value)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	render(out, value);
	fclose(out);
	return text;
}

static void assert_contains(const char *haystack, const char *needle)
{
	if (strstr(haystack, needle) == NULL)
		fail_msg("expected to find \"%s\" in:\n%s", needle, haystack);
}

static void test_status_header_shows_cluster_self_view_counts_and_health(void **state)
{
	json_t *status = parse(status_with_view);
	char *text = render_to_string(ctl_render_status, status);
	assert_contains(text, "cluster      prod (profile lan)\n");
	assert_contains(text, "self         a at 10.0.0.1:7946, generation 2, incarnation 1\n");
	assert_contains(text, "view         epoch 4, training, coordinator a, world size 2, step 1200\n");
	assert_contains(text, "members      2 alive, 0 suspect, 0 dead, 1 left\n");
	assert_contains(text, "health       2 (degraded");
	free(text);
	json_decref(status);
}

static void test_member_table_columns_line_up(void **state)
{
	json_t *status = parse(status_with_view);
	char *text = render_to_string(ctl_render_members, json_object_get(status, "members"));
	const char *expected =
		"NAME              ADDRESS         STATUS  INCARNATION  GENERATION  LAST-HEARD  RANK\n"
		"a                 10.0.0.1:7946   alive   1            2           0.00s       0\n"
		"long-worker-name  10.0.0.22:7946  alive   0            1           250s        1\n"
		"c                 10.0.0.3:7946   left    3            1           45.6s       -\n";
	assert_string_equal(text, expected);
	free(text);
	json_decref(status);
}

/* A sharded job's members say their replica and index in a last column, shown only then. */
static void test_members_of_replicas_show_their_replica(void **state)
{
	json_t *members = parse("[{\"name\":\"h0-0\",\"addr\":\"10.0.0.1:7946\",\"status\":\"alive\",\"incarnation\":0,"
				"\"generation\":1,\"last_heard_ms\":0,\"rank\":0,\"replica\":{\"name\":\"h0\",\"index\":0,"
				"\"size\":2}},{\"name\":\"h0-1\",\"addr\":\"10.0.0.1:7947\",\"status\":\"dead\",\"incarnation\":0,"
				"\"generation\":2,\"last_heard_ms\":1000,\"rank\":null}]");
	char *text = render_to_string(ctl_render_members, members);
	const char *expected =
		"NAME  ADDRESS        STATUS  INCARNATION  GENERATION  LAST-HEARD  RANK  REPLICA\n"
		"h0-0  10.0.0.1:7946  alive   0            1           0.00s       0     h0/0\n"
		"h0-1  10.0.0.1:7947  dead    0            2           1.00s       -     -\n";
	assert_string_equal(text, expected);
	free(text);
	json_decref(members);
}

static void test_missing_fields_print_as_question_marks(void **state)
{
	json_t *status = parse("{\"ok\":true,\"view\":null,\"members\":[{\"name\":\"x\"}]}");
	char *text = render_to_string(ctl_render_status, status);
	assert_contains(text, "view         none yet\n");
	assert_contains(text, "x     ?        ?       ?            ?           -           ?\n");
	free(text);
	json_decref(status);
}

static void test_status_shows_the_last_checkpoint_and_the_writer(void **state)
{
	json_t *status = parse("{\"ok\":true,\"view\":null,\"members\":[],\"checkpoint\":{\"dir\":\"/ck\","
			       "\"last_step\":300,\"last_file\":\"/ck/ckpt-00000000000000000300.ftl\",\"age_s\":4.25,"
			       "\"writer\":\"failed: cannot write: No space left on device\",\"written\":3,"
			       "\"skipped\":1,\"failed\":2}}");
	char *text = render_to_string(ctl_render_status, status);
	assert_contains(text, "checkpoint   step 300, 4.2 s ago, /ck/ckpt-00000000000000000300.ftl\n");
	assert_contains(text, "writer failed: cannot write: No space left on device; 3 written, 1 skipped (busy), 2 failed\n");
	free(text);
	json_decref(status);
	status = parse("{\"ok\":true,\"members\":[],\"checkpoint\":{\"dir\":\"/ck\",\"last_step\":null,"
		       "\"writer\":\"idle\",\"written\":0,\"skipped\":0,\"failed\":0}}");
	text = render_to_string(ctl_render_status, status);
	assert_contains(text, "checkpoint   none yet in /ck\n");
	free(text);
	json_decref(status);
}

static void test_status_shows_the_slow_rank_and_the_least_share(void **state)
{
	json_t *status = parse("{\"ok\":true,\"members\":[],\"view\":{\"epoch\":3,\"phase\":\"training\",\"pace\":{"
			       "\"slow_rank\":null,\"ranks\":["
			       "{\"rank\":0,\"name\":\"w0\",\"step_ms\":40.0,\"lead_ms\":0.5,\"share\":0.3},"
			       "{\"rank\":1,\"name\":\"w1\",\"step_ms\":40.0,\"lead_ms\":1.5,\"share\":0.3},"
			       "{\"rank\":2,\"name\":\"w2\",\"step_ms\":40.0,\"lead_ms\":0.2,\"share\":0.125},"
			       "{\"rank\":3,\"name\":\"w3\",\"step_ms\":40.0,\"lead_ms\":0.1,\"share\":0.275}]}}}");
	char *text = render_to_string(ctl_render_status, status);
	assert_contains(text, "pace         no slow rank (the most waited for: rank 1, 1.5 ms of a 40.0 ms step)\n");
	assert_contains(text, "shares       rank 2 (w2) takes the least of the global batch: 12.5% (even: 25.0%)\n");
	free(text);
	json_decref(status);
}

static void test_status_shows_where_ftl_execute_stands(void **state)
{
	json_t *status = parse("{\"ok\":true,\"view\":null,\"members\":[],\"execute\":{\"state\":\"backing_off\"}}");
	char *text = render_to_string(ctl_render_status, status);
	assert_contains(text, "execute      backing_off\n");
	free(text);
	json_decref(status);
	status = parse("{\"ok\":true,\"view\":null,\"members\":[],\"execute\":null}"); /* an agent without training */
	text = render_to_string(ctl_render_status, status);
	assert_null(strstr(text, "execute"));
	free(text);
	json_decref(status);
}

/* `ftlctl top`: two samples 2 s apart give the step rate; the last recovery and the member table show. */
static void test_top_frame_shows_view_step_rate_recovery_and_members(void **state)
{
	json_t *before = parse(status_with_view), *now = parse(status_with_view);
	json_t *view = json_object_get(now, "view");
	json_object_set_new(view, "step", json_integer(1300));
	json_object_set_new(view, "rank", json_integer(0));
	json_object_set_new(view, "retries", json_integer(1));
	json_object_set_new(view, "recoveries", json_integer(2));
	json_object_set_new(view, "last_recovery_ms", json_real(1234.5));
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	ctl_top_render(out, now, before, 2.0);
	fclose(out);
	assert_contains(text, "ftl top      a at 10.0.0.1:7946, cluster prod\n");
	assert_contains(text, "view         epoch 4, training, world size 2, coordinator a, this worker's rank 0\n");
	assert_contains(text, "steps        step 1300, 50.0 steps/s, 1 retries\n");
	assert_contains(text, "recovery     last 1.23 s (failure to the next step), 2 in all\n");
	assert_contains(text, "members      2 alive, 0 suspect, 0 dead, 1 left; health 2\n");
	assert_contains(text, "long-worker-name");
	free(text);
	out = open_memstream(&text, &len); /* no earlier sample, or an older agent without the fields */
	ctl_top_render(out, before, NULL, 0);
	fclose(out);
	assert_contains(text, "steps        step 1200, -, 0 retries\n");
	assert_contains(text, "recovery     none yet\n");
	free(text);
	json_decref(before);
	json_decref(now);
}

static const char keys_with_census[] =
	"{\"ok\":true,\"keys\":[\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\","
	"\"ZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmY=\"],\"members\":20,\"unreported\":1,\"truncated\":false,"
	"\"census\":["
	"{\"key\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\",\"fingerprint\":\"77d3b84c9cfe7cb2\","
	"\"holders\":19,\"primary_of\":19,\"lacking\":[\"old-agent\"]},"
	"{\"key\":\"ZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmY=\",\"fingerprint\":\"0123456789abcdef\","
	"\"holders\":2,\"primary_of\":0,\"lacking\":[\"w2\",\"w3\"]},"
	"{\"key\":null,\"fingerprint\":\"fedcba9876543210\",\"holders\":1,\"primary_of\":1,\"lacking\":[]}]}";

static void test_keys_list_shows_how_many_members_hold_each_key(void **state)
{
	json_t *reply = parse(keys_with_census);
	char *text = render_to_string(ctl_render_keys, reply);
	assert_contains(text, "KEY                                           FINGERPRINT       HELD BY  PRIMARY ON\n");
	assert_contains(text, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=  77d3b84c9cfe7cb2  19/20    19/20       "
			      "primary here  lacking: old-agent\n");
	/* the agent lists up to 16 names; the rest is counted from N/M */
	assert_contains(text, "ZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmY=  0123456789abcdef  2/20     0/20        "
			      "lacking: w2, w3 and 16 more\n");
	assert_contains(text, "(not installed here)                          fedcba9876543210  1/20     1/20        "
			      "lacking: 19 more\n");
	assert_contains(text, "1 live member(s) report no keys");
	free(text);
	json_decref(reply);
	/* An agent from before the census: its keys, the primary marked. */
	reply = parse("{\"ok\":true,\"keys\":[\"a2V5MQ==\",\"a2V5Mg==\"]}");
	text = render_to_string(ctl_render_keys, reply);
	assert_string_equal(text, "a2V5MQ==  (primary)\na2V5Mg==\n");
	free(text);
	json_decref(reply);
}

static void test_last_heard_is_seconds_with_sensible_precision(void **state)
{
	static const struct {
		json_int_t ms;
		const char *text;
	} cases[] = {{0, "0.00s"}, {120, "0.12s"}, {9994, "9.99s"}, {12345, "12.3s"}, {125000, "125s"}};
	char text[32];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *ms = json_integer(cases[i].ms);
		ctl_format_last_heard(ms, text, sizeof text);
		assert_string_equal(text, cases[i].text);
		json_decref(ms);
	}
	ctl_format_last_heard(NULL, text, sizeof text);
	assert_string_equal(text, "-");
}

static void test_member_filter_by_status_set_and_name_part(void **state)
{
	json_t *status = parse(status_with_view);
	json_t *members = json_object_get(status, "members");
	member_filter filter = {0};
	json_t *kept;

	assert_int_equal(member_filter_add_statuses(&filter, "alive,left"), FTL_OK);
	kept = member_filter_apply(&filter, members);
	assert_int_equal(json_array_size(kept), 3);
	json_decref(kept);

	filter.name_part = "worker";
	kept = member_filter_apply(&filter, members);
	assert_int_equal(json_array_size(kept), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(kept, 0), "name")),
			    "long-worker-name");
	json_decref(kept);

	filter = (member_filter){0};
	assert_int_equal(member_filter_add_statuses(&filter, "left"), FTL_OK);
	kept = member_filter_apply(&filter, members);
	assert_int_equal(json_array_size(kept), 1);
	json_decref(kept);

	assert_int_equal(member_filter_add_statuses(&filter, "alive,zombie"), FTL_ERR_INVALID);
	assert_string_equal(ftl_diag_message(), "unknown status zombie; use alive, suspect, dead or left");
	json_decref(status);
}

static void test_run_dir_prefers_explicit_then_env_then_xdg_then_tmp(void **state)
{
	char dir[256], expected[64], path[300];
	setenv(FTL_RUN_DIR_ENV, "/env/run", 1);
	setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
	assert_int_equal(ftl_run_dir_resolve("/flag/run", dir, sizeof dir), 0);
	assert_string_equal(dir, "/flag/run");
	assert_int_equal(ftl_run_dir_resolve(NULL, dir, sizeof dir), 0);
	assert_string_equal(dir, "/env/run");
	unsetenv(FTL_RUN_DIR_ENV);
	assert_int_equal(ftl_run_dir_resolve("", dir, sizeof dir), 0);
	assert_string_equal(dir, "/run/user/7/ftl");
	unsetenv("XDG_RUNTIME_DIR");
	assert_int_equal(ftl_run_dir_resolve(NULL, dir, sizeof dir), 0);
	snprintf(expected, sizeof expected, "/tmp/ftl-%u", (unsigned)getuid());
	assert_string_equal(dir, expected);
	assert_int_equal(ftl_run_dir_socket_path("/r", "w1", path, sizeof path), 0);
	assert_string_equal(path, "/r/w1.sock");
	assert_int_equal(ftl_run_dir_socket_path("/r", "w1", path, 8), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_header_shows_cluster_self_view_counts_and_health),
		cmocka_unit_test(test_member_table_columns_line_up),
		cmocka_unit_test(test_members_of_replicas_show_their_replica),
		cmocka_unit_test(test_missing_fields_print_as_question_marks),
		cmocka_unit_test(test_status_shows_the_last_checkpoint_and_the_writer),
		cmocka_unit_test(test_status_shows_the_slow_rank_and_the_least_share),
		cmocka_unit_test(test_status_shows_where_ftl_execute_stands),
		cmocka_unit_test(test_top_frame_shows_view_step_rate_recovery_and_members),
		cmocka_unit_test(test_keys_list_shows_how_many_members_hold_each_key),
		cmocka_unit_test(test_last_heard_is_seconds_with_sensible_precision),
		cmocka_unit_test(test_member_filter_by_status_set_and_name_part),
		cmocka_unit_test(test_run_dir_prefers_explicit_then_env_then_xdg_then_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
