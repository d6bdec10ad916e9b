/* The control server's promises (agent/control.h): a private socket (0600, in a 0700 run directory it
 * creates), one JSON reply line per request line in order, errors that keep the connection for bad
 * JSON and close it for an overlong line, stale sockets replaced but live agents never stolen from,
 * events to every follower, late replies in order and harmless after the client has gone. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "agent/control.h"
#include "agent/control_follower.h"
#include "fake_agent.h"
#include "line_client.h"
#include "test_dirs.h"

typedef struct fixture {
	char dir[64];
	char path[128];
	fake_agent *agent;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	test_dir_make(f->dir, sizeof f->dir);
	snprintf(f->path, sizeof f->path, "%s/run/ftl/agent.sock", f->dir); /* run/ftl does not exist yet */
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

static void assert_ok(json_t *reply)
{
	if (!json_is_true(json_object_get(reply, "ok"))) {
		char *text = json_dumps(reply, 0);
		fail_msg("expected an ok reply, got %s", text);
	}
}

/* Reads one reply, checks ok:false and that its error mentions needle. */
static void expect_error(line_client *client, const char *needle)
{
	json_t *reply = line_client_read_json(client);
	const char *error = json_string_value(json_object_get(reply, "error"));
	assert_true(json_is_false(json_object_get(reply, "ok")));
	assert_non_null(error);
	if (strstr(error, needle) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", error, needle);
	json_decref(reply);
}

/* Sends {"cmd":"echo","id":id} and checks the echo comes back. */
static void expect_echo(line_client *client, int id)
{
	char request[64];
	json_t *reply;
	snprintf(request, sizeof request, "{\"cmd\":\"echo\",\"id\":%d}\n", id);
	line_client_send(client, request);
	reply = line_client_read_json(client);
	assert_ok(reply);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(reply, "echo"), "id")), id);
	json_decref(reply);
}

static void test_socket_is_private_and_run_dir_is_created_0700(void **state)
{
	fixture *f = *state;
	char run_dir[160];
	struct stat st;
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(run_dir, sizeof run_dir, "%s/run/ftl", f->dir);
	assert_int_equal(stat(run_dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

static void test_each_request_line_gets_one_reply_line_in_order(void **state)
{
	fixture *f = *state;
	line_client client;
	json_t *reply;
	line_client_open(&client, f->path);
	expect_echo(&client, 1);
	/* pipelined in one write, a blank line and a CRLF among them */
	line_client_send(&client, "{\"cmd\":\"echo\",\"id\":2}\n\n{\"cmd\":\"echo\",\"id\":3}\r\n{\"cmd\":\"status\"}\n");
	for (int id = 2; id <= 3; id++) {
		reply = line_client_read_json(&client);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(reply, "echo"), "id")), id);
		json_decref(reply);
	}
	reply = line_client_read_json(&client);
	json_t *expected = fake_agent_status();
	assert_true(json_equal(reply, expected));
	json_decref(expected);
	json_decref(reply);
	line_client_close(&client);
}

static void test_malformed_json_gets_an_error_and_the_connection_stays(void **state)
{
	fixture *f = *state;
	line_client client;
	line_client_open(&client, f->path);
	line_client_send(&client, "{\"cmd\": nope\n");
	expect_error(&client, "malformed JSON");
	line_client_send(&client, "[\"status\"]\n");
	expect_error(&client, "must be a JSON object");
	line_client_send(&client, "{\"cmd\":\"no-such-command\"}\n");
	expect_error(&client, "unknown command");
	expect_echo(&client, 7);
	line_client_close(&client);
}

static void test_line_of_exactly_max_length_is_accepted(void **state)
{
	fixture *f = *state;
	line_client client;
	const char *request = "{\"cmd\":\"echo\",\"id\":8}";
	char *line = malloc(FTL_CONTROL_MAX_LINE + 2);
	json_t *reply;
	memset(line, ' ', FTL_CONTROL_MAX_LINE);
	memcpy(line, request, strlen(request));
	line[FTL_CONTROL_MAX_LINE] = '\n';
	line[FTL_CONTROL_MAX_LINE + 1] = '\0';
	line_client_open(&client, f->path);
	line_client_send(&client, line);
	reply = line_client_read_json(&client);
	assert_ok(reply);
	json_decref(reply);
	free(line);
	line_client_close(&client);
}

