/* Unit tests of the agent's settings: host:port parsing (IPv4, IPv6, names), the checks that name the
 * bad setting and say what is expected (a table of every FTL_* setting's bad values), and the warnings
 * (a key file others can read) and refusals (unknown variables, a seed list with no seed). `test_config NAME` runs the one test NAME: ctest
 * lists each behaviour by its name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/addr.h"
#include "agent/config.h"
#include "ftl/execute.h"
#include "ftl/settings.h"
#include "setting_cases.h"

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
	assert_int_equal(ftl_addr_split("nohost", host, sizeof(host), &port), FTL_ERR_INVALID);
	assert_int_equal(ftl_addr_split(":7946", host, sizeof(host), &port), FTL_ERR_INVALID);
	assert_int_equal(ftl_addr_split("a:99999", host, sizeof(host), &port), FTL_ERR_INVALID);
	assert_int_equal(ftl_addr_split("a:", host, sizeof(host), &port), FTL_ERR_INVALID);
	assert_int_equal(ftl_addr_split("[::1:80", host, sizeof(host), &port), FTL_ERR_INVALID);
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
	assert_int_equal(ftl_addr_parse_numeric("localhost:1", &ss), FTL_ERR_INVALID);
	assert_int_equal(ftl_addr_parse_numeric("0.0.0.0:1", &ss), 0);
	assert_true(ftl_addr_is_wildcard(&ss));
}

static void expect_error(ftl_agent_config *c, const char *needle)
{
	ftl_agent_settings s;
	assert_int_not_equal(ftl_agent_config_resolve(c, &s), FTL_OK);
	const char *err = ftl_error_message();
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
	ftl_agent_config_default(&c);
	setenv("FTL_PROBE_INTERVAL_MS", "soon", 1);
	assert_int_equal(ftl_agent_config_from_env(&c), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "FTL_PROBE_INTERVAL_MS"));
	setenv("FTL_PROBE_INTERVAL_MS", "250", 1);
	setenv("FTL_INSECURE", "1", 1);
	setenv("FTL_ADVERTISE", "10.1.2.3:7946", 1);
	assert_int_equal(ftl_agent_config_from_env(&c), FTL_OK);
	ftl_agent_settings s;
	assert_int_equal(ftl_agent_config_resolve(&c, &s), FTL_OK);
	assert_int_equal(s.swim.probe_interval_us, 250000);
	assert_string_equal(s.advertise, "10.1.2.3:7946");
	setenv("FTL_INSECURE", "yes", 1);
	assert_int_equal(ftl_agent_config_from_env(&c), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "FTL_INSECURE"));
}

static void test_checkpoint_choices_are_read_and_checked(void **state)
{
	ftl_training_config t;
	ftl_training_config_default(&t);
	assert_false(t.checkpoint_fresh);
	assert_false(t.checkpoint_blake2b);
	setenv("FTL_CHECKPOINT_FRESH", "1", 1);
	setenv("FTL_CHECKPOINT_CHECKSUM", "blake2b", 1);
	assert_int_equal(ftl_training_config_from_env(&t), FTL_OK);
	assert_true(t.checkpoint_fresh && t.checkpoint_blake2b);
	setenv("FTL_CHECKPOINT_FRESH", "yes", 1);
	assert_int_equal(ftl_training_config_from_env(&t), FTL_ERR_INVALID);
	assert_string_equal(ftl_error_message(), "FTL_CHECKPOINT_FRESH=yes: expected 0 or 1");
	setenv("FTL_CHECKPOINT_FRESH", "0", 1);
	setenv("FTL_CHECKPOINT_CHECKSUM", "crc32", 1);
	assert_int_equal(ftl_training_config_from_env(&t), FTL_ERR_INVALID);
	assert_string_equal(ftl_error_message(), "FTL_CHECKPOINT_CHECKSUM=crc32: expected xxh3 or blake2b");
	setenv("FTL_CHECKPOINT_CHECKSUM", "xxh3", 1);
	assert_int_equal(ftl_training_config_from_env(&t), FTL_OK);
	assert_false(t.checkpoint_fresh || t.checkpoint_blake2b);
	unsetenv("FTL_CHECKPOINT_FRESH");
	unsetenv("FTL_CHECKPOINT_CHECKSUM");
}

/* ---- every FTL_* setting's bad values ---- */

