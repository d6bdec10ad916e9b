/* The control socket: a Unix stream socket per agent, mode 0600 (only its owner, and root, may talk to
 * it), on the agent's libuv loop. No control over the network.
 *
 * Protocol: newline-delimited JSON. A client writes one request object per line and reads one reply
 * object per line. Replies carry "ok": true, or "ok": false with "error" (a sentence saying what is
 * wrong and what to do). A request {"cmd": "events"} turns the connection into a stream: the server
 * first replies {"ok": true}, then writes one line per membership event until the client hangs up. A
 * follower that falls FTL_CONTROL_FOLLOWER_BACKLOG (1024) events behind is dropped: its last line is
 * {"ok":false,"dropped":true,"error":"..."}, then the connection closes (control_follower.h).
 * Requests (the handler, agent_control.c, defines their replies; ctl/ftlctl.c is the client):
 *   {"cmd":"status"}                       header, counts, members, counters
 *   {"cmd":"members"}                      the member rows only
 *   {"cmd":"leave"}                        graceful leave; replies once the leave has been gossiped
 *   {"cmd":"events"}                       stream of events
 *   {"cmd":"keys","op":"list"}             installed keys, primary first, and the key census: per key
 *                                          how many live members hold it and seal with it (agent_keys.c)
 *   {"cmd":"keys","op":"install"|"use"|"remove","key":"<base64>"}   applied here and gossiped
 * A request line longer than FTL_CONTROL_MAX_LINE is refused and the connection closed. */
#ifndef FTL_AGENT_CONTROL_H
#define FTL_AGENT_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "base/diag.h"

#define FTL_CONTROL_MAX_LINE 65536

typedef struct ftl_control ftl_control;
typedef struct ftl_control_client ftl_control_client;

/* Handles one request on the loop thread. Returns the reply (the server sends and frees it), or NULL
 * when the handler will answer later with ftl_control_reply (a leave that waits for gossip). Setting
 * *is_stream makes the client an event follower after the reply. */
typedef json_t *(*ftl_control_handler)(void *ctx, ftl_control_client *client, const json_t *request,
				       bool *is_stream);

/* Listens on path (an existing socket file there is replaced only if nothing answers on it). NULL with the
 * reason in the diag when it cannot. */
ftl_control *ftl_control_start(uv_loop_t *loop, const char *path, ftl_control_handler handler, void *ctx);
/* The two shapes every reply starts from: {"ok":true}, and {"ok":false,"error":why}, the shape of every
 * refusal (why: a sentence saying what is wrong and what to do). NULL when out of memory. */
json_t *ftl_control_ok(void);
json_t *ftl_control_refusal(const char *why);
/* A late reply to a request whose handler returned NULL; steals reply. Safe if the client has gone. */
void ftl_control_reply(ftl_control *c, ftl_control_client *client, json_t *reply);
/* Sends an event line to every streaming client; does not steal event. */
void ftl_control_publish(ftl_control *c, const json_t *event);
/* Followers dropped so far for falling behind (counters.control_followers_dropped). */
uint64_t ftl_control_followers_dropped(const ftl_control *c);
/* Stops listening, closes every client and removes the socket file. */
void ftl_control_close(ftl_control *c);

#endif
