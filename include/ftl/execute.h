/* Elastic training: ftl_execute runs one training step across the current view, and survives members
 * dying and joining between (and during) steps without restarting the process.
 *
 * What ftl_execute(agent, step, ctx) does:
 *  1. waits for a committed view that includes this worker (a hot spare waits here until it is needed);
 *  2. makes sure the communicator matches the view, building it from the view's bootstrap data (the old
 *     one is torn down off the critical path);
 *  3. if the view changed since the last successful step, brings every member to rank 0's state by
 *     broadcast: the registered buffers, the step counter, the sampler position, the save/load bytes;
 *     when no member has live state (a new job, or every worker died), rank 0 first loads the newest
 *     checkpoint that verifies and has the registered shape (checkpoint_dir below), skipping, with a log
 *     line, any that does not; when the directory holds checkpoints but none of them can be loaded, it
 *     returns an error naming the directory, the file and what differs (unless checkpoint_fresh);
 *  4. runs step(ctx, info);
 *  5. when a collective inside the step fails because a peer is gone (peer lost, timed out, aborted by a
 *     view change), waits for the next view and runs the step again, up to max_retries times. Only such
 *     failures count: waiting for a quorum or for the next view, and a communicator build or state sync
 *     that fails because the view was superseded meanwhile, spend no retry. A view whose communicator
 *     failed is never built again: with no membership change to explain the failure, the rendezvous
 *     commits the same members under the next epoch, which every member builds once;
 *  6. on success advances the step counter and the sampler position and returns FTL_OK; every
 *     checkpoint_every steps rank 0 first copies the state into the checkpoint writer's staging buffer
 *     (the only cost to the step: the file is written, fsynced and renamed by the writer's thread).
 * It returns an error when the job cannot continue: fewer than min_workers for longer than
 * below_min_timeout, retries exhausted, or an error that is not about a peer (the message says which).
 * `ftlctl status` shows where it stands (execute: idle, waiting_for_view, building_comm, syncing, running,
 * backing_off after a failure, failed). When this worker has left (ftl_agent_leave, `ftlctl leave`) it
 * returns an error too; if it was rank 0 and its state is newer than the last checkpoint, it first writes
 * one and waits until it is durable (ftl_agent_leave does the same when called from the thread that runs
 * ftl_execute).
 *
 * THE STEP CONTRACT: a step may be run more than once for the same step number (after a failure). It must
 * change the registered state only after every collective of the step returned FTL_OK, and must return
 * the first error a collective returned. Then a retried step starts from the same state on every rank. */
#ifndef FTL_EXECUTE_H
#define FTL_EXECUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl/export.h"

#include "ftl/agent.h"
#include "ftl/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ftl_step_info {
	int rank;                  /* in the current view */
	int world_size;
	uint64_t step;             /* steps completed so far by the job (0 for the first) */
	uint64_t view_epoch;
	int attempt;               /* 0 the first time this step runs, 1.. on retries */
	/* The sampler's share of this step for this rank (see ftl_set_sampler): dataset indices, and the
	 * data epoch and position they were drawn at. n_indices is 0 when no sampler is set. */
	const uint64_t *indices;
	size_t n_indices;
	uint64_t data_epoch;
	uint64_t sample_pos;
	/* With a fixed global batch (ftl_batch_config): the samples the step takes over every rank together
	 * (global_batch, or fewer at the end of a data epoch), 0 otherwise. Compute indices in micro-batches
	 * of micro_batch (the last may be shorter; 0: all at once) and accumulate their gradients. In
	 * reproducible mode each micro-batch is one of the step's total_micro fixed micro-shards, this rank's
	 * first being number first_micro: compute each one's gradient whole, in its own row, and sum the rows
	 * with ftl_allreduce's FTL_ALLREDUCE_EXACT (ftl/comm.h). */
	uint64_t global_batch;
	uint32_t micro_batch;
	uint32_t first_micro;
	uint32_t total_micro;
} ftl_step_info;