/* A worker's environment that resolves: every test starts from it and breaks one thing. */
static void set_valid_environment(void)
{
	clear_ftl_environment();
	setenv("FTL_NAME", "w0", 1);
	setenv("FTL_BIND", "127.0.0.1:7946", 1);
	setenv("FTL_GOSSIP_KEY", valid_key, 1);
}

/* What a program does at start: the agent's and the job's variables, then the agent's checks. -1 with the
 * reason copied into err. */
static int resolve_environment(char *err, size_t len)
{
	ftl_agent_config c;
	ftl_training_config t;
	ftl_agent_settings s;
	ftl_agent_config_default(&c);
	ftl_training_config_default(&t);
	if (ftl_agent_config_from_env(&c) == FTL_OK && ftl_training_config_from_env(&t) == FTL_OK &&
	    ftl_agent_config_resolve(&c, &s) == FTL_OK)
		return 0;
	snprintf(err, len, "%s", ftl_error_message());
	return -1;
}

static void expect_refused(const char *var, const char *value, const char *also_unset)
{
	char err[512] = "";
	set_valid_environment();
	if (also_unset)
		unsetenv(also_unset);
	setenv(var, value, 1);
	if (resolve_environment(err, sizeof(err)) == 0)
		fail_msg("%s=\"%s\" was accepted", var, value);
	if (!strstr(err, var))
		fail_msg("%s=\"%s\": the error \"%s\" does not name %s", var, value, err, var);
	/* ... and says which setting it is apart from the text (issue 42 item 4), for a binding to show */
	if (strcmp(ftl_error_setting(), var) != 0)
		fail_msg("%s=\"%s\": ftl_error_setting() is \"%s\"", var, value, ftl_error_setting());
}

static void test_every_setting_refuses_its_bad_values_by_name(void **state)
{
	char err[512];
	set_valid_environment();
	if (resolve_environment(err, sizeof(err)) != 0)
		fail_msg("the valid environment is refused: %s", err);
	for (size_t i = 0; i < N_SETTING_CASES; i++) {
		const setting_case *sc = &setting_cases[i];
		for (int k = 0; k < MAX_BAD && sc->bad[k]; k++)
			expect_refused(sc->var, sc->bad[k], sc->also_unset);
		for (size_t k = 0; sc->is_number && k < N_BAD_NUMBERS; k++)
			expect_refused(sc->var, bad_numbers[k], sc->also_unset);
	}
}

static void test_seeds_that_are_not_host_port_are_refused(void **state)
{
	char err[512];
	static const char *const good[] = {"127.0.0.1:7946", "[::1]:7946", "ftl-workers.default.svc:7946",
					   "not-resolving-yet.invalid:7946", "a:1,b:65535", "a:7946, [fd00::7]:7946"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		set_valid_environment();
		setenv("FTL_SEEDS", good[i], 1);
		if (resolve_environment(err, sizeof(err)) != 0)
			fail_msg("FTL_SEEDS=%s refused: %s", good[i], err);
	}
	expect_refused("FTL_SEEDS", "127.0.0.1", NULL);
	expect_refused("FTL_SEEDS", "::::", NULL);
	expect_refused("FTL_SEEDS", "garbage", NULL);
	expect_refused("FTL_SEEDS", "1.2.3.4:99999", NULL);
}

/* Seeds given with no seed in them (",,,", a template that expanded to nothing) would make a job of one:
 * refused, saying so. Unset, a worker is the first of its job, as before. */
