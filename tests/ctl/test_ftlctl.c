/* ftlctl end to end: the built binary against the fake agent, checking what a user sees (stdout,
 * stderr) and what a script sees (exit status: 0 ok, 1 refused, 2 usage, 3 no agent, 4 denied). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_agent.h"
#include "test_dirs.h"

#define RUN_TIMEOUT_MS 15000
#define NOBODY_ID 65534

typedef struct fixture {
	char dir[64];
	char run_dir[96];
	char path[128];
	fake_agent *agent;
} fixture;

typedef struct ftlctl_run {
	int status; /* exit status */
	char out[16384];
	char err[4096];
} ftlctl_run;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	test_dir_make(f->dir, sizeof f->dir);
	snprintf(f->run_dir, sizeof f->run_dir, "%s/run", f->dir);
	snprintf(f->path, sizeof f->path, "%s/agent.sock", f->run_dir);
	f->agent = fake_agent_start(f->path);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	if (f->agent != NULL)
		fake_agent_stop(f->agent);
	test_dir_remove(f->dir);
	free(f);
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *in = fopen(path, "r");
	size_t n = in != NULL ? fread(buf, 1, len - 1, in) : 0;
	buf[n] = '\0';
	if (in != NULL)
		fclose(in);
}

static void output_paths(const fixture *f, char *out, char *err, size_t len)
{
	snprintf(out, len, "%s/stdout", f->dir);
	snprintf(err, len, "%s/stderr", f->dir);
}

/* Starts ftlctl with args (NULL-terminated), a minimal environment plus env_extra (or NULL), its
 * output going to files in the test directory; optionally as user nobody. */
static pid_t spawn_ftlctl(const fixture *f, const char *env_extra, bool as_nobody, const char *const *args)
{
	char out[160], err[160];
	const char *argv[32] = {FTLCTL_PATH};
	const char *envp[] = {"PATH=/usr/bin:/bin", env_extra, NULL};
	pid_t pid;
	size_t n = 1;
	while (args[n - 1] != NULL && n < 31) {
		argv[n] = args[n - 1];
		n++;
	}
	output_paths(f, out, err, sizeof out);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err_fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(out_fd, STDOUT_FILENO);
		dup2(err_fd, STDERR_FILENO);
		if (as_nobody && (setgroups(0, NULL) != 0 || setgid(NOBODY_ID) != 0 || setuid(NOBODY_ID) != 0))
			_exit(99);
		execve(FTLCTL_PATH, (char *const *)argv, (char *const *)envp);
		_exit(98);
	}
	return pid;
}

