/* A turn of the agent's loop as the rooms that feed the node see it. Every input a room hands the node (a
 * datagram, a frame, a push-pull, a check's outcome, a DNS answer, a request) is stamped with the agent's
 * clock, ftl_agent_now_us, and followed by ftl_agent_fed, which asks for the one drain at the end of the turn
 * (agent_drain.c). A room never carries out what the node decided, so no room calls back into another: the
 * drain calls them, they call only what lies below them (a star, not a circle of handlers that each flush). */
#include "agent_internal.h"

int64_t ftl_agent_now_us(ftl_agent *a) { return (int64_t)(uv_hrtime() / 1000); }

/* The idle handle does nothing when it runs: being active is its whole job (agent_drain.c). */
static void on_idle(uv_idle_t *idle) {}

void ftl_agent_fed(ftl_agent *a)
{
	if (a->drain.is_fed || a->is_closing) /* closing: the last drain has run (close_all), none follows */
		return;
	a->drain.is_fed = true;
	uv_idle_start(&a->drain.keep_polling, on_idle);
}