static void test_seed_list_without_a_seed_is_refused(void **state)
{
	char err[512];
	static const char *const empty_lists[] = {",,,", ",", " ", " , ,"};
	for (size_t i = 0; i < sizeof(empty_lists) / sizeof(empty_lists[0]); i++) {
		set_valid_environment();
		setenv("FTL_SEEDS", empty_lists[i], 1);
		if (resolve_environment(err, sizeof(err)) == 0)
			fail_msg("FTL_SEEDS=\"%s\" (no seed) was accepted", empty_lists[i]);
		if (!strstr(err, "FTL_SEEDS") || !strstr(err, "holds no seed"))
			fail_msg("FTL_SEEDS=\"%s\": the error does not say the list holds no seed: %s", empty_lists[i], err);
	}
	set_valid_environment(); /* unset: the first worker of a job */
	if (resolve_environment(err, sizeof(err)) != 0)
		fail_msg("no FTL_SEEDS was refused: %s", err);
	ftl_agent_config c; /* the same check for a config set in code */
	ftl_agent_settings st;
	ftl_agent_config_default(&c);
	strcpy(c.advertise, "10.0.0.1:7946");
	c.is_insecure = true;
	strcpy(c.seeds, ",,,");
	assert_int_equal(ftl_agent_config_resolve(&c, &st), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "holds no seed"));
}

/* FTL_MAX_MEMBERS reaches the member table; unset, every profile keeps the generous default. */
static void test_max_members_setting_reaches_the_member_table(void **state)
{
	ftl_agent_config c;
	ftl_agent_settings st;
	set_valid_environment();
	ftl_agent_config_default(&c);
	assert_int_equal(ftl_agent_config_from_env(&c), FTL_OK);
	assert_int_equal(ftl_agent_config_resolve(&c, &st), FTL_OK);
	assert_int_equal(st.swim.max_members, FTL_SWIM_MAX_MEMBERS_DEFAULT);
	setenv("FTL_MAX_MEMBERS", "64", 1);
	assert_int_equal(ftl_agent_config_from_env(&c), FTL_OK);
	assert_int_equal(ftl_agent_config_resolve(&c, &st), FTL_OK);
	assert_int_equal(st.swim.max_members, 64);
}

/* Compression rounds the gradients; reproducible mode promises exact sums: asking for both is refused when
 * the job's settings are set, and the error names both variables. */
static void test_compression_with_reproducible_mode_is_refused(void **state)
{
	set_valid_environment();
	setenv("FTL_COMM_COMPRESS", "bf16-ef", 1);
	setenv("FTL_GLOBAL_BATCH", "64", 1);
	setenv("FTL_MAX_BATCH_PER_RANK", "8", 1);
	setenv("FTL_REPRODUCIBLE", "1", 1);
	ftl_agent *a = ftl_agent_new_from_env();
	assert_null(a);
	const char *err = ftl_error_message();
	if (!strstr(err, "FTL_COMM_COMPRESS") || !strstr(err, "FTL_REPRODUCIBLE"))
		fail_msg("the error \"%s\" does not name FTL_COMM_COMPRESS and FTL_REPRODUCIBLE", err);
	setenv("FTL_REPRODUCIBLE", "0", 1); /* either alone is fine */
	a = ftl_agent_new_from_env();
	if (a == NULL)
		fail_msg("FTL_COMM_COMPRESS=bf16-ef without reproducible mode was refused: %s", ftl_error_message());
	ftl_agent_delete(a);
}

/* FTL_REPLICA, _INDEX and _SIZE (issue 40): read together, each bad value refused by its name, one missing
 * named as missing, and the agent refusing an index outside the replica or a replica larger than the view. */
static void set_replica(const char *replica, const char *index, const char *size)
{
	set_valid_environment();
	if (replica)
		setenv("FTL_REPLICA", replica, 1);
	if (index)
		setenv("FTL_REPLICA_INDEX", index, 1);
	if (size)
		setenv("FTL_REPLICA_SIZE", size, 1);
}

static void expect_replica_refused(const char *var, const char *says)
{
	ftl_agent *a = ftl_agent_new_from_env();
	if (a != NULL)
		fail_msg("%s: the replica settings were accepted", var);
	if (!strstr(ftl_error_message(), says) || strcmp(ftl_error_setting(), var) != 0)
		fail_msg("%s: the error \"%s\" (setting \"%s\") does not say \"%s\"", var, ftl_error_message(),
			 ftl_error_setting(), says);
}