static void test_overlong_line_gets_an_error_and_is_closed(void **state)
{
	fixture *f = *state;
	line_client client;
	char *line = malloc(FTL_CONTROL_MAX_LINE + 2);
	memset(line, 'a', FTL_CONTROL_MAX_LINE + 1);
	line[FTL_CONTROL_MAX_LINE + 1] = '\0';
	line_client_open(&client, f->path);
	line_client_send(&client, line);
	expect_error(&client, "longer than");
	line_client_expect_closed(&client);
	free(line);
	line_client_close(&client);
	line_client_open(&client, f->path); /* the server itself carries on */
	expect_echo(&client, 9);
	line_client_close(&client);
}

static void test_many_clients_are_served_at_once(void **state)
{
	enum { CLIENTS = 40 };
	fixture *f = *state;
	line_client *clients = calloc(CLIENTS, sizeof *clients);
	for (int i = 0; i < CLIENTS; i++)
		line_client_open(&clients[i], f->path);
	for (int i = CLIENTS - 1; i >= 0; i--)
		expect_echo(&clients[i], i);
	for (int i = 0; i < CLIENTS; i++)
		line_client_close(&clients[i]);
	free(clients);
}

static void test_client_that_hangs_up_mid_reply_does_not_hurt_the_server(void **state)
{
	fixture *f = *state;
	line_client client;
	for (int i = 0; i < 3; i++) {
		line_client_open(&client, f->path);
		line_client_send(&client, "{\"cmd\":\"big\"}\n");
		line_client_close(&client); /* never reads the 4 MiB reply */
	}
	line_client_open(&client, f->path);
	expect_echo(&client, 10);
	line_client_close(&client);
}

static void test_half_closed_client_still_gets_its_reply(void **state)
{
	fixture *f = *state;
	line_client client;
	json_t *reply;
	line_client_open(&client, f->path);
	line_client_send(&client, "{\"cmd\":\"echo\",\"id\":11}"); /* no newline: EOF ends the line */
	shutdown(client.fd, SHUT_WR);
	reply = line_client_read_json(&client);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(reply, "echo"), "id")), 11);
	json_decref(reply);
	line_client_expect_closed(&client);
	line_client_close(&client);
}

static void test_late_reply_comes_before_later_requests(void **state)
{
	fixture *f = *state;
	line_client client;
	json_t *reply;
	line_client_open(&client, f->path);
	line_client_send(&client, "{\"cmd\":\"leave\"}\n{\"cmd\":\"echo\",\"id\":12}\n");
	reply = line_client_read_json(&client);
	assert_ok(reply);
	assert_null(json_object_get(reply, "echo")); /* the leave's reply, not the echo */
	json_decref(reply);
	reply = line_client_read_json(&client);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(reply, "echo"), "id")), 12);
	json_decref(reply);
	line_client_close(&client);
}

static void test_late_reply_to_a_client_that_has_gone_is_dropped(void **state)
{
	fixture *f = *state;
	line_client client;
	line_client_open(&client, f->path);
	line_client_send(&client, "{\"cmd\":\"leave\"}\n{\"cmd\":\"echo\",\"id\":13}\n");
	line_client_close(&client); /* gone before the reply, with a request still queued behind it */
	usleep(3 * FAKE_LEAVE_DELAY_MS * 1000);
	line_client_open(&client, f->path);
	expect_echo(&client, 14);
	line_client_close(&client);
}

static void test_published_events_reach_every_follower_only(void **state)
{
	fixture *f = *state;
	line_client followers[2], bystander;
	json_t *reply;
	for (int i = 0; i < 2; i++) {
		line_client_open(&followers[i], f->path);
		line_client_send(&followers[i], "{\"cmd\":\"events\"}\n");
		reply = line_client_read_json(&followers[i]);
		assert_ok(reply);
		json_decref(reply);
	}
	line_client_open(&bystander, f->path);
	expect_echo(&bystander, 15);
	fake_agent_publish(f->agent, "{\"event\":\"join\",\"name\":\"w4\"}");
	fake_agent_publish(f->agent, "{\"event\":\"dead\",\"name\":\"w2\"}");
	for (int i = 0; i < 2; i++) {
		json_t *join = line_client_read_json(&followers[i]);
		json_t *dead = line_client_read_json(&followers[i]);
		assert_string_equal(json_string_value(json_object_get(join, "event")), "join");
		assert_string_equal(json_string_value(json_object_get(dead, "event")), "dead");
		json_decref(join);
		json_decref(dead);
	}
	expect_echo(&bystander, 16); /* its next line is its own reply, no event in between */
	line_client_close(&followers[0]);
	fake_agent_publish(f->agent, "{\"event\":\"left\",\"name\":\"w4\"}"); /* one follower gone */
	reply = line_client_read_json(&followers[1]);
	assert_string_equal(json_string_value(json_object_get(reply, "event")), "left");
	json_decref(reply);
	line_client_close(&followers[1]);
	line_client_close(&bystander);
}