typedef ftl_err (*ftl_step_fn)(void *ctx, const ftl_step_info *info);

/* The global batch. By default it grows with the world (the sampler's batch_per_rank on every rank, see
 * ftl_set_sampler; the learning rate then wants ftl_lr_policy, ftl/elastic.h). With global_batch set,
 * every step takes exactly that many positions of the data epoch's permutation at any world size, split
 * across the ranks as evenly as possible (ranks differ by at most one sample; fewer at the end of a data
 * epoch); average the gradients by sample count, not by rank count, and a step computes the mean gradient
 * over the same samples whatever the world size. max_batch_per_rank cuts a rank's share into micro-batches
 * (gradient accumulation) when it is more than a rank can hold. Reproducible mode cuts the step into fixed
 * micro-shards of max_batch_per_rank positions, each computed whole on one rank, and sums them exactly
 * (FTL_ALLREDUCE_EXACT, ftl/comm.h): the parameters after step S are then bit for bit the same whatever the world
 * size and whatever failures came before S. Frozen: unlike the config structs it carries no size and never
 * grows (it sits inside ftl_training_config); a new global-batch setting comes as a name only
 * (ftl_set_batch_from_settings). */
typedef struct ftl_batch_config {
	uint64_t global_batch;         /* [FTL_GLOBAL_BATCH] samples per step over all ranks; 0 = off (default) */
	uint32_t max_batch_per_rank;   /* [FTL_MAX_BATCH_PER_RANK] micro-batch (reproducible: micro-shard) size;
					* 0 = a rank takes its share at once (default) */
	bool is_reproducible;          /* [FTL_REPRODUCIBLE=0|1] needs both of the above; default 0 */
} ftl_batch_config;

/* Gradient compression (FTL_COMM_COMPRESS): what a gradient allreduce (a bucket's, ftl/gradient.h)
 * puts on the wire. Every other collective (state sync, metrics, the exact sum) stays exact. */
typedef enum ftl_compress {
	FTL_COMPRESS_DEFAULT = -1, /* for ftl_grad_bucket_new: the job's FTL_COMM_COMPRESS */
	FTL_COMPRESS_OFF,          /* "off": f32 on the wire, the exact f32 allreduce (default) */
	FTL_COMPRESS_BF16,         /* "bf16": bf16 on the wire (half the bytes), f32 accumulation */
	FTL_COMPRESS_BF16_EF,      /* "bf16-ef": bf16 with error feedback (the dropped low bits go into the
				    * next step's gradient, so input rounding does not accumulate) */
	FTL_COMPRESS_MAX
} ftl_compress;

extern FTL_API const char *const ftl_compress_strs[FTL_COMPRESS_MAX]; /* "off", "bf16", "bf16-ef" */

/* Training settings, also from the environment by ftl_agent_config_from_env (names in brackets). Set
 * them with ftl_set_training before ftl_agent_start. */
