/* The state registry: everything that makes up a job's state, in one place, so that state sync and
 * checkpoints take it without knowing the agent: the registered buffers (host or device memory), the
 * save/load callbacks for anything else, the step count, the elastic sampler's position and how a step cuts
 * it (global_batch.h), and the job's checkpoint identity. It belongs to the training thread; nothing here takes a lock.
 *
 * Where buffers live is the communicator's business: under FTL_COMM=nccl every registered buffer is
 * device memory (broadcast in place by NCCL), under tcp every one is host memory. Registration refuses the
 * other kind with a message, so state sync never has to guess (see state_sync.c). */
#ifndef FTL_TRAIN_STATE_REGISTRY_H
#define FTL_TRAIN_STATE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "ftl/execute.h"

#define FTL_MAX_BUFFERS 64

typedef struct ftl_buffer_reg {
	char name[64];
	void *ptr;
	size_t bytes;
	bool is_device;                  /* device memory: broadcast by the data comm only, never memcpy'd */
} ftl_buffer_reg;

/* Each rank's weight in a step's share of the fixed global batch, agreed by every rank of one view
 * (rebalance.h); n == 0: even shares. */
typedef struct ftl_batch_weights {
	uint64_t view_epoch;
	uint32_t n;
	uint32_t *w;                     /* [n], owned */
} ftl_batch_weights;

typedef struct ftl_state_registry {
	ftl_comm_backend backend;        /* which memory buffers must be (set by ftl_set_training) */
	ftl_buffer_reg buffers[FTL_MAX_BUFFERS];
	int n_buffers;
	ftl_save_cb save;
	ftl_load_cb load;
	void *cb_ctx;
	uint64_t step;                   /* steps completed by the job */
	uint64_t data_epoch;             /* the sampler's position: data epoch and position in it */
	uint64_t sample_pos;
	uint64_t dataset_size;           /* 0 = no sampler */
	uint32_t batch_per_rank;
	uint64_t sampler_seed;
	ftl_sampler_order order;         /* which index sits at each position (ftl_set_sampler_order) */
	ftl_batch_config batch;          /* a fixed global batch (global_batch.h): set by ftl_set_training and
					  * ftl_set_batch, checked against rank 0's by state sync */
	bool is_rebalanced;              /* FTL_SLOW_POLICY=rebalance: shares follow the ranks' speed (rebalance.h) */
	ftl_batch_weights shares;        /* ... agreed in one view (by the pace exchange); even in any other */
	uint64_t *indices;               /* [indices_cap]: this rank's share of the step */
	size_t indices_cap;              /* batch_per_rank, or the global batch once a step took one */
	bool has_state;                  /* holds the job's state: stepped, synced from rank 0, or resumed */
	uint64_t job_id;                 /* the job's checkpoint identity (checkpoint.h): drawn by a rank 0 that
					  * starts with nothing to resume, read from the checkpoint it resumes,
					  * synced from rank 0 with the state; 0 = none yet */
} ftl_state_registry;

/* Adds a buffer. FTL_ERR_INVALID with the reason in the diag: the table is full, a bad argument, or memory
 * of the wrong kind for the backend (a host buffer under nccl, a device buffer under tcp; where the build
 * has CUDA the pointer itself is asked, otherwise is_device is trusted). */
ftl_err ftl_state_register_buffer(ftl_state_registry *r, const char *name, void *ptr, size_t bytes, bool is_device);
/* Sets the sampler (dataset size, batch per rank, seed). An error with the reason in the diag. */
ftl_err ftl_state_set_sampler(ftl_state_registry *r, uint64_t dataset_size, uint32_t batch_per_rank, uint64_t seed);
/* After a completed step of `world` ranks: the step count and the sampler position move on. */
void ftl_state_advance(ftl_state_registry *r, int world);
/* Bytes of every registered buffer together. */
uint64_t ftl_state_buffer_bytes(const ftl_state_registry *r);
void ftl_state_free(ftl_state_registry *r);

/* buffer_copy.c: copies between a registered buffer and host memory, for checkpoints (cudaMemcpy for device
 * buffers where the build has CUDA). An error with the reason in the diag. */
ftl_err ftl_buffer_copy_out(const ftl_buffer_reg *b, void *dst);
ftl_err ftl_buffer_copy_in(const ftl_buffer_reg *b, const void *src);
/* Where the build has CUDA: 1 when ptr is device (or managed) memory, 0 when it is host memory, -1 when
 * CUDA cannot tell (no CUDA in the build, no driver): then the caller's word is taken. */
int ftl_buffer_is_device_memory(const void *ptr);

#endif
