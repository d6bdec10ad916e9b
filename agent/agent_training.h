/* The seam between the agent and the training layer above it (train/). The agent never includes or links
 * train/: the loop thread publishes what the rendezvous decided in ftl_agent_views (under the agent's lock),
 * the training thread reads it there, and the training layer registers the few calls the agent makes into
 * it (ftl_agent_training_ops) when it attaches its state to an agent. An agent without them (ftl-agent, a
 * program that never calls ftl_set_training) gossips and nothing more. */
#ifndef FTL_AGENT_TRAINING_H
#define FTL_AGENT_TRAINING_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ftl/execute.h"
#include "base/metrics_text.h"
#include "node/node.h" /* the view, its members and phases: the rendezvous's types, through the node */

struct ftl_agent;

/* What the loop thread hands the training thread; under the agent's lock. */
typedef struct ftl_agent_views {
	ftl_rdv_view view;               /* the newest view this worker knows of (it may not be in it): the agent's
					  * copy (rendezvous.h), numbered by seq, replaced whole on every view */
	ftl_rdv_phase phase;
	char coordinator[FTL_NAME_MAX];
	uint32_t max_workers;            /* the job's maximum in force (an operator's `ftlctl scale`, or the setting) */
	char missing[512];               /* waiting for quorum: who is missing and what it needs, for messages */
	int64_t below_min_since_us;      /* when the job fell below min_workers (0 = it has not) */
	uint64_t want_rebuild_seq;       /* the training thread asks for this view's members under a new epoch */
	uint64_t want_bench_epoch;       /* ... to bench want_bench, slow in that view epoch (0: no request) */
	ftl_rdv_benched want_bench;
	uint64_t synced_lineage_seen;    /* the lineage of the last view we were a member of (loop thread) */
	uint64_t left_out_seq;           /* a view of that lineage committed without us (a spare since): our state
					  * is stale from then on; the training thread takes it (0: none since) */
	ftl_job_status status;           /* the job as the training thread last reported it (ftl_get_job_status) */
	uint64_t status_lineage;         /* the lineage of the view status.step was counted in (0: none yet) */
	uint64_t lineage_steps;          /* the steps view's lineage has done, as the rendezvous knows them
					  * (ftl_rdv_steps): > 0 means its state exists somewhere */
} ftl_agent_views;

/* ---- The door (agent_door.c): what train/ may read and ask of the agent. struct ftl_agent is private to
 * agent/; the training layer holds an ftl_agent * and goes through these calls. ---- */

struct ftl_training;
struct ftl_logger;
struct sockaddr_storage;
typedef struct ftl_agent_training_ops ftl_agent_training_ops;

/* The training layer's state and calls, attached by ftl_training_of (train/) before the start; NULL when
 * none. Detach: in its free call, after the loop thread stopped. */
struct ftl_training *ftl_agent_training(const struct ftl_agent *a);
void ftl_agent_attach_training(struct ftl_agent *a, struct ftl_training *t, const ftl_agent_training_ops *ops);
void ftl_agent_detach_training(struct ftl_agent *a);
/* ftl_set_training accepted the settings: the agent runs a rendezvous from its start on. */
void ftl_agent_set_training_on(struct ftl_agent *a);
bool ftl_agent_is_training(const struct ftl_agent *a);
bool ftl_agent_is_started(const struct ftl_agent *a);
/* Where the agent's records go (the logger outlives every training object). */
const struct ftl_logger *ftl_agent_logger(const struct ftl_agent *a);
/* The rendezvous's ready interval of the agent's gossip profile. */
int64_t ftl_agent_ready_interval_us(const struct ftl_agent *a);
/* Monotonic microseconds: the clock of every deadline the agent and the training thread share. */
int64_t ftl_agent_now_us(struct ftl_agent *a);

/* The lock that guards ftl_agent_views and every request the training thread makes of the loop thread. */
void ftl_agent_lock(struct ftl_agent *a);
void ftl_agent_unlock(struct ftl_agent *a);
/* Under the lock: what the loop thread published (above). */
ftl_agent_views *ftl_agent_views_locked(struct ftl_agent *a);
/* Under the lock: the agent stopped or this member left (it takes no more steps). */
bool ftl_agent_is_gone_locked(const struct ftl_agent *a);
/* Under the lock: the error the agent stopped with by itself (its name taken, say), put in the diagnostic
 * and returned; FTL_OK (and the diagnostic untouched) when it did not stop so. */