/* Waits for ftlctl to exit; kills it and fails the test if it takes longer than RUN_TIMEOUT_MS. */
static int wait_ftlctl(pid_t pid)
{
	long long deadline = now_ms() + RUN_TIMEOUT_MS;
	int status;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("ftlctl did not exit within %d ms", RUN_TIMEOUT_MS);
		}
		usleep(2000);
	}
	if (!WIFEXITED(status))
		fail_msg("ftlctl died of signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

static void collect(const fixture *f, pid_t pid, ftlctl_run *r)
{
	char out[160], err[160];
	r->status = wait_ftlctl(pid);
	output_paths(f, out, err, sizeof out);
	read_file(out, r->out, sizeof r->out);
	read_file(err, r->err, sizeof r->err);
}

static void run_as(const fixture *f, ftlctl_run *r, bool as_nobody, const char *env_extra, ...)
{
	const char *args[30];
	size_t n = 0;
	va_list ap;
	va_start(ap, env_extra);
	while (n < 29 && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	args[n] = NULL;
	va_end(ap);
	collect(f, spawn_ftlctl(f, env_extra, as_nobody, args), r);
}

#define run_ftlctl(f, r, env_extra, ...) run_as(f, r, false, env_extra, __VA_ARGS__, (const char *)NULL)

static void assert_contains(const char *haystack, const char *needle)
{
	if (strstr(haystack, needle) == NULL)
		fail_msg("expected to find \"%s\" in:\n%s", needle, haystack);
}

static void assert_exit(const ftlctl_run *r, int expected)
{
	if (r->status != expected)
		fail_msg("ftlctl exited %d, expected %d\nstdout:\n%s\nstderr:\n%s", r->status, expected, r->out,
			 r->err);
}

static void test_status_prints_header_and_member_table(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	run_ftlctl(f, &r, NULL, "--socket", f->path, "status");
	assert_exit(&r, 0);
	assert_contains(r.out, "cluster      c (profile train)\n");
	assert_contains(r.out, "self         w1 at 127.0.0.1:7946, generation 3, incarnation 0\n");
	assert_contains(r.out, "view         none yet\n");
	assert_contains(r.out, "members      1 alive, 1 suspect, 1 dead, 0 left\n");
	assert_contains(r.out, "health       0 (healthy)\n");
	assert_contains(r.out, "NAME          ADDRESS         STATUS   INCARNATION  GENERATION  LAST-HEARD  RANK\n");
	assert_contains(r.out, "w2            127.0.0.1:7947  suspect  2            1           0.12s       -\n");
	assert_contains(r.out, "worker-three  127.0.0.1:7948  dead     5            2           15.0s       -\n");
}

static void test_status_json_is_the_agents_reply(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	json_t *printed, *expected = fake_agent_status();
	run_ftlctl(f, &r, NULL, "status", "--json", "--socket", f->path); /* options after the command too */
	assert_exit(&r, 0);
	printed = json_loads(r.out, 0, NULL);
	assert_non_null(printed);
	assert_true(json_equal(printed, expected));
	json_decref(printed);
	json_decref(expected);
}

static void test_members_filters_by_status_and_name(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	json_t *printed;

	run_ftlctl(f, &r, NULL, "--socket", f->path, "members", "--status", "suspect,dead");
	assert_exit(&r, 0);
	assert_contains(r.out, "w2 ");
	assert_contains(r.out, "worker-three ");
	assert_null(strstr(r.out, "w1 "));

	run_ftlctl(f, &r, NULL, "--socket", f->path, "members", "--name", "three");
	assert_exit(&r, 0);
	assert_contains(r.out, "worker-three");
	assert_null(strstr(r.out, "w2"));

	run_ftlctl(f, &r, NULL, "--socket", f->path, "members", "--status", "alive", "--json");
	assert_exit(&r, 0);
	printed = json_loads(r.out, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(printed, "members")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(printed, "members"), 0),
								"name")),
			    "w1");
	json_decref(printed);

	run_ftlctl(f, &r, NULL, "--socket", f->path, "members", "--status", "left");
	assert_exit(&r, 0);
	assert_contains(r.err, "no member matches");
}

static void test_usage_errors_exit_2(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	run_ftlctl(f, &r, NULL, "--socket", f->path, "frobnicate");
	assert_exit(&r, 2);
	assert_contains(r.err, "unknown command frobnicate");
	run_ftlctl(f, &r, NULL, "--socket", f->path, "members", "--status", "zombie");
	assert_exit(&r, 2);
	assert_contains(r.err, "unknown status zombie");
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "install", "not-a-key");
	assert_exit(&r, 2);
	assert_contains(r.err, "standard base64");
	run_ftlctl(f, &r, NULL, "--socket", f->path, "events");
	assert_exit(&r, 2);
	run_ftlctl(f, &r, NULL, "--socket", f->path, "leave", "--json");
	assert_exit(&r, 2);
	run_ftlctl(f, &r, NULL, "--socket", f->path, "status", "extra");
	assert_exit(&r, 2);
	run_ftlctl(f, &r, NULL, "--bogus");
	assert_exit(&r, 2);
	run_ftlctl(f, &r, NULL, "--socket", f->path);
	assert_exit(&r, 2);
	assert_contains(r.err, "usage: ftlctl");
	run_ftlctl(f, &r, NULL, "--help");
	assert_exit(&r, 0);
	assert_contains(r.out, "keys install KEY");
}

static void test_keys_list_install_and_refusal(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "list");
	assert_exit(&r, 0);
	assert_contains(r.out, FAKE_PRIMARY_KEY "  (primary)\n");
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "install", FAKE_PRIMARY_KEY);
	assert_exit(&r, 0);
	assert_contains(r.out, "gossip");
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "use", FAKE_PRIMARY_KEY);
	assert_exit(&r, 0);
	/* This agent's `keys list` has no census (an agent from before key fingerprints): nothing to wait on, so
	 * ftlctl asks for the list alone and sends no `use`. */
	int requests = fake_agent_requests(f->agent);
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "use", FAKE_PRIMARY_KEY, "--wait", "5");
	assert_exit(&r, 1);
	assert_contains(r.err, "cannot --wait, so nothing was changed: the agent reports no key census");
	assert_int_equal(fake_agent_requests(f->agent), requests + 1);
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "list", "--wait", "5");
	assert_exit(&r, 2);
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "use", FAKE_PRIMARY_KEY, "--wait", "0");
	assert_exit(&r, 2);
	assert_contains(r.err, "--wait takes seconds");
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "remove", FAKE_UNKNOWN_KEY);
	assert_exit(&r, 1);
	assert_contains(r.err, "the agent refused: that key is not installed");
}