typedef struct ftl_training_config {
	size_t struct_size;            /* set by ftl_training_config_default() (as ftl_agent_config's) */
	uint32_t min_workers;          /* [FTL_MIN_WORKERS] default 1 */
	uint32_t max_workers;          /* [FTL_MAX_WORKERS] default 1024; more wait as hot spares */
	int64_t settle_ms;             /* [FTL_SETTLE_MS] joins closer than this make one view change; 500 */
	int max_retries;               /* [FTL_MAX_RETRIES] per step; default 10 */
	int64_t below_min_timeout_ms;  /* [FTL_BELOW_MIN_TIMEOUT_MS] give up waiting for workers, or for a
					* quorum (a side without one waits and spends no retries); 60000 */
	uint32_t expected_workers;     /* [FTL_EXPECTED_WORKERS] the job's first view waits until this many
					* workers see each other (so pods that start apart do not train as
					* separate jobs); 0 = min_workers (default) */
	int64_t expected_wait_ms;      /* [FTL_EXPECTED_WAIT_MS] ... for at most this long, then min_workers
					* rules; 0 = for ever; default 300000 */
	int collective_timeout_ms;     /* [FTL_COLLECTIVE_TIMEOUT_MS] per collective; default 30000 */
	ftl_comm_backend backend;      /* [FTL_COMM=tcp|nccl] default tcp */
	int cuda_device;               /* [FTL_CUDA_DEVICE] nccl only */
	/* Checkpoints: rank 0 writes one file every checkpoint_every steps into checkpoint_dir (atomic, fsynced,
	 * checksummed; a writer thread does the I/O); a job that starts with no live state resumes from the
	 * newest one that verifies. Off when checkpoint_dir is empty. */
	char checkpoint_dir[256];      /* [FTL_CHECKPOINT_DIR] made if missing; "" = off (default) */
	int64_t checkpoint_every;      /* [FTL_CHECKPOINT_EVERY] steps; default 100 */
	int checkpoint_keep;           /* [FTL_CHECKPOINT_KEEP] newest files kept; default 3 */
	bool checkpoint_wait;          /* [FTL_CHECKPOINT_BUSY=skip|wait] when the previous write still runs:
					* skip this checkpoint (default) or wait for it */
	bool checkpoint_fresh;         /* [FTL_CHECKPOINT_FRESH=0|1] when the directory holds checkpoints but
					* none can be loaded (another shape, all corrupt): start from the initial
					* state (1) instead of stopping with an error (0, default); the files are
					* kept either way */
	bool checkpoint_blake2b;       /* [FTL_CHECKPOINT_CHECKSUM=xxh3|blake2b] the checksum new files carry:
					* XXH3-128 (default, fast) or BLAKE2b-256; files of either kind load */
	ftl_comm_shm_mode comm_shm;    /* [FTL_COMM_SHM=auto|off] tcp: shared memory when every rank is on this
					* host (same boot id and network namespace); default auto */
	int comm_shm_slot_kb;          /* [FTL_COMM_SHM_SLOT_KB] shared-memory bytes per rank and round,
					* 4..262144 KiB; 0 = 1024 (default) */
	ftl_batch_config batch;        /* the global batch (above); ftl_set_batch changes it afterwards */
	ftl_compress compress;         /* [FTL_COMM_COMPRESS=off|bf16|bf16-ef] gradient allreduces (above);
					* tcp only, and not with FTL_REPRODUCIBLE=1; default off */
	uint32_t spares;               /* [FTL_SPARES] the youngest this many workers wait as hot spares
					* while the job grows: a new worker makes the oldest spare a member and
					* waits in its place, and a member that dies or leaves is replaced by
					* a spare (the view keeps its size). 0 = none (default) */
	/* Replicas (0.4): a sharded model (HSDP, FSDP) trains only where every shard of a replica is there.
	 * A worker that declares a replica is in a view only with all replica_size members of it, each at its
	 * own index; views are laid out replica by replica, so rank = replica rank * replica_size + index.
	 * min/max_workers and spares still count workers (a view holds as many whole replicas as fit). Every
	 * worker of the job declares the same replica_size; one that declares another is never in the view. */
	char replica[64];              /* [FTL_REPLICA] the replica's name, as a host or a pod names it */
	uint32_t replica_index;        /* [FTL_REPLICA_INDEX] 0..replica_size-1, one worker each;
					* FTL_REPLICA_INDEX_UNSET (default) with no replica */
	uint32_t replica_size;         /* [FTL_REPLICA_SIZE] workers per replica; 0 = no replicas (default) */
	/* Slow workers (0.4.2): every 16 steps the ranks compare where their time goes and name the rank the
	 * others wait for (status, /metrics, the log). */
	bool slow_replace;             /* [FTL_SLOW_POLICY=report|replace] report the slow rank only
					* (default), or also send it to the spares when one waits to take its
					* place (the view keeps its size; the slow worker waits as the last spare) */
	/* 0.4.5: [FTL_SLOW_POLICY=rebalance] each rank's share of the fixed global batch follows its speed,
	 * measured every 16 steps (a rank twice as slow per sample takes about half the samples; even again
	 * in every new view). Needs global_batch set (batch above), gradients averaged by sample count
	 * (ftl_step_info.n_indices), not the contiguous order, no replicas; not with slow_replace.
	 * Reproducible mode keeps its bits: whole micro-shards move. */
	bool slow_rebalance;
} ftl_training_config;
#define FTL_REPLICA_INDEX_UNSET UINT32_MAX

