/* ftl_execute as an explicit state machine: one call's way from "which view?" to "the step is done".
 *
 *   idle, failed ──> waiting_for_view ──> building_comm ──> syncing ──> running ──> idle (FTL_OK)
 *                          │     │                  │               │          │
 *                          │     └── the view in hand is built and synced ──>──┘ (the steady state)
 *                          │                        └── peer error ─┴──> backing_off <── peer error
 *                          │ <───────────────────────────────────────────────┘
 *   waiting_for_view, building_comm, syncing, running ──> failed: stopped, left, no view for too long,
 *   retries spent, an error that is not about a peer (ftl_execute returns it)
 *
 * Why a view's communicator is built at most once: a build (ftl_comm_new) is not atomic across ranks;
 * one rank may finish it while another gives up, and two builds of one view share its comm id, so ranks
 * that each rebuilt the same view on their own timers paired with each other's stale attempts and never
 * got in step. So when a view's communicator fails (a collective, the build or the state sync) the machine
 * backs off: it drops the view and waits for a newer one. When membership explains the failure (a peer died
 * or left) the rendezvous commits one; when it does not, after a grace the view feed asks the rendezvous for
 * the same members under the next epoch, which every member builds once. That one transition, "move on to
 * the next view" (move_on in exec_machine.c), serves every failure.
 *
 * Why waiting spends no retries: a view the rendezvous has left behind is waited out, never built.
 * Retries (the policy's max_retries) count the step's failures in a committed, synced view; a build or
 * state sync that fails counts only while the view is still the newest and has kept failing for longer
 * than a collective may take (a persistent fault, not a view change in flight). The state sync after every
 * failure is what makes a retry safe: a rank that finished the failed step before its peers noticed is
 * rolled back to rank 0's state like everyone else.
 *
 * The seam: views come from a view feed and communicators from a comm factory (both interfaces below).
 * The agent provides the real ones (exec_agent_feed.c, exec_comm_factory.c); tests drive the machine with
 * a scripted feed and fake communicators, without a process, a socket or a sleep. */
#ifndef FTL_TRAIN_EXEC_MACHINE_H
#define FTL_TRAIN_EXEC_MACHINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/kept_error.h"
#include "ftl/execute.h"
#include "agent/agent_training.h" /* the view type, through the agent's door */
#include "state_registry.h"
#include "state_sync.h"

typedef enum ftl_exec_state {
	FTL_EXEC_IDLE,              /* outside ftl_execute, after a step that completed (or before the first) */
	FTL_EXEC_WAITING_FOR_VIEW,  /* no usable view with this worker in it (a spare, no quorum, a view change) */
	FTL_EXEC_BUILDING_COMM,     /* building the view's communicators */
	FTL_EXEC_SYNCING,           /* taking rank 0's state (a rank 0 without any resumes a checkpoint first) */
	FTL_EXEC_RUNNING,           /* the step runs */
	FTL_EXEC_BACKING_OFF,       /* the view failed here: its communicators are dropped, a newer one is due */
	FTL_EXEC_FAILED,            /* the job cannot go on here: ftl_execute returned an error */
	FTL_EXEC_STATE_MAX
} ftl_exec_state;
extern const char *const ftl_exec_state_strs[FTL_EXEC_STATE_MAX];

/* What the machine is waiting out: a view whose communicator failed here, and when to ask for it again. */
typedef struct ftl_abandoned_view {
	uint64_t seq;                    /* 0: none */
	int64_t rebuild_at_us;           /* ask for its members under a new epoch from then on */
	bool is_asked;
} ftl_abandoned_view;

/* The retry policy, fixed for the machine's life. */
typedef struct ftl_exec_retry_policy {
	int max_retries;                 /* counted failures a step may have (FTL_MAX_RETRIES) */
	int64_t setup_grace_us;          /* a build or sync failure counts once failing this long (the
					  * collective timeout): shorter is a view change in flight */
	int64_t step_failure_rebuild_us; /* after a failed step: how long membership has to explain it before
					  * the same members are asked for under a new epoch */
	int64_t setup_failure_rebuild_us;/* ... after a failed build or state sync */
} ftl_exec_retry_policy;

/* Where views come from, and where the machine says what became of them. */
typedef struct ftl_view_feed_ops {
	/* Blocks until a view with this worker in it, other than ab->seq, is usable, and copies it into w.
	 * Once ab->rebuild_at_us has passed while ab->seq is still the newest view, asks for its members under
	 * a new epoch (once: sets ab->is_asked). Returns an error with its message in the diag when the wait must
	 * end (the agent stopped or left, no usable view for too long). */
	ftl_err (*wait)(void *ctx, ftl_abandoned_view *ab, ftl_rdv_view *w);
	/* Whether view seq is still the newest this worker knows of. */
	bool (*is_newest)(void *ctx, uint64_t seq);
	int64_t (*now_us)(void *ctx);    /* monotonic */
	/* Reports, for status and metrics: a step is about to run in w (is_retry: not its first run), or has
	 * completed; a state sync of w completed. */
	void (*stepping)(void *ctx, const ftl_rdv_view *w, uint64_t step, bool is_retry);
	void (*synced)(void *ctx, const ftl_rdv_view *w, uint64_t bytes, int64_t took_us);
	/* This worker has no part in the job any more (the job refused it: its state or settings differ from
	 * rank 0's; or the job's state is gone): leave the cluster, so that no later view includes it. why says
	 * which. May be NULL. */
	void (*leave)(void *ctx, const char *why);
	/* The steps the job of `lineage` has done, as this worker has heard (0: none, or not known). Rank 0 of a
	 * view with no state resumes a checkpoint or, without one, starts the job only when this is 0. May be
	 * NULL (nothing heard). */
	uint64_t (*lineage_steps)(void *ctx, uint64_t lineage);
	/* Whether, since the last call, the job went on in a view of its lineage without this worker, after it
	 * had trained in one (it stepped down to a spare under a lower maximum, or its replica lost a shard):
	 * the state it holds is the job's of that moment, stale once the others train on, so it is dropped (a
	 * joiner receives the job's state; a rank 0 with none resumes or leaves, as resume_if_needed says).
	 * May be NULL (never). */
	bool (*take_left_out)(void *ctx);
} ftl_view_feed_ops;

