/* What the control socket's clients hear from the agent between their requests: membership events and the
 * agent's own notices on the `ftlctl events` stream, and the late answer of `ftlctl leave`, held until the
 * leave has been gossiped. Below every room that tells them something (the drain, the rendezvous, the
 * requests' handler in agent_control.c), so none of those calls back up. */
#include "agent_internal.h"

#include <time.h>

static void utc_now(char *when, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(when, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void ftl_agent_control_event(ftl_agent *a, const ftl_swim_event *ev)
{
	if (!a->control.server)
		return;
	char when[32];
	utc_now(when, sizeof(when));
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:s}", "event", ftl_swim_event_type_strs[ev->type], "name",
			      ev->name, "addr", ev->addr, "generation", (json_int_t)ev->generation, "incarnation",
			      (json_int_t)ev->incarnation, "time", when);
	if (ev->type == FTL_EVENT_DEAD) { /* which path declared it; readers ignore keys they do not know */
		json_object_set_new(j, "reason", json_string(ftl_death_reason_strs[ev->reason]));
		json_object_set_new(j, "from", json_string(ev->from));
	}
	if (ev->type == FTL_EVENT_NAME_REFUSED || ev->type == FTL_EVENT_NAME_TAKEN) { /* who holds the name, who said so */
		json_object_set_new(j, "holder_addr", json_string(ev->holder_addr));
		json_object_set_new(j, "from", json_string(ev->from));
	}
	ftl_control_publish(a->control.server, j);
	json_decref(j);
}

void ftl_agent_control_notice(ftl_agent *a, const char *event, json_t *fields)
{
	if (!a->control.server) {
		json_decref(fields);
		return;
	}
	char when[32];
	utc_now(when, sizeof(when));
	json_object_set_new(fields, "event", json_string(event));
	json_object_set_new(fields, "name", json_string(a->cfg.name));
	json_object_set_new(fields, "time", json_string(when));
	ftl_control_publish(a->control.server, fields);
	json_decref(fields);
}

bool ftl_agent_control_hold_leave(ftl_agent *a, ftl_control_client *client)
{
	if (a->control.n_leave_clients == (int)(sizeof(a->control.leave_clients) / sizeof(a->control.leave_clients[0])))
		return false;
	a->control.leave_clients[a->control.n_leave_clients++] = client;
	return true;
}

void ftl_agent_control_left(ftl_agent *a)
{
	for (int i = 0; a->control.server && i < a->control.n_leave_clients; i++)
		ftl_control_reply(a->control.server, a->control.leave_clients[i], ftl_control_ok());
	a->control.n_leave_clients = 0;
}