/* Defaults (see above), with struct_size (as ftl_agent_config_default). */
FTL_API void ftl_training_config_default_sized(ftl_training_config *t, size_t size);
#define ftl_training_config_default(t) ftl_training_config_default_sized((t), sizeof(*(t)))
/* Reads FTL_MIN_WORKERS ... from the environment; FTL_ERR_INVALID with ftl_error_message() naming the
 * variable. */
FTL_API ftl_err ftl_training_config_from_env(ftl_training_config *t);
/* The same from the settings that s holds (ftl/settings.h). */
FTL_API ftl_err ftl_training_config_from_settings(ftl_training_config *t, const ftl_settings *s);
/* Turns training on with these settings, before ftl_agent_start; FTL_ERR_INVALID with ftl_error_message()
 * naming the setting and the fix. */
FTL_API ftl_err ftl_set_training(ftl_agent *a, const ftl_training_config *t);

/* The usual setup in one call: the agent's settings and the job's from the environment (as the two
 * *_from_env calls read them), a new agent with training on, ready for registrations and ftl_agent_start.
 * NULL with ftl_error_message() naming the variable (or saying what else failed). */
FTL_API ftl_agent *ftl_agent_new_from_env(void);
/* The same, with the agent's records (and the settings' warnings) going to log_cb (ftl/agent.h) instead of
 * stderr: for bindings that cannot fill an ftl_agent_config, such as the Python package. NULL with
 * ftl_error_message() saying why. */
FTL_API ftl_agent *ftl_agent_new_from_env_logging(ftl_log_cb log_cb, void *log_user);
/* The same from the settings that s holds instead of the environment (fill s with ftl_settings_load_env
 * first for the environment's, then set the program's own): the way bindings make an agent, with no
 * struct layout to copy. log_cb may be NULL (stderr). s may be freed once this returns. */
FTL_API ftl_agent *ftl_agent_new_from_settings(const ftl_settings *s, ftl_log_cb log_cb, void *log_user);

FTL_API ftl_err ftl_execute(ftl_agent *a, ftl_step_fn step, void *ctx);
/* The reason of the last error ftl_execute (or a collective) returned, kept by the agent: the exception to
 * the diagnostics area (see ftl/error.h), since a view change seen on the agent's thread causes it. The calling
 * thread's ftl_error_message() holds it too. Written by the thread that calls ftl_execute and the collectives:
 * read it there (another thread may see it change under it). */
FTL_API const char *ftl_last_error(ftl_agent *a);

/* Collectives on the current view's communicator, for use inside a step.
 *
 * ftl_allreduce is the allreduce family of ftl/comm.h (ftl_comm_allreduce: opts NULL for a plain one, a kind
 * for bf16 on the wire or the exact sum of rows) on that communicator, plus opts->bucket for a gradient
 * buffer's bucket (ftl/gradient.h). The exact sum's integers are kept by the training between steps.
 *
 * With req, the allreduce starts at once, with ftl_comm_allreduce's asynchronous rules (in order; a lost
 * peer, a timeout or an abort fails every outstanding request at once; blocking collectives queue behind
 * them); plain and bucket allreduces only. ftl_wait and ftl_test consume a completed request and set *req to
 * NULL, like ftl_comm_wait and ftl_comm_test. A request belongs to the communicator it was made on: once a
 * view change has replaced that communicator (the old one aborted its requests and freed them), ftl_wait and
 * ftl_test refuse the request with FTL_ERR_INVALID, free what is left of it and set *req to NULL. Inside a
 * step, wait for every request before returning; the step contract holds as for blocking calls (change the
 * state only after every request completed with FTL_OK). Both backends (nccl: device buffers). */