static void test_replica_settings_come_together_and_in_range(void **state)
{
	ftl_training_config t;
	set_replica("host-3", "1", "2");
	ftl_training_config_default(&t);
	assert_int_equal(ftl_training_config_from_env(&t), FTL_OK);
	assert_string_equal(t.replica, "host-3");
	assert_int_equal(t.replica_index, 1);
	assert_int_equal(t.replica_size, 2);
	ftl_agent *a = ftl_agent_new_from_env();
	if (a == NULL)
		fail_msg("a worker of a replica was refused: %s", ftl_error_message());
	ftl_agent_delete(a);

	const struct {
		const char *replica, *index, *size, *var, *says;
	} bad[] = {
		{"h", "1", "0", "FTL_REPLICA_SIZE", "FTL_REPLICA_SIZE"},
		{"h", "1", "5000", "FTL_REPLICA_SIZE", "FTL_REPLICA_SIZE"},
		{"h", "x", "2", "FTL_REPLICA_INDEX", "FTL_REPLICA_INDEX"},
		{"", "0", "2", "FTL_REPLICA", "FTL_REPLICA"},
		{NAME_64, "0", "2", "FTL_REPLICA", "FTL_REPLICA"},
		{NULL, "0", "2", "FTL_REPLICA", "FTL_REPLICA is unset"},
		{"h", NULL, "2", "FTL_REPLICA_INDEX", "FTL_REPLICA_INDEX is unset"},
		{"h", "0", NULL, "FTL_REPLICA_SIZE", "FTL_REPLICA_SIZE is unset"},
		{"h", "2", "2", "FTL_REPLICA_INDEX", "must be below FTL_REPLICA_SIZE (2)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_replica(bad[i].replica, bad[i].index, bad[i].size);
		expect_replica_refused(bad[i].var, bad[i].says);
	}
	set_replica("h", "0", "4");
	setenv("FTL_MAX_WORKERS", "3", 1);
	expect_replica_refused("FTL_MAX_WORKERS", "is below FTL_REPLICA_SIZE (4)");
	/* a replica's shards train one model together: no share of theirs moves alone */
	set_replica("h", "0", "2");
	setenv("FTL_SLOW_POLICY", "rebalance", 1);
	expect_replica_refused("FTL_SLOW_POLICY", "a job of replicas reports slow ranks only");
	clear_ftl_environment(); /* the tests after this one start from an empty environment */
}

/* A program built against 0.3's ftl_training_config (it ends at spares) gets no replica, whatever lies in
 * its memory past that: the library reads and writes only the caller's bytes. */
static void test_a_training_config_of_the_0_3_layout_has_no_replica(void **state)
{
	union {
		ftl_training_config t;
		unsigned char bytes[sizeof(ftl_training_config)];
	} old;
	size_t old_size = offsetof(ftl_training_config, replica);
	memset(old.bytes, 0xab, sizeof old.bytes);
	ftl_training_config_default_sized(&old.t, old_size);
	for (size_t i = old_size; i < sizeof old.bytes; i++)
		assert_int_equal(old.bytes[i], 0xab);
	set_valid_environment();
	ftl_agent_config c;
	ftl_agent_config_default(&c);
	assert_int_equal(ftl_agent_config_from_env(&c), FTL_OK);
	ftl_agent *a = ftl_agent_new(&c);
	assert_non_null(a);
	if (ftl_set_training(a, &old.t) != FTL_OK)
		fail_msg("the 0.3 layout was refused: %s", ftl_error_message());
	ftl_agent_delete(a);
	clear_ftl_environment();
}

static void test_bind_port_zero_is_refused(void **state) { expect_refused("FTL_BIND", "0.0.0.0:0", NULL); }

static void test_push_pull_interval_zero_is_refused(void **state)
{
	expect_refused("FTL_PUSH_PULL_INTERVAL_MS", "0", NULL);
}

/* Each value is fine alone; together the timing check refuses them, by field id (issue 42 item 4), naming
 * the variables behind that field. */
static void test_timing_check_names_the_variables_behind_the_field(void **state)
{
	char err[512] = "";
	set_valid_environment();
	setenv("FTL_PROBE_INTERVAL_MS", "100", 1);
	setenv("FTL_PROBE_TIMEOUT_MS", "100", 1);
	assert_int_equal(resolve_environment(err, sizeof(err)), -1);
	if (!strstr(err, "FTL_PROBE_TIMEOUT_MS and FTL_PROBE_INTERVAL_MS") || !strstr(err, "shorter than probe_interval"))
		fail_msg("the error \"%s\" does not name both variables and the rule", err);
	assert_string_equal(ftl_error_setting(), "FTL_PROBE_TIMEOUT_MS"); /* the first of them */
	assert_int_equal(ftl_settings_set(NULL, "min_workers", "2"), FTL_ERR_INVALID); /* an error about no setting */
	assert_string_equal(ftl_error_setting(), "");
}

static void test_checkpoint_dir_empty_is_refused(void **state) { expect_refused("FTL_CHECKPOINT_DIR", "", NULL); }

static void test_name_outside_allowed_characters_is_refused(void **state)
{
	char err[512];
	static const char *const good[] = {"w0", "ftl-workers-7d9f8-abcde", "node_1.rack-2", "A"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		set_valid_environment();
		setenv("FTL_NAME", good[i], 1);
		if (resolve_environment(err, sizeof(err)) != 0)
			fail_msg("FTL_NAME=%s refused: %s", good[i], err);
	}
	set_valid_environment();
	setenv("FTL_NAME", "../../escape", 1);
	assert_int_equal(resolve_environment(err, sizeof(err)), -1);
	if (!strstr(err, "FTL_NAME") || !strstr(err, "A-Z a-z 0-9 . _ -"))
		fail_msg("the error does not say which characters are allowed: %s", err);
}

static void test_gossip_key_and_key_file_both_set_are_refused(void **state)
{
	char err[512];
	set_valid_environment();
	setenv("FTL_GOSSIP_KEY_FILE", "/etc/hostname", 1);
	assert_int_equal(resolve_environment(err, sizeof(err)), -1);
	if (!strstr(err, "FTL_GOSSIP_KEY and FTL_GOSSIP_KEY_FILE"))
		fail_msg("the error does not name the pair: %s", err);
}

/* Runs resolve_environment with stderr (where log records go) captured into out. */
static int resolve_capturing_log(char *out, size_t cap)
{
	char err[512], path[] = "/tmp/ftl-test-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	int rc = resolve_environment(err, sizeof(err));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t n = pread(fd, out, cap - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	if (rc != 0)
		fail_msg("refused: %s", err);
	return rc;
}

static void test_gossip_key_file_readable_by_others_warns(void **state)
{
	char path[] = "/tmp/ftl-test-key-XXXXXX", log[4096];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, valid_key, strlen(valid_key)), (ssize_t)strlen(valid_key));
	close(fd);
	set_valid_environment();
	unsetenv("FTL_GOSSIP_KEY");
	setenv("FTL_GOSSIP_KEY_FILE", path, 1);
	chmod(path, 0600);
	resolve_capturing_log(log, sizeof(log));
	if (strstr(log, "FTL_GOSSIP_KEY_FILE"))
		fail_msg("a 0600 key file was warned about: %s", log);
	chmod(path, 0644);
	resolve_capturing_log(log, sizeof(log));
	unlink(path);
	if (!strstr(log, "FTL_GOSSIP_KEY_FILE") || !strstr(log, "0644") || !strstr(log, "chmod 600"))
		fail_msg("no warning naming the key file, its mode and the fix: %s", log);
}

