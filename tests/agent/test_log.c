/* Unit tests of the log sink (base/log.h, the record in ftl/agent.h): the stderr line byte for byte, values
 * escaped so the line still splits on spaces, the level filter (a dropped record's arguments are not even
 * evaluated), typed fields reaching a callback, one write() per record, and two agents in one process
 * each logging with their own name and level, from their own loop threads too. `test_log NAME` runs the
 * one test NAME. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "ftl/agent.h"
#include "base/log.h"
#include "ports.h"

/* 2023-11-14T22:13:20.123456Z */
#define FIXED_TIME_US 1700000000123456LL

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void format(const ftl_log_record *rec, char *out, size_t cap)
{
	size_t n = ftl_log_format(rec, out, cap);
	assert_true(n < cap);
	assert_int_equal(strlen(out), n);
}

static void test_text_line_has_time_level_agent_component_message_and_fields(void **state)
{
	ftl_log_field fields[] = {FTL_F_STR("member", "w3"), FTL_F_UINT("incarnation", 7), FTL_F_INT("rank", -1),
				  FTL_F_HEX("job", 0xabcULL), FTL_F_DOUBLE("took_ms", 12.5), FTL_F_DOUBLE("stall_ms", 3.0),
				  FTL_F_DOUBLE("mb_per_s", 0.125), FTL_F_BOOL("is_retry", true)};
	ftl_log_record rec = {.time_us = FIXED_TIME_US, .level = FTL_LOG_WARN, .agent = "w1", .component = "membership",
			      .message = "member dead", .fields = fields, .n_fields = sizeof(fields) / sizeof(fields[0])};
	char line[512];
	format(&rec, line, sizeof(line));
	assert_string_equal(line, "2023-11-14T22:13:20.123Z level=warn agent=w1 component=membership msg=\"member dead\" "
				  "member=w3 incarnation=7 rank=-1 job=0000000000000abc took_ms=12.5 stall_ms=3.0 "
				  "mb_per_s=0.125 is_retry=true\n");
}

static void test_values_with_spaces_or_quotes_are_quoted_and_escaped(void **state)
{
	ftl_log_field fields[] = {FTL_F_STR("reason", "suspicion timed out"), FTL_F_STR("said", "a \"b\""),
				  FTL_F_STR("path", "C:\\x"), FTL_F_STR("lines", "one\ntwo\tthree"),
				  FTL_F_STR("empty", ""), FTL_F_STR("eq", "a=b"), FTL_F_STR("bell", "\a"),
				  FTL_F_STR("plain", "127.0.0.1:7946")};
	ftl_log_record rec = {.time_us = FIXED_TIME_US, .level = FTL_LOG_INFO, .agent = "w1", .component = "c",
			      .message = "he said \"no\"\n", .fields = fields, .n_fields = sizeof(fields) / sizeof(fields[0])};
	char line[512];
	format(&rec, line, sizeof(line));
	const char *tail = strstr(line, " msg=");
	assert_non_null(tail);
	assert_string_equal(tail, " msg=\"he said \\\"no\\\"\\n\" reason=\"suspicion timed out\" said=\"a \\\"b\\\"\" "
				  "path=\"C:\\\\x\" lines=\"one\\ntwo\\tthree\" empty=\"\" eq=\"a=b\" bell=\"\\x07\" "
				  "plain=127.0.0.1:7946\n");
	assert_int_equal(count_lines(line), 1);
}

