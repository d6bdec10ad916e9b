/* A stand-in agent for the control tests: the real control server (agent/control.c) on its own libuv
 * loop thread, with a handler that gives canned replies, so both the server and ftlctl can be tested
 * without gossip. Requests it knows:
 *   status, members      the canned cluster below (w1 alive rank 0, w2 suspect, w3 dead)
 *   leave                answered late (ftl_control_reply) after FAKE_LEAVE_DELAY_MS
 *   events               turns the client into a follower
 *   keys list|install|use|remove   install/use/remove refuse FAKE_UNKNOWN_KEY
 *   echo                 {"ok":true,"echo":<the request>}
 *   big                  a reply of about 4 MiB, for clients that hang up mid-reply
 * anything else gets {"ok":false,"error":"unknown command"}. */
#ifndef FTL_TESTS_FAKE_AGENT_H
#define FTL_TESTS_FAKE_AGENT_H

#include <jansson.h>

#define FAKE_LEAVE_DELAY_MS 30
#define FAKE_PRIMARY_KEY "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define FAKE_UNKNOWN_KEY "//////////////////////////////////////////8="

typedef struct fake_agent fake_agent;

/* Starts serving on path; fails the test if the server cannot start. */
fake_agent *fake_agent_start(const char *path);
/* The canned status reply (a new reference), to compare with what clients print. */
json_t *fake_agent_status(void);
/* Sends event (JSON text) to every follower, from any thread; returns once the loop has done it. */
void fake_agent_publish(fake_agent *agent, const char *event_json);
/* How many events requests the agent has answered so far. */
int fake_agent_followers(fake_agent *agent);
/* How many requests the agent has handled so far (any command). */
int fake_agent_requests(fake_agent *agent);
/* Closes the server (removing the socket file) and joins the loop thread. */
void fake_agent_stop(fake_agent *agent);

#endif
