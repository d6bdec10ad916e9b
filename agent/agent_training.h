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
#include "metrics_text.h"
#include "node/node.h"
#include "rendezvous/rendezvous.h"

struct ftl_agent;

/* What the loop thread hands the training thread; under the agent's lock. */
typedef struct ftl_agent_views {
	ftl_rdv_view view;               /* the newest view this worker knows of (it may not be in it): the agent's
					  * copy (rendezvous.h), numbered by seq, replaced whole on every view */
	ftl_rdv_phase phase;
	char coordinator[FTL_NAME_MAX];
	char missing[512];               /* waiting for quorum: who is missing and what it needs, for messages */
	int64_t below_min_since_us;      /* when the job fell below min_workers (0 = it has not) */
	uint64_t want_rebuild_seq;       /* the training thread asks for this view's members under a new epoch */
	uint64_t synced_lineage_seen;    /* the lineage of the last view we were a member of (loop thread) */
	ftl_job_status status;           /* the job as the training thread last reported it (ftl_get_job_status) */
	uint64_t status_lineage;         /* the lineage of the view status.step was counted in (0: none yet) */
	uint64_t lineage_steps;          /* the steps view's lineage has done, as the rendezvous knows them
					  * (ftl_rdv_steps): > 0 means its state exists somewhere */
} ftl_agent_views;

/* The training layer's calls, each with the agent it was attached to; all but free only once
 * ftl_set_training has set a->is_training (before the start, fixed after it). */
typedef struct ftl_agent_training_ops {
	/* ftl_agent_start, before the node exists: open the comm listener (its address into a->data_addr). */
	ftl_err (*listen)(struct ftl_agent *a); /* the reason in the diag */
	/* The node's training options: the rendezvous settings, the data address, the NCCL id maker. */
	void (*node_options)(struct ftl_agent *a, ftl_node_options *o);
	/* Loop thread, under the lock: abort the collectives in use, if any, so a blocked step returns now;
	 * is_member_gone: a member of the view is gone (the recovery clock starts). */
	void (*abort_locked)(struct ftl_agent *a, const char *why, bool is_member_gone);
	/* Loop thread, under the lock, before v replaces a->views.view: count the change. */
	void (*view_locked)(struct ftl_agent *a, const ftl_rdv_view *v);
	/* Under the lock: the training's fields of the status's "view" object. */
	void (*view_status_locked)(struct ftl_agent *a, json_t *view);
	/* The status's "checkpoint" and "execute" objects (any thread). */
	void (*status)(struct ftl_agent *a, json_t *status);
	/* Loop thread: the training's /metrics families. */
	void (*metrics)(struct ftl_agent *a, ftl_metrics_text *out);
	/* ftl_agent_leave, on the caller's thread, before the leave is gossiped: rank 0's last checkpoint. */
	void (*before_leave)(struct ftl_agent *a);
	/* ftl_agent_delete, after the loop thread stopped: frees a->train. */
	void (*free)(struct ftl_agent *a);
} ftl_agent_training_ops;

#endif