/* Where a view's communicators come from. */
typedef struct ftl_comm_factory_ops {
	/* Builds w's communicators and installs them as those collectives use; an error with its message in
	 * the diag otherwise (FTL_ERR_PEER_LOST when the members are not building the same view yet). */
	ftl_err (*build)(void *ctx, const ftl_rdv_view *w, ftl_comm_pair *out);
	/* Uninstalls and tears down the installed communicators (none: nothing). */
	void (*drop)(void *ctx);
} ftl_comm_factory_ops;

/* Checkpoint hooks (checkpoint.c implements them over a state registry); NULL ops: checkpoints off. */
typedef struct ftl_exec_checkpoint_ops {
	/* Rank 0 of a view in which nobody has state: load the newest checkpoint (or start a new job). Without
	 * checkpoint hooks such a rank 0 starts a new job, unless the job has done steps (lineage_steps above):
	 * then ftl_execute fails with FTL_ERR_STATE_LOST. */
	ftl_err (*resume)(void *ctx, ftl_state_registry *r);
	/* After a completed step on rank 0. */
	void (*after_step)(void *ctx, ftl_state_registry *r, uint64_t view_epoch, uint32_t world_size);
} ftl_exec_checkpoint_ops;

typedef struct ftl_exec {
	_Atomic int state;               /* ftl_exec_state; any thread may read it (status) */
	ftl_exec_retry_policy policy;
	const ftl_view_feed_ops *feed;
	void *feed_ctx;
	const ftl_comm_factory_ops *factory;
	void *factory_ctx;
	const ftl_exec_checkpoint_ops *ckpt;
	void *ckpt_ctx;
	ftl_state_registry *reg;
	const struct ftl_logger *log;    /* where its records go (the agent's logger; it outlives the machine) */

	ftl_rdv_view view;               /* the view in hand: the machine's own copy (rendezvous.h), freed by it */
	ftl_abandoned_view abandoned;
	ftl_comm_pair comms;             /* built for comm_seq */
	uint64_t comm_seq;               /* the view (seq) the communicators were built for; 0: none */
	uint64_t synced_seq;             /* the view (seq) whose state sync completed */
	uint64_t synced_lineage;         /* the lineage of the last view synced (0: none yet) */

	/* this call of ftl_exec_step */
	int failures;                    /* counted against policy.max_retries */
	int runs;                        /* runs of the step */
	int64_t setup_failing_since_us;  /* builds or syncs have failed since (0: the last one worked) */
	ftl_step_fn step;
	void *step_ctx;
	ftl_err result;
	ftl_kept_error last_error;       /* why the call failed (or the step's retry), for ftl_last_error */
} ftl_exec;

void ftl_exec_create(ftl_exec *m, const ftl_exec_retry_policy *policy, ftl_state_registry *reg,
		     const struct ftl_logger *log);
void ftl_exec_set_feed(ftl_exec *m, const ftl_view_feed_ops *ops, void *ctx);
void ftl_exec_set_factory(ftl_exec *m, const ftl_comm_factory_ops *ops, void *ctx);
void ftl_exec_set_checkpoints(ftl_exec *m, const ftl_exec_checkpoint_ops *ops, void *ctx);
void ftl_exec_destroy(ftl_exec *m);

/* Runs one step through the states until it completed (FTL_OK, state idle) or cannot (the error, state
 * failed, the message in m->last_error). */
ftl_err ftl_exec_step(ftl_exec *m, ftl_step_fn step, void *ctx);
/* Runs one transition from the current state: what ftl_exec_step loops on (tests step it one by one).
 * Returns true while the call goes on. */
bool ftl_exec_advance(ftl_exec *m);
/* Whether the machine ever goes from one state to the other (the picture above, as a table). */
bool ftl_exec_is_transition(ftl_exec_state from, ftl_exec_state to);
/* Starts a call: from idle or failed to waiting_for_view, with the call's counters reset. */
void ftl_exec_begin(ftl_exec *m, ftl_step_fn step, void *ctx);
static inline ftl_exec_state ftl_exec_get_state(ftl_exec *m)
{
	return (ftl_exec_state)atomic_load_explicit(&m->state, memory_order_relaxed);
}

#endif
