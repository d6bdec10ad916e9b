/* One TCP connection and its timer, the shape every kind of the agent's connections has (push-pull
 * exchanges, rendezvous peers, proof-of-death checks, /metrics requests): two libuv handles that close
 * together and once, and an owner freed only when both close callbacks have run (libuv may still call
 * into a closing handle's owner until then). The owner embeds an ftl_agent_conn; each handle's data is the
 * owner, as its callbacks expect. From init until it starts closing, the connection is on a list of the
 * owner's choosing (or none), so that stopping the agent can close every one and a lookup never finds one
 * that is going away. */
#ifndef FTL_AGENT_CONN_H
#define FTL_AGENT_CONN_H

#include <stdbool.h>
#include <uv.h>

#include "base/list.h"

typedef struct ftl_agent_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	ftl_list_link link;   /* on *list while open */
	ftl_list *list;       /* NULL: on none */
	void (*on_free)(struct ftl_agent_conn *c); /* both handles closed: release and free the owner */
	int open_handles;
	bool is_closing;
} ftl_agent_conn;

/* Both handles on loop with data = owner, and the connection on list (may be NULL). */
void ftl_agent_conn_init(ftl_agent_conn *c, uv_loop_t *loop, ftl_list *list, void *owner,
			 void (*on_free)(ftl_agent_conn *c));
/* Leaves the list, stops the timer, and closes both handles (the socket also leaves what a forked child
 * closes); nothing when it is closing already. */
void ftl_agent_conn_close(ftl_agent_conn *c);
/* Closes every connection on list. */
void ftl_agent_conn_close_all(ftl_list *list);

#endif