/* A follower that stops reading used to be written to until 4 MiB waited for it (50 of them: 274 MiB,
 * kept after they closed). Past FTL_CONTROL_FOLLOWER_BACKLOG events behind it is dropped: what it reads
 * when it wakes (the events already in the socket) ends with a line saying so, then the connection
 * closes; others are served throughout. */
static void test_events_follower_that_never_reads_is_dropped_with_a_final_line(void **state)
{
	fixture *f = *state;
	line_client stuck, bystander;
	line_client_open(&stuck, f->path);
	int small = 4096;
	setsockopt(stuck.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
	line_client_send(&stuck, "{\"cmd\":\"events\"}\n");
	json_t *reply = line_client_read_json(&stuck);
	assert_ok(reply);
	json_decref(reply);
	char event[1100];
	int n = snprintf(event, sizeof event, "{\"event\":\"update\",\"name\":\"w4\",\"pad\":\"");
	memset(event + n, 'x', 1000);
	snprintf(event + n + 1000, sizeof event - (size_t)n - 1000, "\"}");
	/* the socket buffers take a few hundred KiB of these; the backlog then fills */
	const int published = FTL_CONTROL_FOLLOWER_BACKLOG + 2000;
	for (int i = 0; i < published; i++)
		fake_agent_publish(f->agent, event);
	line_client_open(&bystander, f->path);
	expect_echo(&bystander, 30);
	int events = 0;
	for (;;) {
		json_t *line = line_client_read_json(&stuck);
		if (json_object_get(line, "event")) {
			events++;
			json_decref(line);
			continue;
		}
		assert_true(json_is_false(json_object_get(line, "ok")));
		assert_true(json_is_true(json_object_get(line, "dropped")));
		const char *error = json_string_value(json_object_get(line, "error"));
		if (!error || !strstr(error, "fell 1024 events behind"))
			fail_msg("the final line does not say why: %s", error ? error : "(none)");
		json_decref(line);
		break;
	}
	printf("the stuck follower read %d of %d events, then the final line\n", events, published);
	/* what the socket buffers and the write in flight held; the backlog was let go at the drop */
	assert_true(events > 0 && events < published);
	line_client_expect_closed(&stuck);
	line_client_close(&stuck);
	line_client_close(&bystander);
}

static void test_stale_socket_file_is_replaced(void **state)
{
	fixture *f = *state;
	line_client client;
	fake_agent_stop(f->agent);
	f->agent = NULL;
	test_dir_make_stale_socket(f->path);
	f->agent = fake_agent_start(f->path);
	line_client_open(&client, f->path);
	expect_echo(&client, 17);
	line_client_close(&client);
}

/* Starts a second server on path on a loop of its own; expects it refused with a message about why. */
static void expect_start_refused(const char *path, const char *needle)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	assert_null(ftl_control_start(&loop, path, NULL, NULL));
	char err[512];
	snprintf(err, sizeof err, "%s", ftl_diag_message());
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	if (strstr(err, needle) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
}

static void test_second_server_on_a_live_socket_is_refused(void **state)
{
	fixture *f = *state;
	line_client client;
	char file[160];
	expect_start_refused(f->path, "another agent is listening on");
	line_client_open(&client, f->path); /* the first one is untouched */
	expect_echo(&client, 18);
	line_client_close(&client);
	snprintf(file, sizeof file, "%s/not-a-socket", f->dir);
	fclose(fopen(file, "w"));
	expect_start_refused(file, "is not a socket");
}

static void test_close_removes_the_socket_file(void **state)
{
	fixture *f = *state;
	line_client follower;
	json_t *reply;
	line_client_open(&follower, f->path);
	line_client_send(&follower, "{\"cmd\":\"events\"}\n");
	reply = line_client_read_json(&follower);
	json_decref(reply);
	fake_agent_stop(f->agent);
	f->agent = NULL;
	assert_int_equal(access(f->path, F_OK), -1);
	line_client_expect_closed(&follower);
	line_client_close(&follower);
}

static void test_close_leaves_a_socket_file_that_is_not_its_own(void **state)
{
	fixture *f = *state;
	unlink(f->path); /* someone removed ours, and another agent bound the path since */
	test_dir_make_stale_socket(f->path);
	fake_agent_stop(f->agent);
	f->agent = NULL;
	assert_int_equal(access(f->path, F_OK), 0);
}

static void test_control_request_with_duplicate_keys_is_refused(void **state)
{
	fixture *f = *state;
	line_client client;
	line_client_open(&client, f->path);
	line_client_send(&client, "{\"cmd\":\"echo\",\"cmd\":\"leave\"}\n");
	expect_error(&client, "duplicate");
	expect_echo(&client, 19); /* the connection stays */
	line_client_close(&client);
}

static void test_run_dir_writable_by_others_is_refused(void **state)
{
	fixture *f = *state;
	char dir[160], path[200];
	snprintf(dir, sizeof dir, "%s/shared", f->dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 0777), 0); /* made by someone else's umask, or on purpose */
	snprintf(path, sizeof path, "%s/agent.sock", dir);
	expect_start_refused(path, "group or others can write it");
	expect_start_refused(path, "mode 0777");
	assert_int_equal(access(path, F_OK), -1); /* nothing was bound there */
}

