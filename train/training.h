/* The training side of an agent (a->train; the agent sees it only through agent_training.h): the
 * communicators, the ftl_execute state machine, the state registry and the checkpoints. What both threads
 * touch is guarded by the agent's lock; the rest belongs to one thread, as marked. */
#ifndef FTL_TRAIN_TRAINING_H
#define FTL_TRAIN_TRAINING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "exec_machine.h"
#include "ftl/execute.h"
#include "state_registry.h"
#include "comm_time.h"
#include "pace.h"
#include "train_metrics.h"

typedef struct ftl_training {
	ftl_training_config cfg;
	int data_fd;                     /* the comm listener, kept across communicators (its address: a->data_addr) */

	/* under the agent's lock (the views themselves are the agent's: a->views, agent_training.h) */
	ftl_comm *comm;                  /* the communicator a step may be using (the loop may abort it) */
	ftl_comm *ctrl_comm;             /* nccl: the tcp comm beside it for control data (NULL under tcp) */
	uint64_t comm_seq;               /* the view (seq) they were built for (0: none) */
	uint64_t *comm_keys;             /* that view's members by rank (comm_members.h): nccl shrinks the */
	uint32_t comm_n;                 /* next view's comm from them, and a tcp step outlives a join */
	ftl_train_metrics metrics;       /* for /metrics (train_metrics.h) */
	ftl_pace pace;                   /* which rank the others wait for (pace.h; written by the training thread) */
	ftl_comm **subgroups;            /* the program's subgroups of the view in use (subgroups.c) */
	int n_subgroups, subgroups_cap;

	atomic_bool is_executing;        /* an ftl_execute is running: a second one, from any thread, is refused */

	/* training thread */
	ftl_exec exec;                   /* ftl_execute's state machine; its state is read by status (atomic) */
	ftl_state_registry state;        /* registered buffers, callbacks, step, sampler position, job id */
	ftl_checkpoints ckpt;            /* set before the agent starts, then fixed */
	ftl_pace_window pace_window;     /* this rank's figures since the last exchange (pace_exchange.c) */

	/* any thread (its own lock) */
	ftl_comm_time comm_time;         /* collectives in flight (comm_time.h) */
} ftl_training;

struct ftl_agent;

/* training.c */
/* The agent's training state, made on first use (registration may come before ftl_set_training) with the
 * hooks the agent calls (train_hooks.c); NULL when out of memory. */
ftl_training *ftl_training_of(struct ftl_agent *a);
/* A training call failed: the reason is kept for ftl_last_error and put in the calling thread's diag too;
 * returns e. */
ftl_err ftl_training_fail(ftl_training *t, ftl_err e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
ftl_err ftl_agent_data_listen(struct ftl_agent *a);
/* Under the lock (loop thread, or the training thread installing communicators): aborts the communicators
 * in use so a blocked collective returns now. */
void ftl_training_abort_comms_locked(ftl_training *t);

/* subgroups.c: under the lock, aborts the subgroups with the view's communicators; at the end, frees them. */
void ftl_subgroups_abort_locked(ftl_training *t);
/* The communicator the subgroups were split from is replaced: each is hung up (ftl_comm_hang_up), so a
 * member still in a call on one (it finished its step in the old view while this one moved on) fails at
 * once and runs its step again, instead of waiting out the collective timeout. */
void ftl_subgroups_hang_up_locked(ftl_training *t);
void ftl_subgroups_free(ftl_training *t);

/* pace_exchange.c, training thread: before a step runs (the exchange, when due: its error fails the step
 * before it begins; *is_reshared: the rebalance policy moved the shares, so the step's indices, drawn before
 * the exchange, must be drawn again), and after it ran (took_us, is_done: it returned FTL_OK). */
ftl_err ftl_pace_before_step(struct ftl_agent *a, const ftl_step_info *info, bool *is_reshared);
void ftl_pace_after_step(struct ftl_agent *a, int64_t took_us, bool is_done);
/* pace_report.c, under the lock: the verdict in the status's view object and in /metrics. */
void ftl_pace_status_locked(struct ftl_agent *a, json_t *view);
void ftl_pace_metrics_locked(struct ftl_agent *a, ftl_metrics_text *t);
/* The name of rank r of the verdict, when the agent's view is the verdict's ("" if not: it moved on). */
const char *ftl_pace_name_locked(struct ftl_agent *a, const ftl_pace *p, uint32_t r);

/* train_hooks.c: what the agent calls (agent/agent_training.h) */
extern const struct ftl_agent_training_ops ftl_training_hooks;

#endif
