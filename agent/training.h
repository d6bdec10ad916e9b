/* The training side of an agent: the rendezvous instance (loop thread), the view handed to the
 * training thread, the communicator, the registered state and the sampler position. What both threads
 * touch is guarded by the agent's lock; the rest belongs to one thread, as marked. */
#ifndef FTL_AGENT_TRAINING_H
#define FTL_AGENT_TRAINING_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "ftl/execute.h"
#include "global_batch.h"
#include "rendezvous.h"
#include "train_metrics.h"

#define FTL_MAX_BUFFERS 64

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

typedef struct ftl_buffer_reg {
	char name[64];
	void *ptr;
	size_t bytes;
	bool is_device;
} ftl_buffer_reg;

typedef struct ftl_training {
	bool is_enabled;                 /* ftl_set_training was called */
	ftl_training_config cfg;
	int data_fd;                     /* the comm listener, kept across communicators */
	char data_addr[FTL_ADDR_MAX];

	/* loop thread */
	ftl_rdv *rdv;
	uv_timer_t rdv_timer;

	/* under the agent's lock */
	ftl_view_copy view;              /* the newest view this worker knows of (it may not be in it) */
	uint64_t want_rebuild_seq;       /* the training thread asks for this view's members under a new epoch */
	uint64_t synced_lineage_seen;    /* the lineage of the last view we were a member of (loop thread) */
	char missing[512];               /* waiting for quorum: who is missing and what it needs, for messages */
	ftl_comm *comm;                  /* the communicator a step may be using (the loop may abort it) */
	ftl_rdv_phase phase;
	char coordinator[FTL_NAME_MAX];
	ftl_job_status status;
	int64_t below_min_since_us;      /* when the job fell below min_workers (0 = it has not) */
	ftl_train_metrics metrics;       /* for /metrics (train_metrics.h) */

	/* training thread */
	uint64_t comm_seq;               /* the view (seq) the communicator was built for */
	uint64_t synced_seq;             /* the view (seq) whose state sync completed */
	uint64_t synced_lineage;         /* the lineage of the last view synced (0: none yet) */
	uint64_t step;
	uint64_t data_epoch;
	uint64_t sample_pos;
	ftl_buffer_reg buffers[FTL_MAX_BUFFERS];
	int n_buffers;
	ftl_save_cb save;
	ftl_load_cb load;
	void *cb_ctx;
	uint64_t dataset_size;           /* 0 = no sampler */
	uint32_t batch_per_rank;
	uint64_t sampler_seed;
	uint64_t *indices;               /* [batch_per_rank] */
	ftl_batch_runtime batch;         /* a fixed global batch's indices, the exact sum's scratch */
	bool has_state;                  /* holds the job's state: stepped, synced from rank 0, or resumed */
	uint64_t job_id;                 /* the job's checkpoint identity (checkpoint.h): drawn by a rank 0 that
					  * starts with nothing to resume, read from the checkpoint it resumes,
					  * synced from rank 0 with the state; 0 = none yet */
	char last_error[512];

	struct ftl_ckpt_writer *ckpt;    /* when checkpoints are on; set before the agent starts, then fixed */
} ftl_training;

#endif