static void test_leave_waits_for_the_late_reply(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	run_ftlctl(f, &r, NULL, "--socket", f->path, "leave");
	assert_exit(&r, 0);
	assert_contains(r.out, "left the cluster");
}

/* The fake agent runs no training job (view null): not ready, exit 1, the reason on stdout for the
 * probe's log. The rule itself is tested in test_readiness.c. */
static void test_ready_exits_1_with_the_reason_when_not_in_a_view(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	run_ftlctl(f, &r, NULL, "--socket", f->path, "ready");
	assert_exit(&r, 1);
	assert_contains(r.out, "not ready: this agent runs no training job (no view)\n");
	run_ftlctl(f, &r, NULL, "--socket", f->path, "ready", "--json");
	assert_exit(&r, 2);
}

/* Waits until the file at path contains needle. */
static void wait_for_output(const char *path, const char *needle)
{
	char text[4096];
	long long deadline = now_ms() + RUN_TIMEOUT_MS;
	for (;;) {
		read_file(path, text, sizeof text);
		if (strstr(text, needle) != NULL)
			return;
		if (now_ms() > deadline)
			fail_msg("\"%s\" never appeared; output so far:\n%s", needle, text);
		usleep(2000);
	}
}

static void follow_events(fixture *f, const char *format_flag, const char *expected_line)
{
	const char *args[] = {"--socket", f->path, "events", "--follow", format_flag, NULL};
	char out[160], err[160];
	ftlctl_run r;
	long long deadline = now_ms() + RUN_TIMEOUT_MS;
	int followers = fake_agent_followers(f->agent);
	pid_t pid = spawn_ftlctl(f, NULL, false, args);
	while (fake_agent_followers(f->agent) == followers) {
		if (now_ms() > deadline)
			fail_msg("ftlctl events never subscribed");
		usleep(2000);
	}
	fake_agent_publish(f->agent, "{\"event\":\"join\",\"name\":\"w4\",\"addr\":\"127.0.0.1:7949\","
				     "\"generation\":1,\"incarnation\":0,\"time\":\"2024-05-01T12:00:00Z\"}");
	output_paths(f, out, err, sizeof out);
	wait_for_output(out, expected_line);
	fake_agent_stop(f->agent); /* the stream ends when the agent goes */
	f->agent = NULL;
	collect(f, pid, &r);
	assert_exit(&r, 0);
	assert_contains(r.err, "closed the event stream");
}

static void test_events_follow_prints_each_event_as_it_happens(void **state)
{
	follow_events(*state, "--follow",
		      "2024-05-01T12:00:00Z  join     w4  127.0.0.1:7949  generation 1  incarnation 0\n");
}

static void test_events_follow_json_prints_one_object_per_line(void **state)
{
	follow_events(*state, "--json", "{\"event\":\"join\",\"name\":\"w4\",\"addr\":\"127.0.0.1:7949\"");
}

static void test_no_agent_exits_3_and_says_where_it_looked(void **state)
{
	fixture *f = *state;
	char missing[160], stale[160], empty_dir[160], env[200];
	ftlctl_run r;

	snprintf(missing, sizeof missing, "%s/nobody-here.sock", f->dir);
	run_ftlctl(f, &r, NULL, "--socket", missing, "status");
	assert_exit(&r, 3);
	assert_contains(r.err, missing);
	assert_contains(r.err, "ftl-agent");

	snprintf(stale, sizeof stale, "%s/stale.sock", f->dir);
	test_dir_make_stale_socket(stale);
	run_ftlctl(f, &r, NULL, "--socket", stale, "status");
	assert_exit(&r, 3);
	assert_contains(r.err, "nothing listens on");

	snprintf(empty_dir, sizeof empty_dir, "%s/empty", f->dir);
	mkdir(empty_dir, 0700);
	snprintf(env, sizeof env, "FTL_RUN_DIR=%s", empty_dir);
	run_ftlctl(f, &r, env, "status");
	assert_exit(&r, 3);
	assert_contains(r.err, empty_dir);
	assert_contains(r.err, "FTL_RUN_DIR");
}

