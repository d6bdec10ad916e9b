/* The loop thread's writes to what it shares with the other threads (struct ftl_agent_shared, under its
 * lock): each takes the lock, changes a field or two, wakes whoever waits on the changed condition (the
 * training thread, ftl_agent_leave), and lets go. The other threads' side is agent.c's public calls and the
 * door (agent_door.c); their requests reach the loop through the wake handle (on_wake, agent.c). */
#include "agent_internal.h"

void ftl_agent_publish_counts(ftl_agent *a)
{
	ftl_node_snapshot snap;
	ftl_node_read(a->node, &snap);
	pthread_mutex_lock(&a->shared.lock);
	a->shared.counts.alive = snap.count[FTL_MEMBER_ALIVE];
	a->shared.counts.suspect = snap.count[FTL_MEMBER_SUSPECT];
	a->shared.counts.dead = snap.count[FTL_MEMBER_DEAD];
	a->shared.counts.left = snap.count[FTL_MEMBER_LEFT];
	pthread_cond_broadcast(&a->shared.changed);
	pthread_mutex_unlock(&a->shared.lock);
}

void ftl_agent_publish_left(ftl_agent *a)
{
	pthread_mutex_lock(&a->shared.lock);
	a->shared.has_left = true;
	pthread_cond_broadcast(&a->shared.changed);
	pthread_mutex_unlock(&a->shared.lock);
}

void ftl_agent_fail(ftl_agent *a)
{
	pthread_mutex_lock(&a->shared.lock);
	if (!a->shared.stop_error.code)
		ftl_kept_error_from_diag(&a->shared.stop_error);
	a->shared.want_stop = true;
	pthread_mutex_unlock(&a->shared.lock);
	uv_async_send(&a->wake);
}
