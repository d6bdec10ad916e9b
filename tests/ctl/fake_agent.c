/* The stand-in agent for the control tests (see fake_agent.h): the real control server on a loop
 * thread, canned replies, and a thread-safe way in for publishing events and stopping. */
#include "fake_agent.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/control.h"

#define BIG_REPLY_BYTES (4u << 20)

static const char canned_status[] =
	"{\"ok\":true,\"cluster\":\"c\",\"profile\":\"train\","
	"\"self\":{\"name\":\"w1\",\"addr\":\"127.0.0.1:7946\",\"generation\":3,\"incarnation\":0},"
	"\"view\":null,\"health\":0,\"counts\":{\"alive\":1,\"suspect\":1,\"dead\":1,\"left\":0},"
	"\"members\":["
	"{\"name\":\"w1\",\"addr\":\"127.0.0.1:7946\",\"status\":\"alive\",\"incarnation\":0,\"generation\":3,"
	"\"last_heard_ms\":0,\"rank\":null},"
	"{\"name\":\"w2\",\"addr\":\"127.0.0.1:7947\",\"status\":\"suspect\",\"incarnation\":2,\"generation\":1,"
	"\"last_heard_ms\":120,\"rank\":null},"
	"{\"name\":\"worker-three\",\"addr\":\"127.0.0.1:7948\",\"status\":\"dead\",\"incarnation\":5,"
	"\"generation\":2,\"last_heard_ms\":15000,\"rank\":null}],"
	"\"counters\":{\"sent\":{\"ping\":10,\"ack\":9},\"received\":{\"ping\":9,\"ack\":10},"
	"\"dropped\":{\"keyring\":1,\"malformed\":2,\"wrong_target\":0,\"unknown_seq\":0,\"push_pull\":0},"
	"\"keyring_dropped\":{\"truncated\":0,\"bad_mode\":0,\"bad_mac\":1,\"too_long\":0},"
	"\"packets_sent\":19,\"bytes_sent\":2048,\"packets_received\":19,\"bytes_received\":2000,"
	"\"probes\":10,\"probes_failed\":1,\"refutations\":0,\"push_pulls\":1}}";

/* A leave waiting for its late reply. */
typedef struct pending_leave {
	uv_timer_t timer;
	fake_agent *agent;
	ftl_control_client *client;
	struct pending_leave *next;
} pending_leave;

struct fake_agent {
	uv_loop_t loop;
	uv_async_t wake;
	ftl_control *control;
	pending_leave *leaves;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	char *event_to_publish; /* under lock: handed to the loop, NULL once published */
	bool is_stopping;       /* under lock */
	int followers;          /* under lock */
	int requests;           /* under lock: every request handled */
};

json_t *fake_agent_status(void)
{
	json_error_t error;
	json_t *status = json_loads(canned_status, 0, &error);
	assert_non_null(status);
	return status;
}

static void leave_closed_cb(uv_handle_t *handle)
{
	free(handle->data);
}

static void forget_leave(pending_leave *leave)
{
	pending_leave **p = &leave->agent->leaves;
	while (*p != leave)
		p = &(*p)->next;
	*p = leave->next;
	uv_close((uv_handle_t *)&leave->timer, leave_closed_cb);
}

static void leave_due_cb(uv_timer_t *timer)
{
	pending_leave *leave = timer->data;
	ftl_control_reply(leave->agent->control, leave->client, ftl_control_ok());
	forget_leave(leave);
}

static json_t *start_leave(fake_agent *agent, ftl_control_client *client)
{
	pending_leave *leave = calloc(1, sizeof *leave);
	assert_non_null(leave);
	leave->agent = agent;
	leave->client = client;
	leave->next = agent->leaves;
	agent->leaves = leave;
	uv_timer_init(&agent->loop, &leave->timer);
	leave->timer.data = leave;
	uv_timer_start(&leave->timer, leave_due_cb, FAKE_LEAVE_DELAY_MS, 0);
	return NULL;
}

static json_t *keys_reply(const json_t *request)
{
	const char *op = json_string_value(json_object_get(request, "op"));
	const char *key = json_string_value(json_object_get(request, "key"));
	if (op != NULL && strcmp(op, "list") == 0)
		return json_pack("{s:b, s:[s, s]}", "ok", 1, "keys", FAKE_PRIMARY_KEY,
				 "ZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmY=");
	if (key == NULL)
		return ftl_control_refusal("keys: missing key");
	if (strcmp(key, FAKE_UNKNOWN_KEY) == 0)
		return ftl_control_refusal("that key is not installed; see `ftlctl keys list`");
	return ftl_control_ok();
}