/* A misspelled FTL_* name used to be warned about while the worker trained alone with the default: it is
 * refused, naming the closest known name, unless the program declared it. */
static void test_unknown_setting_is_refused_naming_the_closest(void **state)
{
	char err[512];
	assert_string_equal(ftl_env_closest_known_name("FTL_MAX_WORKER"), "FTL_MAX_WORKERS");
	assert_string_equal(ftl_env_closest_known_name("FTL_SEED"), "FTL_SEEDS");
	assert_string_equal(ftl_env_closest_known_name("FTL_GOSIP_KEY"), "FTL_GOSSIP_KEY");
	assert_null(ftl_env_closest_known_name("FTL_SOMETHING_ELSE_ENTIRELY"));
	static const struct {
		const char *typo, *closest;
	} typos[] = {{"FTL_SEED", "FTL_SEEDS"}, {"FTL_MIN_WORKER", "FTL_MIN_WORKERS"},
		     {"FTL_MAX_WORKER", "FTL_MAX_WORKERS"}, {"FTL_GOSIP_KEY", "FTL_GOSSIP_KEY"},
		     {"FTL_CHECKPOINT_DIRS", "FTL_CHECKPOINT_DIR"}, {"FTL_INSECRE", "FTL_INSECURE"}};
	for (size_t i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
		set_valid_environment();
		setenv(typos[i].typo, "2", 1);
		if (resolve_environment(err, sizeof(err)) == 0)
			fail_msg("%s was accepted", typos[i].typo);
		char did_you_mean[96];
		snprintf(did_you_mean, sizeof(did_you_mean), "did you mean %s?", typos[i].closest);
		if (!strstr(err, typos[i].typo) || !strstr(err, did_you_mean))
			fail_msg("%s: the error does not name it and %s: %s", typos[i].typo, typos[i].closest, err);
	}
	set_valid_environment(); /* several: the first is named, the others listed */
	setenv("FTL_MAX_WORKER", "4", 1);
	setenv("FTL_SOMETHING_ELSE_ENTIRELY", "1", 1);
	assert_int_equal(resolve_environment(err, sizeof(err)), -1);
	if (!strstr(err, "FTL_MAX_WORKER") || !strstr(err, "FTL_SOMETHING_ELSE_ENTIRELY") || !strstr(err, "1 more"))
		fail_msg("both unknown names are not in the error: %s", err);
	/* a program's own variable, once declared, is known; the name is copied */
	set_valid_environment();
	setenv("FTL_MY_PROGRAM_EPOCHS", "3", 1);
	assert_int_equal(resolve_environment(err, sizeof(err)), -1);
	char name[] = "FTL_MY_PROGRAM_EPOCHS";
	assert_int_equal(ftl_env_add_known_name(name), FTL_OK);
	memset(name, 'x', sizeof(name) - 1);
	assert_int_equal(ftl_env_add_known_name("FTL_MY_PROGRAM_EPOCHS"), FTL_OK); /* twice is fine */
	assert_int_equal(ftl_env_add_known_name("NOT_FTL"), FTL_ERR_INVALID);
	assert_int_equal(ftl_env_add_known_name("FTL_A=B"), FTL_ERR_INVALID);
	if (resolve_environment(err, sizeof(err)) != 0)
		fail_msg("a declared name was refused: %s", err);
	/* ftl_env_warn_unknown, for a program that only wants to be told, still only warns */
	setenv("FTL_MAX_WORKER", "4", 1);
	assert_int_equal(ftl_env_warn_unknown(), 1);
	unsetenv("FTL_MAX_WORKER");
}