static void test_socket_is_found_by_name_env_or_run_dir_scan(void **state)
{
	fixture *f = *state;
	char env[200], other[160];
	ftlctl_run r;

	snprintf(env, sizeof env, "FTL_RUN_DIR=%s", f->run_dir);
	run_ftlctl(f, &r, env, "members");
	assert_exit(&r, 0); /* the only socket in the run directory */
	run_ftlctl(f, &r, NULL, "--run-dir", f->run_dir, "--name", "agent", "members");
	assert_exit(&r, 0);
	snprintf(env, sizeof env, "FTL_CONTROL_SOCKET=%s", f->path);
	run_ftlctl(f, &r, env, "members");
	assert_exit(&r, 0);

	snprintf(other, sizeof other, "%s/other.sock", f->run_dir);
	test_dir_make_stale_socket(other);
	run_ftlctl(f, &r, NULL, "--run-dir", f->run_dir, "status");
	assert_exit(&r, 2);
	assert_contains(r.err, "agent.sock other.sock");
	assert_contains(r.err, "--name");
	run_ftlctl(f, &r, NULL, "--run-dir", f->run_dir, "--name", "agent", "status");
	assert_exit(&r, 0);
}

static void test_permission_denied_exits_4(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	if (geteuid() == 0) {
		/* root passes any mode check: run ftlctl as nobody, who may reach the socket but not open it */
		chmod(f->dir, 0711);
		chmod(f->run_dir, 0711);
		run_as(f, &r, true, NULL, "--socket", f->path, "status", (const char *)NULL);
	} else {
		chmod(f->path, 0); /* not even its owner may connect now */
		run_ftlctl(f, &r, NULL, "--socket", f->path, "status");
		chmod(f->path, 0600);
	}
	assert_exit(&r, 4);
	/* as nobody, ftlctl refuses root's socket before it connects; as its owner, connect is denied */
	assert_contains(r.err, geteuid() == 0 ? "another user owns it" : "permission denied");
	assert_contains(r.err, "run ftlctl as that user");
}

static void test_ftlctl_refuses_a_socket_owned_by_another_user(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	if (geteuid() != 0) {
		printf("SKIP: ftlctl_refuses_a_socket_owned_by_another_user needs root (to chown to uid 65534)\n");
		skip();
	}
	/* another user swapped in a socket of their own: the key must not go to them */
	assert_int_equal(lchown(f->path, NOBODY_ID, NOBODY_ID), 0);
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "install", FAKE_PRIMARY_KEY);
	assert_exit(&r, 4);
	assert_contains(r.err, "another user owns it");
	assert_contains(r.err, "uid 65534");
	assert_int_equal(fake_agent_requests(f->agent), 0); /* nothing was sent */
}

static void test_ftlctl_refuses_a_socket_in_a_directory_others_can_write(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	assert_int_equal(chmod(f->run_dir, 0777), 0);
	run_ftlctl(f, &r, NULL, "--socket", f->path, "keys", "install", FAKE_PRIMARY_KEY);
	assert_exit(&r, 4);
	assert_contains(r.err, "group or others can write it");
	assert_int_equal(fake_agent_requests(f->agent), 0);
	assert_int_equal(chmod(f->run_dir, 01777), 0); /* sticky, like /tmp: others cannot swap our socket */
	run_ftlctl(f, &r, NULL, "--socket", f->path, "status");
	assert_exit(&r, 0);
}

static void test_keygen_prints_a_fresh_base64_key(void **state)
{
	fixture *f = *state;
	ftlctl_run r;
	char first[64];
	unsigned char key[32];
	size_t key_len = 0;
	run_ftlctl(f, &r, NULL, "keygen");
	assert_exit(&r, 0);
	assert_int_equal(strlen(r.out), 45);
	assert_int_equal(r.out[44], '\n');
	assert_int_equal(sodium_base642bin(key, sizeof key, r.out, 44, NULL, &key_len, NULL,
					   sodium_base64_VARIANT_ORIGINAL),
			 0);
	assert_int_equal(key_len, 32);
	snprintf(first, sizeof first, "%s", r.out);
	run_ftlctl(f, &r, NULL, "keygen");
	assert_string_not_equal(first, r.out);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]); /* ctest runs some behaviours by name */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_status_prints_header_and_member_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_json_is_the_agents_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_members_filters_by_status_and_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_errors_exit_2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_list_install_and_refusal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leave_waits_for_the_late_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ready_exits_1_with_the_reason_when_not_in_a_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_follow_prints_each_event_as_it_happens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_follow_json_prints_one_object_per_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_agent_exits_3_and_says_where_it_looked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_is_found_by_name_env_or_run_dir_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_permission_denied_exits_4, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keygen_prints_a_fresh_base64_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ftlctl_refuses_a_socket_owned_by_another_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ftlctl_refuses_a_socket_in_a_directory_others_can_write, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