static json_t *big_reply(void)
{
	char *filler = malloc(BIG_REPLY_BYTES + 1);
	json_t *reply;
	assert_non_null(filler);
	memset(filler, 'x', BIG_REPLY_BYTES);
	filler[BIG_REPLY_BYTES] = '\0';
	reply = json_pack("{s:b, s:s}", "ok", 1, "filler", filler);
	free(filler);
	return reply;
}

static json_t *handle_request(void *ctx, ftl_control_client *client, const json_t *request, bool *is_stream)
{
	fake_agent *agent = ctx;
	const char *cmd = json_string_value(json_object_get(request, "cmd"));
	json_t *status;

	pthread_mutex_lock(&agent->lock);
	agent->requests++;
	pthread_mutex_unlock(&agent->lock);

	if (cmd == NULL)
		return ftl_control_refusal("missing cmd");
	if (strcmp(cmd, "status") == 0)
		return fake_agent_status();
	if (strcmp(cmd, "members") == 0) {
		status = fake_agent_status();
		json_t *reply = json_pack("{s:b, s:O}", "ok", 1, "members", json_object_get(status, "members"));
		json_decref(status);
		return reply;
	}
	if (strcmp(cmd, "leave") == 0)
		return start_leave(agent, client);
	if (strcmp(cmd, "events") == 0) {
		*is_stream = true;
		pthread_mutex_lock(&agent->lock);
		agent->followers++;
		pthread_mutex_unlock(&agent->lock);
		return ftl_control_ok();
	}
	if (strcmp(cmd, "keys") == 0)
		return keys_reply(request);
	if (strcmp(cmd, "echo") == 0)
		return json_pack("{s:b, s:O}", "ok", 1, "echo", request);
	if (strcmp(cmd, "big") == 0)
		return big_reply();
	return ftl_control_refusal("unknown command");
}

static void wake_cb(uv_async_t *wake)
{
	fake_agent *agent = wake->data;
	pthread_mutex_lock(&agent->lock);
	if (agent->event_to_publish != NULL) {
		json_t *event = json_loads(agent->event_to_publish, 0, NULL);
		ftl_control_publish(agent->control, event);
		json_decref(event);
		free(agent->event_to_publish);
		agent->event_to_publish = NULL;
		pthread_cond_broadcast(&agent->changed);
	}
	if (agent->is_stopping) {
		ftl_control_close(agent->control);
		while (agent->leaves != NULL)
			forget_leave(agent->leaves);
		uv_close((uv_handle_t *)&agent->wake, NULL);
	}
	pthread_mutex_unlock(&agent->lock);
}

static void *loop_main(void *arg)
{
	fake_agent *agent = arg;
	uv_run(&agent->loop, UV_RUN_DEFAULT);
	return NULL;
}

fake_agent *fake_agent_start(const char *path)
{
	fake_agent *agent = calloc(1, sizeof *agent);
	assert_non_null(agent);
	assert_int_equal(uv_loop_init(&agent->loop), 0);
	uv_async_init(&agent->loop, &agent->wake, wake_cb);
	agent->wake.data = agent;
	pthread_mutex_init(&agent->lock, NULL);
	pthread_cond_init(&agent->changed, NULL);
	agent->control = ftl_control_start(&agent->loop, path, handle_request, agent);
	if (agent->control == NULL)
		fail_msg("the control server did not start: %s", ftl_diag_message());
	assert_int_equal(pthread_create(&agent->thread, NULL, loop_main, agent), 0);
	return agent;
}

void fake_agent_publish(fake_agent *agent, const char *event_json)
{
	pthread_mutex_lock(&agent->lock);
	while (agent->event_to_publish != NULL)
		pthread_cond_wait(&agent->changed, &agent->lock);
	agent->event_to_publish = strdup(event_json);
	uv_async_send(&agent->wake);
	while (agent->event_to_publish != NULL)
		pthread_cond_wait(&agent->changed, &agent->lock);
	pthread_mutex_unlock(&agent->lock);
}

int fake_agent_followers(fake_agent *agent)
{
	int followers;
	pthread_mutex_lock(&agent->lock);
	followers = agent->followers;
	pthread_mutex_unlock(&agent->lock);
	return followers;
}

void fake_agent_stop(fake_agent *agent)
{
	pthread_mutex_lock(&agent->lock);
	agent->is_stopping = true;
	uv_async_send(&agent->wake);
	pthread_mutex_unlock(&agent->lock);
	pthread_join(agent->thread, NULL);
	assert_int_equal(uv_loop_close(&agent->loop), 0);
	pthread_mutex_destroy(&agent->lock);
	pthread_cond_destroy(&agent->changed);
	free(agent);
}

int fake_agent_requests(fake_agent *agent)
{
	pthread_mutex_lock(&agent->lock);
	int requests = agent->requests;
	pthread_mutex_unlock(&agent->lock);
	return requests;
}
