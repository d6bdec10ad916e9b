/* ftl_agent_status: the status `ftlctl status --json` shows, for a caller in this process (the Python
 * package's Agent.status()) without a trip through the control socket. The status reads the loop's own
 * state (the node, the rooms), so the loop builds it: the caller asks under the shared lock and wakes the
 * loop, whose on_wake (agent.c) answers at its next turn with the text; the caller copies it out. One
 * question at a time: a second caller waits for the first's answer to be taken. */
#include "agent_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/deadline.h"

void ftl_agent_status_answer(ftl_agent *a)
{
	pthread_mutex_lock(&a->shared.lock);
	bool is_asked = a->shared.status.is_asked && a->shared.status.text == NULL;
	pthread_mutex_unlock(&a->shared.lock);
	if (!is_asked)
		return;
	json_t *status = ftl_agent_status_json(a);
	char *text = status != NULL ? json_dumps(status, JSON_COMPACT) : NULL;
	json_decref(status);
	pthread_mutex_lock(&a->shared.lock);
	if (a->shared.status.is_asked && a->shared.status.text == NULL) {
		a->shared.status.text = text != NULL ? text : strdup(""); /* "": out of memory, said to the caller */
		text = NULL;
		pthread_cond_broadcast(&a->shared.changed);
	}
	pthread_mutex_unlock(&a->shared.lock);
	free(text); /* the caller gave up waiting meanwhile */
}

/* Under the lock: waits until no other caller's question is open, or the deadline. */
static int wait_for_turn_locked(ftl_agent *a, const struct timespec *until)
{
	int rc = 0;
	while (a->shared.status.is_asked && !a->shared.is_stopped && rc == 0)
		rc = pthread_cond_timedwait(&a->shared.changed, &a->shared.lock, until);
	return rc;
}

ftl_err ftl_agent_status(ftl_agent *a, char *buf, size_t cap, size_t *len, int timeout_ms)
{
	*len = 0;
	if (!a->is_started)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_agent_status: the agent is not started (ftl_agent_start)");
	if (uv_thread_equal(&(uv_thread_t){uv_thread_self()}, &a->thread))
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_agent_status: called on the agent's own thread (an event "
				    "callback), which is the one that would build it");
	struct timespec until = ftl_deadline_monotonic_in((int64_t)timeout_ms * 1000); /* a->shared.changed's clock */
	pthread_mutex_lock(&a->shared.lock);
	int rc = wait_for_turn_locked(a, &until);
	if (rc == 0 && !a->shared.is_stopped) {
		a->shared.status.is_asked = true;
		uv_async_send(&a->wake);
		while (a->shared.status.text == NULL && !a->shared.is_stopped && rc == 0)
			rc = pthread_cond_timedwait(&a->shared.changed, &a->shared.lock, &until);
	}
	char *text = a->shared.status.text;
	bool is_ours = a->shared.status.is_asked, is_stopped = a->shared.is_stopped;
	if (is_ours && (text != NULL || is_stopped || rc != 0)) { /* this question is over, answered or not */
		a->shared.status.is_asked = false;
		a->shared.status.text = NULL;
		pthread_cond_broadcast(&a->shared.changed);
	}
	pthread_mutex_unlock(&a->shared.lock);
	ftl_err e = FTL_OK;
	if (text == NULL)
		e = is_stopped ? ftl_diag_set(FTL_ERR_ABORTED, "ftl_agent_status: the agent has stopped")
			       : ftl_diag_set(FTL_ERR_TIMEOUT, "ftl_agent_status: the agent's loop did not answer within "
					      "%d ms", timeout_ms);
	else if (text[0] == '\0')
		e = ftl_diag_set(FTL_ERR_SYSTEM, "ftl_agent_status: out of memory for the status");
	else if ((*len = strlen(text)) >= cap)
		e = ftl_diag_set(FTL_ERR_INVALID, "ftl_agent_status: the status is %zu bytes and the buffer holds %zu; "
				 "call again with a larger one", *len + 1, cap);
	else
		memcpy(buf, text, *len + 1);
	free(text);
	return e;
}
