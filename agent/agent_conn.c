/* One TCP connection and its timer, closed once (agent_conn.h). */
#include "agent_conn.h"

#include <stddef.h>

#include "agent_fork.h"

static void on_closed(uv_handle_t *h)
{
	ftl_agent_conn *c = h->type == UV_TCP ? ftl_owner_of(h, ftl_agent_conn, tcp)
					      : ftl_owner_of(h, ftl_agent_conn, timer);
	if (--c->open_handles == 0)
		c->on_free(c);
}

void ftl_agent_conn_init(ftl_agent_conn *c, uv_loop_t *loop, ftl_list *list, void *owner,
			 void (*on_free)(ftl_agent_conn *c))
{
	uv_tcp_init(loop, &c->tcp);
	uv_timer_init(loop, &c->timer);
	c->tcp.data = c->timer.data = owner;
	c->on_free = on_free;
	c->open_handles = 2;
	c->list = list;
	if (list)
		ftl_list_push_front(list, &c->link);
}

void ftl_agent_conn_close(ftl_agent_conn *c)
{
	if (c->is_closing)
		return;
	c->is_closing = true;
	if (c->list)
		ftl_list_unlink(c->list, &c->link);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, on_closed);
	ftl_agent_fork_untrack((uv_handle_t *)&c->tcp);
	uv_close((uv_handle_t *)&c->tcp, on_closed);
}

void ftl_agent_conn_close_all(ftl_list *list)
{
	while (list->first)
		ftl_agent_conn_close(ftl_owner_of(list->first, ftl_agent_conn, link));
}