static void test_run_dir_owned_by_another_user_is_refused(void **state)
{
	fixture *f = *state;
	char dir[160], path[200];
	if (geteuid() != 0) {
		printf("SKIP: run_dir_owned_by_another_user_is_refused needs root (to chown to uid 65534)\n");
		skip();
	}
	snprintf(dir, sizeof dir, "%s/theirs", f->dir);
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(chown(dir, 65534, 65534), 0); /* another user made /tmp/ftl-<uid> first */
	snprintf(path, sizeof path, "%s/agent.sock", dir);
	expect_start_refused(path, "another user owns it");
	expect_start_refused(path, "uid 65534");
	expect_start_refused(path, "FTL_RUN_DIR");
	assert_int_equal(access(path, F_OK), -1);
}

/* Sends status requests as fast as the server takes them, never reading a reply; returns the bytes it
 * got out before no more could be sent for a second (or all of them). */
static size_t pipeline_without_reading(const char *path, size_t requests, int *fd_out)
{
	static const char request[] = "{\"cmd\":\"status\"}\n";
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char chunk[17 * 1024];
	size_t sent = 0, total = requests * (sizeof request - 1);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(strlen(path) < sizeof addr.sun_path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (size_t k = 0; k < sizeof chunk / (sizeof request - 1); k++)
		memcpy(chunk + k * (sizeof request - 1), request, sizeof request - 1);
	while (sent < total) {
		size_t want = total - sent < sizeof chunk ? total - sent : sizeof chunk;
		ssize_t n = send(fd, chunk, want, MSG_NOSIGNAL);
		if (n > 0) {
			sent += (size_t)n;
			continue;
		}
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		if (poll(&p, 1, 1000) == 0)
			break; /* the server stopped reading us */
	}
	*fd_out = fd;
	return sent;
}

static void test_control_client_that_never_reads_is_paused(void **state)
{
	fixture *f = *state;
	const size_t requests = 1000000;
	int flooder;
	size_t sent = pipeline_without_reading(f->path, requests, &flooder);
	printf("a client that never reads got %zu of %zu bytes of requests in before it was paused\n", sent,
	       requests * 17);
	/* The requests behind 2 MiB of queued replies, one input line and the socket buffers: about 0.2 MB
	 * here. Without the pause the server kept reading (4 MB in before this loop stalled, and growing). */
	assert_true(sent < 1u << 20);
	line_client other;
	line_client_open(&other, f->path); /* others are still answered */
	line_client_send(&other, "{\"cmd\":\"status\"}\n");
	json_t *reply = line_client_read_json(&other);
	assert_ok(reply);
	json_decref(reply);
	line_client_close(&other);
	close(flooder);
	line_client_open(&other, f->path);
	expect_echo(&other, 20);
	line_client_close(&other);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]); /* ctest runs some behaviours by name */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_socket_is_private_and_run_dir_is_created_0700, setup, teardown),
		cmocka_unit_test_setup_teardown(test_each_request_line_gets_one_reply_line_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_json_gets_an_error_and_the_connection_stays, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_line_of_exactly_max_length_is_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlong_line_gets_an_error_and_is_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_clients_are_served_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_that_hangs_up_mid_reply_does_not_hurt_the_server, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_half_closed_client_still_gets_its_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_reply_comes_before_later_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_reply_to_a_client_that_has_gone_is_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_published_events_reach_every_follower_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_follower_that_never_reads_is_dropped_with_a_final_line, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stale_socket_file_is_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_server_on_a_live_socket_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_removes_the_socket_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_leaves_a_socket_file_that_is_not_its_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_request_with_duplicate_keys_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_dir_writable_by_others_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_dir_owned_by_another_user_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_client_that_never_reads_is_paused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