typedef struct ftl_request ftl_request;
FTL_API ftl_err ftl_allreduce(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype,
			      ftl_reduce_op op, const ftl_allreduce_opts *opts, ftl_request **req);
FTL_API ftl_err ftl_broadcast(ftl_agent *a, void *buf, size_t count, ftl_dtype dtype, int root);
FTL_API ftl_err ftl_allgather(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype);
FTL_API ftl_err ftl_barrier(ftl_agent *a);
/* A subgroup: a communicator over some ranks of the view in use (ranks: distinct view ranks in any order,
 * this one among them), for the program's own collectives with ftl/comm.h's calls on *out (its rank i is
 * ranks[i]). Every rank listed calls it with the same list; it connects within 10 s or fails. It belongs to
 * the communicator in use: when a member dies or the view changes, the agent aborts it with that
 * communicator (its calls then return FTL_ERR_ABORTED, a peer error: the step runs again), and the program
 * makes a new one in the next view (ftl_subgroup_delete the old). FTL_ERR_PEER_LOST when that communicator
 * was replaced while the subgroup was built; tcp only (FTL_ERR_UNSUPPORTED under nccl). */
FTL_API ftl_err ftl_subgroup_new(ftl_agent *a, const int *ranks, int n, ftl_comm **out);
FTL_API void ftl_subgroup_delete(ftl_agent *a, ftl_comm *sub);
/* ftl_comm_p2p and ftl_comm_alltoall (ftl/comm.h) on the current view's communicator: blocking. */
FTL_API ftl_err ftl_p2p(ftl_agent *a, const ftl_p2p_op *ops, int n_ops);
FTL_API ftl_err ftl_alltoall(ftl_agent *a, const void *sendbuf, const size_t *send_counts, void *recvbuf,
			     const size_t *recv_counts, size_t count, ftl_dtype dtype);
FTL_API ftl_err ftl_wait(ftl_agent *a, ftl_request **req);
FTL_API ftl_err ftl_test(ftl_agent *a, ftl_request **req, int *done);

/* State synced from rank 0 to every member after a view change. Buffers are host memory with the tcp
 * backend and device memory with nccl (is_device): nccl broadcasts them in place, and control data (sizes,
 * the step, the sampler position, the save/load bytes) travels over a tcp comm built beside it. Register
 * after ftl_set_training and before the first ftl_execute. FTL_ERR_INVALID with ftl_error_message(): a host
 * buffer under nccl, a device buffer under tcp (where the build has CUDA, nccl jobs ask CUDA about the
 * pointer), an odd-sized device buffer, a full table (64), a bad name. */
FTL_API ftl_err ftl_register_buffer(ftl_agent *a, const char *name, void *ptr, size_t bytes, bool is_device);
/* Anything else: save writes up to cap bytes and returns how many (or the size needed if larger than
 * cap, then it is called again with enough room); load gets them back on the other ranks. */
typedef size_t (*ftl_save_cb)(void *ctx, void *buf, size_t cap);
typedef void (*ftl_load_cb)(void *ctx, const void *buf, size_t len);
FTL_API ftl_err ftl_register_callbacks(ftl_agent *a, ftl_save_cb save, ftl_load_cb load, void *ctx);

/* The elastic sampler: each data epoch visits a seeded permutation of 0..dataset_size-1; every step
 * consumes world_size * batch_per_rank positions, rank r taking the r-th slice. The position is job state
 * (synced and checkpointed), so across a rescale every sample of an epoch is used exactly once. */