int main(int argc, char **argv)
{
	/* The tests set what they need; whatever FTL_* the caller exported must not leak in. */
	clear_ftl_environment();
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_split_handles_v4_v6_and_names),
		cmocka_unit_test(test_replica_settings_come_together_and_in_range),
		cmocka_unit_test(test_a_training_config_of_the_0_3_layout_has_no_replica),
		cmocka_unit_test(test_addr_numeric_round_trip),
		cmocka_unit_test(test_bad_settings_name_the_variable),
		cmocka_unit_test(test_env_numbers_are_checked),
		cmocka_unit_test(test_every_setting_refuses_its_bad_values_by_name),
		cmocka_unit_test(test_seeds_that_are_not_host_port_are_refused),
		cmocka_unit_test(test_compression_with_reproducible_mode_is_refused),
		cmocka_unit_test(test_bind_port_zero_is_refused),
		cmocka_unit_test(test_push_pull_interval_zero_is_refused),
		cmocka_unit_test(test_timing_check_names_the_variables_behind_the_field),
		cmocka_unit_test(test_checkpoint_dir_empty_is_refused),
		cmocka_unit_test(test_name_outside_allowed_characters_is_refused),
		cmocka_unit_test(test_gossip_key_and_key_file_both_set_are_refused),
		cmocka_unit_test(test_gossip_key_file_readable_by_others_warns),
		cmocka_unit_test(test_unknown_setting_is_refused_naming_the_closest),
		cmocka_unit_test(test_seed_list_without_a_seed_is_refused),
		cmocka_unit_test(test_max_members_setting_reaches_the_member_table),
		cmocka_unit_test(test_checkpoint_choices_are_read_and_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