static void test_line_too_long_is_cut_and_still_ends_with_a_newline(void **state)
{
	char big[3000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ftl_log_field fields[] = {FTL_F_STR("big", big)};
	ftl_log_record rec = {.time_us = FIXED_TIME_US, .level = FTL_LOG_INFO, .agent = "w1", .component = "c",
			      .message = "m", .fields = fields, .n_fields = 1};
	char line[256];
	size_t need = ftl_log_format(&rec, line, sizeof(line));
	assert_true(need > sizeof(big));
	assert_int_equal(strlen(line), sizeof(line) - 1);
	assert_int_equal(line[sizeof(line) - 2], '\n');
}

/* ---- a callback that keeps what it was given ---- */

typedef struct kept {
	pthread_mutex_t lock;
	int n;
	char agent[8][64];
	char text[8][1024];          /* each record as its stderr line */
	ftl_log_field fields[8][4];  /* the first record's typed fields, copied (strings are not kept) */
	size_t n_fields;
	char first_member[64];
} kept;

static void keep_cb(const ftl_log_record *rec, void *user)
{
	kept *k = user;
	pthread_mutex_lock(&k->lock);
	if (k->n < 8) {
		snprintf(k->agent[k->n], sizeof(k->agent[k->n]), "%s", rec->agent);
		ftl_log_format(rec, k->text[k->n], sizeof(k->text[k->n]));
		if (k->n == 0) {
			k->n_fields = rec->n_fields;
			for (size_t i = 0; i < rec->n_fields && i < 4; i++)
				k->fields[0][i] = rec->fields[i];
			if (rec->n_fields && rec->fields[0].type == FTL_LOG_FIELD_STR)
				snprintf(k->first_member, sizeof(k->first_member), "%s", rec->fields[0].value.str);
		}
	}
	k->n++;
	pthread_mutex_unlock(&k->lock);
}

static int evaluations;
static uint64_t counted(uint64_t v)
{
	evaluations++;
	return v;
}

static void test_records_below_the_level_are_dropped_unevaluated(void **state)
{
	kept k = {.lock = PTHREAD_MUTEX_INITIALIZER};
	ftl_logger log;
	assert_int_equal(ftl_logger_init(&log, "loud", "w1", keep_cb, &k), FTL_ERR_INVALID);
	assert_int_equal(ftl_logger_init(&log, "warn", "w1", keep_cb, &k), 0);
	evaluations = 0;
	ftl_log(&log, FTL_LOG_INFO, "c", FTL_MSG("step %llu", (unsigned long long)counted(1)), FTL_F_UINT("step", counted(1)));
	ftl_log(&log, FTL_LOG_DEBUG, "c", "quiet");
	assert_int_equal(k.n, 0);
	assert_int_equal(evaluations, 0);
	ftl_log(&log, FTL_LOG_ERROR, "c", FTL_MSG("step %llu", (unsigned long long)counted(5)), FTL_F_STR("member", "w9"),
		FTL_F_UINT("step", counted(5)), FTL_F_DOUBLE("took_ms", 1.5), FTL_F_INT("rank", -2));
	assert_int_equal(evaluations, 2);
	assert_int_equal(k.n, 1);
	assert_string_equal(k.agent[0], "w1");
	assert_int_equal(k.n_fields, 4);
	assert_string_equal(k.first_member, "w9");
	assert_int_equal(k.fields[0][1].type, FTL_LOG_FIELD_UINT);
	assert_int_equal(k.fields[0][1].value.u, 5);
	assert_int_equal(k.fields[0][2].type, FTL_LOG_FIELD_DOUBLE);
	assert_true(k.fields[0][2].value.d == 1.5);
	assert_int_equal(k.fields[0][3].type, FTL_LOG_FIELD_INT);
	assert_int_equal(k.fields[0][3].value.i, -2);
	assert_non_null(strstr(k.text[0], "level=error agent=w1 component=c msg=\"step 5\" member=w9 step=5 took_ms=1.5 rank=-2\n"));
}

static void test_default_sink_writes_each_record_as_one_line_on_stderr(void **state)
{
	char path[] = "/tmp/ftl-test-log-XXXXXX", out[4096];
	int fd = mkstemp(path), saved = dup(2);
	assert_true(fd >= 0 && saved >= 0);
	ftl_logger log;
	assert_int_equal(ftl_logger_init(&log, "debug", "w2", NULL, NULL), 0);
	dup2(fd, 2);
	ftl_log(&log, FTL_LOG_DEBUG, "transport", "udp send failed", FTL_F_STR("error", "host unreachable"));
	ftl_log(ftl_logger_stderr(), FTL_LOG_DEBUG, "config", "below the plain logger's info");
	ftl_log(ftl_logger_stderr(), FTL_LOG_INFO, "config", "plain");
	dup2(saved, 2);
	close(saved);
	ssize_t n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	unlink(path);
	out[n > 0 ? n : 0] = '\0';
	assert_int_equal(count_lines(out), 2);
	char *second = strchr(out, '\n') + 1;
	assert_non_null(strstr(out, "Z level=debug agent=w2 component=transport msg=\"udp send failed\" "
				    "error=\"host unreachable\"\n"));
	assert_non_null(strstr(second, "Z level=info agent=- component=config msg=\"plain\"\n"));
	assert_null(strstr(out, "below"));
}

/* ---- two agents in one process ---- */

static void agent_config(ftl_agent_config *c, const char *name, int port, const char *level, const char *run_dir,
			 kept *k)
{
	ftl_agent_config_default(c);
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->bind, sizeof(c->bind), "127.0.0.1:%d", port);
	snprintf(c->log_level, sizeof(c->log_level), "%s", level);
	snprintf(c->run_dir, sizeof(c->run_dir), "%s", run_dir);
	snprintf(c->profile, sizeof(c->profile), "local");
	c->is_insecure = true;
	c->log_cb = keep_cb;
	c->log_user = k;
}

