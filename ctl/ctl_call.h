/* One request to the agent ftlctl was pointed at: pick the socket (socket_choice.h), connect, send, read the
 * reply and check its "ok". Shared by ftlctl's commands and follow-replicas, which must take a refusal
 * quietly (a spare's agent refuses `scale`) where a command prints it: hence the refusal buffer. */
#ifndef FTL_CTL_CALL_H
#define FTL_CTL_CALL_H

#include "ctl_conn.h"
#include "socket_choice.h"

#include <jansson.h>
#include <stddef.h>

/* Sends request (taken: freed here) and on CTL_EXIT_OK leaves the reply in *reply (the caller frees it) and
 * conn open for more (events). An ok:false reply is CTL_EXIT_FAILED: its reason goes into refusal when
 * refusal is not NULL ("" if none was given), else to stderr. Other failures are printed and returned
 * (ctl_exit.h); refusal is then "". */
int ctl_call(const ctl_target *target, json_t *request, int timeout_ms, json_t **reply, ctl_conn *conn,
	     char *refusal, size_t refusal_len);
/* The same on a connection of its own, closed before it returns. */
int ctl_call_once(const ctl_target *target, json_t *request, int timeout_ms, json_t **reply, char *refusal,
		  size_t refusal_len);
/* `scale --max N`: asks the agent to make the job's maximum max_workers from the next view on, agreed by the
 * rendezvous like any view (the agent refuses off a view, e.g. on a spare, or below FTL_MIN_WORKERS). */
int ctl_scale_max(const ctl_target *target, long max_workers, char *refusal, size_t refusal_len);

#endif
