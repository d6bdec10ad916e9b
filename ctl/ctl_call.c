/* One request, one checked reply (see ctl_call.h). */
#include "ctl_call.h"

#include "ctl_exit.h"

#include <stdio.h>

int ctl_call(const ctl_target *target, json_t *request, int timeout_ms, json_t **reply, ctl_conn *conn,
	     char *refusal, size_t refusal_len)
{
	char path[4096];
	int rc = ctl_choose_socket(target, path, sizeof path);
	*reply = NULL;
	if (refusal != NULL && refusal_len > 0)
		refusal[0] = '\0';
	if (request == NULL) {
		fprintf(stderr, "ftlctl: out of memory building the request\n");
		return CTL_EXIT_FAILED;
	}
	if (rc == CTL_EXIT_OK)
		rc = ctl_conn_open(conn, path);
	if (rc == CTL_EXIT_OK)
		rc = ctl_conn_call(conn, request, timeout_ms, reply);
	json_decref(request);
	if (rc == CTL_EXIT_OK && !json_is_true(json_object_get(*reply, "ok"))) {
		const char *error = json_string_value(json_object_get(*reply, "error"));
		if (refusal != NULL)
			snprintf(refusal, refusal_len, "%s", error != NULL ? error : "");
		else
			fprintf(stderr, "ftlctl: the agent refused: %s\n", error != NULL ? error : "(no reason given)");
		rc = CTL_EXIT_FAILED;
	}
	if (rc != CTL_EXIT_OK) {
		json_decref(*reply);
		*reply = NULL;
	}
	return rc;
}

int ctl_call_once(const ctl_target *target, json_t *request, int timeout_ms, json_t **reply, char *refusal,
		  size_t refusal_len)
{
	ctl_conn conn = {.fd = -1};
	int rc = ctl_call(target, request, timeout_ms, reply, &conn, refusal, refusal_len);
	ctl_conn_close(&conn);
	return rc;
}

int ctl_scale_max(const ctl_target *target, long max_workers, char *refusal, size_t refusal_len)
{
	json_t *reply;
	int rc = ctl_call_once(target, json_pack("{s:s, s:I}", "cmd", "scale", "max", (json_int_t)max_workers),
			       CTL_REPLY_TIMEOUT_MS, &reply, refusal, refusal_len);
	json_decref(reply);
	return rc;
}