FTL_API ftl_err ftl_set_sampler(ftl_agent *a, uint64_t dataset_size, uint32_t batch_per_rank, uint64_t seed);

/* Which dataset index sits at each position of a data epoch. Whatever the order, positions are consumed
 * as above, so each index is still used once per data epoch across rescales. */
typedef enum ftl_sampler_order {
	FTL_SAMPLER_SHUFFLE,     /* "shuffle": a seeded permutation per data epoch (default) */
	FTL_SAMPLER_SEQUENTIAL,  /* "sequential": index = position (a program maps it to its own order) */
	FTL_SAMPLER_CONTIGUOUS,  /* "contiguous": for sequence models. Needs the fixed global batch with
				  * global_batch = S * max_batch_per_rank: the epoch is cut into S streams,
				  * stream s a contiguous stretch of the dataset (lengths differ by at most
				  * one chunk); step t takes chunk t (max_batch_per_rank samples) of every
				  * stream, and each rank takes whole streams, the same ones at every step of a
				  * view (ftl_step_info's first_micro is its first stream). A rescale deals the
				  * streams anew among the ranks: the streams themselves do not change */
	FTL_SAMPLER_ORDER_MAX
} ftl_sampler_order;
extern FTL_API const char *const ftl_sampler_order_strs[FTL_SAMPLER_ORDER_MAX];
/* Before ftl_agent_start, after ftl_set_training; every worker of a job sets the same order. */
FTL_API ftl_err ftl_set_sampler_order(ftl_agent *a, ftl_sampler_order order);
/* The indices ftl_execute hands rank of world in a step that starts at (*data_epoch, *sample_pos) (the
 * sampler, its order and the global batch as set), into out (capacity cap: batch_per_rank, or the global
 * batch when one is set, is always enough), *n of them; then moves (*data_epoch, *sample_pos) to where that
 * step leaves the sampler. For a data loader that fetches the coming steps' samples ahead, assuming the
 * view stays as it is (Python: ftl.torch.ElasticLoader). FTL_ERR_INVALID with ftl_error_message(): no
 * sampler, a rank outside the world, cap too small (then *n is the capacity needed). Any thread; it reads
 * settings only. */
FTL_API ftl_err ftl_sampler_peek(ftl_agent *a, int world, int rank, uint64_t *data_epoch, uint64_t *sample_pos,
				 uint64_t *out, size_t cap, size_t *n);
/* The fixed global batch (ftl_batch_config above; ftl_training_config_from_env reads it with the rest):
 * after ftl_set_training and before ftl_agent_start, in either order with ftl_set_sampler (whose
 * batch_per_rank it then overrides).
 * FTL_ERR_INVALID with ftl_error_message() naming the setting and the fix. */
FTL_API ftl_err ftl_set_batch(ftl_agent *a, const ftl_batch_config *b);
/* The same from the FTL_GLOBAL_BATCH, FTL_MAX_BATCH_PER_RANK and FTL_REPRODUCIBLE that s holds (unset: 0),
 * for bindings: no struct layout to copy. */
FTL_API ftl_err ftl_set_batch_from_settings(ftl_agent *a, const ftl_settings *s);

/* Where the job stands, for reports (any thread). */
/* Set struct_size before the call (ftl_job_status st = {.struct_size = sizeof st}): the library writes only
 * the fields that size holds, so the struct can grow at its end. FTL_ERR_INVALID (and nothing written) when
 * struct_size is unset or unknown to this library. */
typedef struct ftl_job_status {
	size_t struct_size;
	uint64_t step;
	uint64_t view_epoch;
	int rank;
	int world_size;
	uint64_t views_seen;       /* views this worker trained in */
	uint64_t retries;          /* steps run again after a failure */
	uint64_t data_epoch;       /* the data epoch the next step draws from (as of the last ftl_execute) */
} ftl_job_status;
FTL_API ftl_err ftl_get_job_status(ftl_agent *a, ftl_job_status *out);

#ifdef __cplusplus
}
#endif

#endif
