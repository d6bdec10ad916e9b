/* The door train/ goes through (agent_training.h): what the training layer may read and ask of the agent,
 * as calls, so that struct ftl_agent stays private to agent/ and a change inside it reaches no other
 * folder. Each call is a field or two; what they guard (the lock, the views) is documented where they are
 * declared. */
#include "agent_internal.h"

#include <time.h>

struct ftl_training *ftl_agent_training(const ftl_agent *a) { return a->training.layer; }

void ftl_agent_attach_training(ftl_agent *a, struct ftl_training *t, const ftl_agent_training_ops *ops)
{
	a->training.layer = t;
	a->training.ops = ops;
}

void ftl_agent_detach_training(ftl_agent *a)
{
	a->training.layer = NULL;
	a->training.ops = NULL;
}

void ftl_agent_set_training_on(ftl_agent *a) { a->training.is_on = true; }
bool ftl_agent_is_training(const ftl_agent *a) { return a->training.is_on; }
bool ftl_agent_is_started(const ftl_agent *a) { return a->is_started; }
const ftl_logger *ftl_agent_logger(const ftl_agent *a) { return &a->set.log; }
int64_t ftl_agent_ready_interval_us(const ftl_agent *a) { return a->set.swim.ready_interval_us; }

void ftl_agent_lock(ftl_agent *a) { pthread_mutex_lock(&a->shared.lock); }
void ftl_agent_unlock(ftl_agent *a) { pthread_mutex_unlock(&a->shared.lock); }
ftl_agent_views *ftl_agent_views_locked(ftl_agent *a) { return &a->shared.views; }
bool ftl_agent_is_gone_locked(const ftl_agent *a) { return a->shared.is_stopped || a->shared.has_left; }
ftl_err ftl_agent_stop_error_locked(const ftl_agent *a)
{
	return a->shared.stop_error.code ? ftl_kept_error_to_diag(&a->shared.stop_error) : FTL_OK;
}

void ftl_agent_sleep_locked(ftl_agent *a, int64_t deadline_us)
{
	if (deadline_us == INT64_MAX) {
		pthread_cond_wait(&a->shared.changed, &a->shared.lock);
		return;
	}
	int64_t in_us = deadline_us - ftl_agent_now_us(a);
	if (in_us <= 0)
		return;
	struct timespec until = ftl_deadline_monotonic_in(in_us);
	pthread_cond_timedwait(&a->shared.changed, &a->shared.lock, &until);
}

void ftl_agent_hint_locked(ftl_agent *a, const char *name)
{
	if (a->shared.n_hints < FTL_MAX_HINTS)
		snprintf(a->shared.hints[a->shared.n_hints++], FTL_NAME_MAX, "%s", name);
}

void ftl_agent_wake(ftl_agent *a) { uv_async_send(&a->wake); }

bool ftl_agent_member_has_left(ftl_agent *a, const char *name)
{
	ftl_node_member m;
	return ftl_node_find_member(a->node, name, &m) && m.state == FTL_MEMBER_LEFT;
}

void ftl_agent_gossip_addrs(const ftl_agent *a, struct sockaddr_storage *bind, const char **bind_text,
			    const char **advertise)
{
	*bind = a->set.bind;
	*bind_text = a->cfg.bind;
	*advertise = a->set.advertise;
}

const char *ftl_agent_data_addr(const ftl_agent *a) { return a->training.self.data_addr; }

void ftl_agent_set_data_addr(ftl_agent *a, const char *addr)
{
	snprintf(a->training.self.data_addr, sizeof(a->training.self.data_addr), "%s", addr);
}

void ftl_agent_set_replica(ftl_agent *a, const char *replica, uint32_t index, uint32_t size)
{
	snprintf(a->training.self.replica, sizeof(a->training.self.replica), "%s", size > 0 ? replica : "");
	a->training.self.replica_index = size > 0 ? index : 0;
	a->training.self.replica_size = size;
}

ftl_err ftl_agent_view_copy(ftl_rdv_view *dst, const ftl_rdv_view *src) { return ftl_node_view_copy(dst, src); }
void ftl_agent_view_clear(ftl_rdv_view *v) { ftl_node_view_clear(v); }
const char *ftl_agent_phase_name(ftl_rdv_phase phase) { return ftl_node_phase_strs[phase]; }