ftl_err ftl_agent_stop_error_locked(const struct ftl_agent *a);
/* Under the lock: sleeps until the loop thread says something changed (a view, a phase, a stop, a leave)
 * or deadline_us (ftl_agent_now_us's clock; INT64_MAX: no deadline), whichever is first. */
void ftl_agent_sleep_locked(struct ftl_agent *a, int64_t deadline_us);
/* Under the lock: the comm saw member `name` reset its connection: the loop thread probes it now (after
 * ftl_agent_wake). At most 8 wait; more are dropped (the next failure hints again). */
void ftl_agent_hint_locked(struct ftl_agent *a, const char *name);
/* Any thread: the loop thread looks at the requests (hints, a rebuild asked for in the views). */
void ftl_agent_wake(struct ftl_agent *a);
/* Loop thread: whether membership last saw `name` leave gracefully (not dead, suspect or unknown). */
bool ftl_agent_member_has_left(struct ftl_agent *a, const char *name);

/* The comm listener's addresses: the gossip's bind address (its text as configured) and the advertised
 * "ip:port"; the listener keeps the IPs with a port of its own, which it sets as the data address (what
 * the node gossips in the member's metadata, before the start). */
void ftl_agent_gossip_addrs(const struct ftl_agent *a, struct sockaddr_storage *bind, const char **bind_text,
			    const char **advertise);
const char *ftl_agent_data_addr(const struct ftl_agent *a);
void ftl_agent_set_data_addr(struct ftl_agent *a, const char *addr);
/* The replica this worker is index `index` of (size 0: none), gossiped beside the data address; before the
 * start. */
void ftl_agent_set_replica(struct ftl_agent *a, const char *replica, uint32_t index, uint32_t size);

/* The training layer's calls, each with the agent it was attached to; all but free only once
 * ftl_set_training has made the agent a training one (ftl_agent_is_training: before the start, fixed
 * after it). */
struct ftl_agent_training_ops {
	/* ftl_agent_start, before the node exists: open the comm listener (ftl_agent_set_data_addr). */
	ftl_err (*listen)(struct ftl_agent *a); /* the reason in the diag */
	/* The node's training options: the rendezvous settings, the data address, the NCCL id maker. */
	void (*node_options)(struct ftl_agent *a, ftl_node_options *o);
	/* Loop thread, under the lock: abort the collectives in use, if any, so a blocked step returns now;
	 * is_member_gone: a member of the view is gone (the recovery clock starts); else a view was committed
	 * (ftl_agent_views_locked's view is the new one), and a join may leave the step in flight to finish. */
	void (*abort_locked)(struct ftl_agent *a, const char *why, bool is_member_gone);
	/* Loop thread, under the lock, before v replaces the views' view: count the change. */
	void (*view_locked)(struct ftl_agent *a, const ftl_rdv_view *v);
	/* Under the lock: the training's fields of the status's "view" object. */
	void (*view_status_locked)(struct ftl_agent *a, json_t *view);
	/* The status's "checkpoint" and "execute" objects (any thread). */
	void (*status)(struct ftl_agent *a, json_t *status);
	/* Loop thread: the training's /metrics families. */
	void (*metrics)(struct ftl_agent *a, ftl_metrics_text *out);
	/* ftl_agent_leave, on the caller's thread, before the leave is gossiped: rank 0's last checkpoint. */
	void (*before_leave)(struct ftl_agent *a);
	/* ftl_agent_delete, after the loop thread stopped: frees the layer's state (ftl_agent_training). */
	void (*free)(struct ftl_agent *a);
};

/* agent_door.c: the view's own operations, for train/, which reads views through this door and never calls
 * the rendezvous: a deep copy (FTL_ERR_SYSTEM when out of memory), its release, and a phase's name. */
ftl_err ftl_agent_view_copy(ftl_rdv_view *dst, const ftl_rdv_view *src);
void ftl_agent_view_clear(ftl_rdv_view *v);
const char *ftl_agent_phase_name(ftl_rdv_phase phase);

#endif
