/* Unit tests of the agent's settings: host:port parsing (IPv4, IPv6, names) and the checks that name the
 * bad setting and say what is expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "config.h"
#include "ftl/execute.h"

static void test_addr_split_handles_v4_v6_and_names(void **state)
{
	char host[128];
	int port;
	assert_int_equal(ftl_addr_split("10.0.0.7:7946", host, sizeof(host), &port), 0);
	assert_string_equal(host, "10.0.0.7");
	assert_int_equal(port, 7946);
	assert_int_equal(ftl_addr_split("[fd00::7]:80", host, sizeof(host), &port), 0);
	assert_string_equal(host, "fd00::7");
	assert_int_equal(ftl_addr_split("ftl-workers.default.svc:7946", host, sizeof(host), &port), 0);
	assert_string_equal(host, "ftl-workers.default.svc");
	assert_int_equal(ftl_addr_split("nohost", host, sizeof(host), &port), -1);
	assert_int_equal(ftl_addr_split(":7946", host, sizeof(host), &port), -1);
	assert_int_equal(ftl_addr_split("a:99999", host, sizeof(host), &port), -1);
	assert_int_equal(ftl_addr_split("a:", host, sizeof(host), &port), -1);
	assert_int_equal(ftl_addr_split("[::1:80", host, sizeof(host), &port), -1);
}

static void test_addr_numeric_round_trip(void **state)
{
	struct sockaddr_storage ss;
	char out[64];
	assert_int_equal(ftl_addr_parse_numeric("[::1]:7946", &ss), 0);
	ftl_addr_format((struct sockaddr *)&ss, out, sizeof(out));
	assert_string_equal(out, "[::1]:7946");
	assert_int_equal(ftl_addr_parse_numeric("127.0.0.1:1", &ss), 0);
	ftl_addr_format((struct sockaddr *)&ss, out, sizeof(out));
	assert_string_equal(out, "127.0.0.1:1");
	assert_int_equal(ftl_addr_parse_numeric("localhost:1", &ss), -1);
	assert_int_equal(ftl_addr_parse_numeric("0.0.0.0:1", &ss), 0);
	assert_true(ftl_addr_is_wildcard(&ss));
}

static void expect_error(ftl_agent_config *c, const char *needle)
{
	ftl_agent_settings s;
	char err[512];
	assert_int_equal(ftl_agent_config_resolve(c, &s, err, sizeof(err)), -1);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not mention %s", err, needle);
}

static void test_bad_settings_name_the_variable(void **state)
{
	ftl_agent_config c;
	ftl_agent_config_default(&c);
	expect_error(&c, "FTL_ADVERTISE"); /* default bind is a wildcard and nothing is advertised */
	strcpy(c.advertise, "10.0.0.1:7946");
	expect_error(&c, "FTL_GOSSIP_KEY"); /* no key and not insecure */
	c.is_insecure = true;
	strcpy(c.profile, "fast");
	expect_error(&c, "FTL_PROFILE");
	strcpy(c.profile, "lan");
	strcpy(c.bind, "localhost:7946");
	expect_error(&c, "FTL_BIND");
	strcpy(c.bind, "0.0.0.0:7946");
	c.probe_timeout_ms = 5000;
	expect_error(&c, "probe_timeout");
	c.probe_timeout_ms = 0;
	c.is_insecure = false;
	strcpy(c.gossip_key, "not base64!");
	expect_error(&c, "ftlctl keygen");
	strcpy(c.gossip_key, "");
	strcpy(c.gossip_key_file, "/nonexistent/key");
	expect_error(&c, "FTL_GOSSIP_KEY_FILE");
}

static void test_env_numbers_are_checked(void **state)
{
	ftl_agent_config c;
	char err[512];
	ftl_agent_config_default(&c);
	setenv("FTL_PROBE_INTERVAL_MS", "soon", 1);
	assert_int_equal(ftl_agent_config_from_env(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "FTL_PROBE_INTERVAL_MS"));
	setenv("FTL_PROBE_INTERVAL_MS", "250", 1);
	setenv("FTL_INSECURE", "1", 1);
	setenv("FTL_ADVERTISE", "10.1.2.3:7946", 1);
	assert_int_equal(ftl_agent_config_from_env(&c, err, sizeof(err)), 0);
	ftl_agent_settings s;
	assert_int_equal(ftl_agent_config_resolve(&c, &s, err, sizeof(err)), 0);
	assert_int_equal(s.swim.probe_interval_us, 250000);
	assert_string_equal(s.advertise, "10.1.2.3:7946");
	setenv("FTL_INSECURE", "yes", 1);
	assert_int_equal(ftl_agent_config_from_env(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "FTL_INSECURE"));
}

static void test_checkpoint_choices_are_read_and_checked(void **state)
{
	ftl_training_config t;
	char err[512];
	ftl_training_config_default(&t);
	assert_false(t.checkpoint_fresh);
	assert_false(t.checkpoint_blake2b);
	setenv("FTL_CHECKPOINT_FRESH", "1", 1);
	setenv("FTL_CHECKPOINT_CHECKSUM", "blake2b", 1);
	assert_int_equal(ftl_training_config_from_env(&t, err, sizeof(err)), 0);
	assert_true(t.checkpoint_fresh && t.checkpoint_blake2b);
	setenv("FTL_CHECKPOINT_FRESH", "yes", 1);
	assert_int_equal(ftl_training_config_from_env(&t, err, sizeof(err)), -1);
	assert_string_equal(err, "FTL_CHECKPOINT_FRESH=yes: expected 0 or 1");
	setenv("FTL_CHECKPOINT_FRESH", "0", 1);
	setenv("FTL_CHECKPOINT_CHECKSUM", "crc32", 1);
	assert_int_equal(ftl_training_config_from_env(&t, err, sizeof(err)), -1);
	assert_string_equal(err, "FTL_CHECKPOINT_CHECKSUM=crc32: expected xxh3 or blake2b");
	setenv("FTL_CHECKPOINT_CHECKSUM", "xxh3", 1);
	assert_int_equal(ftl_training_config_from_env(&t, err, sizeof(err)), 0);
	assert_false(t.checkpoint_fresh || t.checkpoint_blake2b);
	unsetenv("FTL_CHECKPOINT_FRESH");
	unsetenv("FTL_CHECKPOINT_CHECKSUM");
}

extern char **environ;

int main(void)
{
	/* The tests set what they need; whatever FTL_* the caller exported must not leak in. */
	for (char **e = environ; *e;) {
		if (strncmp(*e, "FTL_", 4) == 0) {
			char name[128];
			snprintf(name, sizeof(name), "%.*s", (int)(strcspn(*e, "=")), *e);
			unsetenv(name);
		} else {
			e++;
		}
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_split_handles_v4_v6_and_names),
		cmocka_unit_test(test_addr_numeric_round_trip),
		cmocka_unit_test(test_bad_settings_name_the_variable),
		cmocka_unit_test(test_env_numbers_are_checked),
		cmocka_unit_test(test_checkpoint_choices_are_read_and_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
