/* The training side of an agent: the view handed to the training thread, the communicators, the ftl_execute
 * state machine, the state registry and the checkpoints. What both threads touch is guarded by the agent's
 * lock; the rest belongs to one thread, as marked. */
#ifndef FTL_TRAIN_TRAINING_H
#define FTL_TRAIN_TRAINING_H

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "exec_machine.h"
#include "ftl/execute.h"
#include "rendezvous.h"
#include "state_registry.h"
#include "train_metrics.h"

typedef struct ftl_view_copy {
	uint64_t seq;                    /* this worker's count of views taken (0: none yet): unlike the epoch,
					  * it names one view even across lineages */
	int self_rank;                   /* ours, -1 when we are not a member (a spare, or catching up) */
	uint64_t epoch;                  /* 0: none yet */
	uint64_t lineage;                /* the cluster history it belongs to (epochs repeat across lineages) */
	uint32_t n;
	ftl_rdv_member *members;         /* [n] by rank, owned */
	uint16_t blob_len;
	uint8_t blob[FTL_RDV_BLOB_MAX];
} ftl_view_copy;

typedef struct ftl_training {
	bool is_enabled;                 /* ftl_set_training was called */
	ftl_training_config cfg;
	int data_fd;                     /* the comm listener, kept across communicators */
	char data_addr[FTL_ADDR_MAX];

	/* under the agent's lock */
	ftl_view_copy view;              /* the newest view this worker knows of (it may not be in it) */
	uint64_t want_rebuild_seq;       /* the training thread asks for this view's members under a new epoch */
	uint64_t synced_lineage_seen;    /* the lineage of the last view we were a member of (loop thread) */
	char missing[512];               /* waiting for quorum: who is missing and what it needs, for messages */
	ftl_comm *comm;                  /* the communicator a step may be using (the loop may abort it) */
	ftl_comm *ctrl_comm;             /* nccl: the tcp comm beside it for control data (NULL under tcp) */
	uint64_t comm_seq;               /* the view (seq) they were built for (0: none) */
	uint64_t *comm_keys;             /* nccl: that view's members (name and generation hashed), by rank, */
	uint32_t comm_n;                 /* so that the next view can shrink comm (exec_comm_factory.c) */
	ftl_rdv_phase phase;
	char coordinator[FTL_NAME_MAX];
	ftl_job_status status;
	int64_t below_min_since_us;      /* when the job fell below min_workers (0 = it has not) */
	ftl_train_metrics metrics;       /* for /metrics (train_metrics.h) */

	/* training thread */
	ftl_exec exec;                   /* ftl_execute's state machine; its state is read by status (atomic) */
	ftl_state_registry state;        /* registered buffers, callbacks, step, sampler position, job id */
	void *exact_scratch;             /* ftl_allreduce_exact's integers, kept between steps */
	size_t exact_scratch_bytes;
	ftl_checkpoints ckpt;            /* set before the agent starts, then fixed */
} ftl_training;

struct ftl_agent;

/* training.c */
ftl_err ftl_agent_data_listen(struct ftl_agent *a);
void ftl_training_free(ftl_training *t);
/* Under the lock (loop thread, or the training thread installing communicators): aborts the communicators
 * in use so a blocked collective returns now. */
void ftl_training_abort_comms_locked(ftl_training *t);
/* The "execute" object of the status: the state machine's state (any thread). */
json_t *ftl_training_execute_json(ftl_training *t);

#endif