static bool has_line(kept *k, const char *needle)
{
	pthread_mutex_lock(&k->lock);
	bool found = false;
	for (int i = 0; i < k->n && i < 8; i++)
		found = found || strstr(k->text[i], needle);
	pthread_mutex_unlock(&k->lock);
	return found;
}

static bool only_from(kept *k, const char *agent)
{
	pthread_mutex_lock(&k->lock);
	bool only = true;
	for (int i = 0; i < k->n && i < 8; i++)
		only = only && strcmp(k->agent[i], agent) == 0;
	pthread_mutex_unlock(&k->lock);
	return only;
}

static void test_two_agents_in_one_process_log_with_their_own_name_and_level(void **state)
{
	char run_dir[] = "/tmp/ftl-test-log-run-XXXXXX";
	assert_non_null(mkdtemp(run_dir));
	kept ka = {.lock = PTHREAD_MUTEX_INITIALIZER}, kb = {.lock = PTHREAD_MUTEX_INITIALIZER};
	ftl_agent_config ca, cb;
	int port_a = ftl_test_free_port();
	agent_config(&ca, "log-a", port_a, "info", run_dir, &ka);
	agent_config(&cb, "log-b", ftl_test_free_port(), "warn", run_dir, &kb);
	snprintf(cb.seeds, sizeof(cb.seeds), "127.0.0.1:%d", port_a);
	ftl_agent *a = ftl_agent_new(&ca);
	assert_non_null(a);
	ftl_agent *b = ftl_agent_new(&cb);
	assert_non_null(b);
	if (ftl_agent_start(a) != FTL_OK || ftl_agent_start(b) != FTL_OK)
		fail_msg("start: %s", ftl_error_message());
	/* a, at info, hears b join on its own loop thread; b, at warn, says only its warning */
	char joined[128];
	snprintf(joined, sizeof(joined), "agent=log-a component=membership msg=\"member join\" member=log-b ");
	for (int i = 0; i < 200 && !has_line(&ka, joined); i++)
		nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000L}, NULL);
	ftl_agent_delete(b);
	ftl_agent_delete(a);
	rmdir(run_dir);
	if (!has_line(&ka, joined))
		fail_msg("log-a's callback never heard log-b join: %d records, first: %s", ka.n, ka.text[0]);
	assert_true(has_line(&ka, "level=info agent=log-a component=agent msg=\"started\""));
	assert_true(has_line(&kb, "level=warn agent=log-b component=agent msg=\"FTL_INSECURE=1"));
	assert_false(has_line(&kb, "level=info"));
	assert_true(only_from(&ka, "log-a"));
	assert_true(only_from(&kb, "log-b"));
}

/* A warning about the settings, given while the agent is made (before it runs), goes to the config's
 * callback: here a key file that others can read. */
static void test_settings_warnings_go_to_the_configs_callback(void **state)
{
	kept k = {.lock = PTHREAD_MUTEX_INITIALIZER};
	char path[] = "/tmp/ftl-test-key-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char key[] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
	assert_int_equal(write(fd, key, sizeof(key) - 1), (ssize_t)(sizeof(key) - 1));
	close(fd);
	chmod(path, 0644);
	ftl_agent_config c;
	ftl_agent_config_default(&c);
	snprintf(c.name, sizeof(c.name), "w7");
	snprintf(c.bind, sizeof(c.bind), "127.0.0.1:7946");
	snprintf(c.gossip_key_file, sizeof(c.gossip_key_file), "%s", path);
	c.log_cb = keep_cb;
	c.log_user = &k;
	ftl_agent *a = ftl_agent_new(&c);
	unlink(path);
	assert_non_null(a);
	ftl_agent_delete(a);
	assert_true(has_line(&k, "level=warn agent=w7 component=config msg=\"FTL_GOSSIP_KEY_FILE="));
	assert_true(has_line(&k, " mode=420\n"));
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_line_has_time_level_agent_component_message_and_fields),
		cmocka_unit_test(test_values_with_spaces_or_quotes_are_quoted_and_escaped),
		cmocka_unit_test(test_line_too_long_is_cut_and_still_ends_with_a_newline),
		cmocka_unit_test(test_records_below_the_level_are_dropped_unevaluated),
		cmocka_unit_test(test_default_sink_writes_each_record_as_one_line_on_stderr),
		cmocka_unit_test(test_two_agents_in_one_process_log_with_their_own_name_and_level),
		cmocka_unit_test(test_settings_warnings_go_to_the_configs_callback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
