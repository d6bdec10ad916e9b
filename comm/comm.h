/* comm: the seam between the public collective calls (include/ftl/comm.h) and the backends.
 *
 * Three layers, each calling only the ones below it. The core (comm_core.c) is what everything shares:
 * the sticky error (ftl_comm_fail), the shared part of a communicator, the checks of a call and its
 * dispatch through ftl_comm_backend_ops. The transports (comm_tcp*.c with comm_shm*.c, comm_nccl.c) embed
 * struct ftl_comm as their first member, only move bytes, and call the core. The face (comm.c, with
 * comm_allreduce.c, comm_p2p.c, comm_split.c) checks the arguments of the public calls and creates a
 * communicator through the transport table (struct ftl_comm_transport), which each transport fills
 * with one constant. A backend never sees a bad argument, a zero count in allreduce/broadcast/allgather,
 * or a call on a broken communicator: the face and the core answer those themselves.
 *
 * comm_async.c adds the asynchronous requests on top, in one of two ways. A backend whose calls block
 * (tcp, ops say is_async) gets a queue and a progress thread per communicator: it still sees one call at a
 * time, but not always on the same thread (the caller's when nothing is queued, the progress thread's
 * otherwise). A stream-ordered backend (nccl, ops have enqueue) needs no thread: a request is put on its
 * stream at once with a mark after it, and wait/test look at the marks oldest first. */
#ifndef FTL_COMM_COMM_H
#define FTL_COMM_COMM_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/diag.h"
#include "base/kept_error.h"
#include "ftl/comm.h"

struct ftl_comm;
struct ftl_comm_call;

#define FTL_COMM_ADDR_MAX 64 /* a rank's "host:port" or "[v6]:port" from the bootstrap, with its NUL */

/* What a backend provides. Every function gets validated arguments on a healthy communicator and
 * returns FTL_OK or the result of ftl_comm_fail(). */
struct ftl_comm_backend_ops {
	ftl_err (*allreduce)(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			     ftl_dtype dtype, ftl_reduce_op op);
	/* held: this rank's buf already holds the root's bytes (ftl_comm_broadcast_held); the backend may leave
	 * it alone (shared memory skips the copy out) or write the same bytes (a tcp chain forwards through it). */
	ftl_err (*broadcast)(struct ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root, bool held);
	ftl_err (*allgather)(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			     ftl_dtype dtype);
	ftl_err (*barrier)(struct ftl_comm *comm);
	/* NULL when the backend cannot shrink; may be called on a broken communicator. */
	ftl_err (*shrink)(struct ftl_comm *comm, const int *exclude, int exclude_count, struct ftl_comm **out);
	/* Whether shrink works in this process (a runtime may lack what the headers declared); NULL: it does
	 * when shrink is set. */
	bool (*can_shrink)(void);
	/* Completes a setup that the constructor only started (a non-blocking NCCL init); returns at once
	 * when it is done. NULL when the backend's communicators are ready at creation. comm.c calls it before
	 * every call, so the first collective waits for the setup and whatever ran meanwhile overlapped it. */
	ftl_err (*await)(struct ftl_comm *comm);
	/* Wakes a blocked call; is_aborted is already set. Any thread, async-signal-safe. */
	void (*abort)(struct ftl_comm *comm);
	/* After abort: shuts the connections down, so that a peer in a call with this rank fails at once
	 * instead of at its deadline (ftl_comm_hang_up). NULL: abort alone. */
	void (*hang_up)(struct ftl_comm *comm);
	void (*destroy)(struct ftl_comm *comm);
	/* The compressed f32 allreduce (FTL_ALLREDUCE_BF16) in the backend's own memory; NULL: comm.c
	 * compresses in host memory around a bf16 allreduce (tcp). residual may be NULL. */
	ftl_err (*allreduce_bf16)(struct ftl_comm *comm, const float *sendbuf, float *recvbuf, size_t count,
				  ftl_reduce_op op, float *residual);
	/* Stream-ordered backends only (else NULL). enqueue puts the call on the stream without waiting and
	 * returns in *mark where it ends. poll looks whether the mark is reached (*is_done), failing the
	 * communicator on an abort, an error the backend reports or deadline_ms (monotonic, ftl_comm_now_ms);
	 * with is_blocking it returns only when the mark is reached or it failed. release_mark frees a mark. */
	ftl_err (*enqueue)(struct ftl_comm *comm, const struct ftl_comm_call *call, void **mark);
	ftl_err (*poll)(struct ftl_comm *comm, void *mark, int64_t deadline_ms, bool is_blocking, bool *is_done);
	void (*release_mark)(struct ftl_comm *comm, void *mark);
	/* The bootstrap address of a rank (tcp), what a split builds its bootstrap from; NULL: no split. */
	const char *(*peer_addr)(const struct ftl_comm *comm, int rank);
	/* A batch of n_ops validated sends and receives, all progressing together (ftl_comm_p2p's rules);
	 * NULL: the backend has none (FTL_ERR_UNSUPPORTED). */
	ftl_err (*p2p)(struct ftl_comm *comm, const ftl_p2p_op *ops, int n_ops);
	/* Calls may run on the communicator's progress thread (asynchronous requests); else those are
	 * refused with FTL_ERR_UNSUPPORTED. */
	bool is_async;
	/* The backend has no band, bor or bxor (nccl): comm.c refuses them with FTL_ERR_UNSUPPORTED. */
	bool is_without_bitwise;
};

struct ftl_comm_async; /* comm_async.c */

/* The part every backend shares. */
struct ftl_comm {
	const struct ftl_comm_backend_ops *ops;
	ftl_comm_backend backend;
	int rank;
	int world_size;
	int timeout_ms;                       /* deadline of each call */
	uint64_t comm_id;                     /* the config's: which view this communicator was built for */
	atomic_int is_aborted;                /* set by ftl_comm_abort from any thread */
	_Atomic ftl_err broken;               /* FTL_OK while usable; else the error every call returns */
	ftl_kept_error error;                 /* the last diagnostic (written under error_lock, if set) */
	pthread_mutex_t *error_lock;          /* the async requests' lock while they run, else NULL */
	ftl_comm_peer_reset_cb peer_reset_cb; /* hint for membership; may be NULL */
	void *peer_reset_arg;
	int stall_hint_ms;                    /* the config's: a peer this long silent in a round is hinted */
	struct ftl_comm_async *async;         /* NULL until the first asynchronous call */
	void *wire;                           /* the bf16 allreduce's bf16 buffer, kept between calls */
	size_t wire_cap;                      /* ... its size in bytes */
	size_t bf16_chunk;                    /* ... elements per chunk of its pipeline; 0: one pass */
	void *exact_scratch;                  /* the exact allreduce's integers, kept between calls */
	size_t exact_scratch_cap;             /* ... its size in bytes */
};

/* One collective call with its validated arguments: what a queued request or a blocking call runs. */
enum ftl_comm_call_kind {
	FTL_COMM_CALL_ALLREDUCE,
	FTL_COMM_CALL_BROADCAST,
	FTL_COMM_CALL_ALLGATHER,
	FTL_COMM_CALL_BARRIER,
	FTL_COMM_CALL_ALLREDUCE_BF16, /* f32 in and out, bf16 on the wire (backends with allreduce_bf16) */
	FTL_COMM_CALL_P2P,            /* a batch of sends and receives (comm_p2p.c); count is the number of ops */
	FTL_COMM_CALL_KIND_MAX
};

extern const char *const ftl_comm_call_kind_strs[FTL_COMM_CALL_KIND_MAX];

struct ftl_comm_call {
	enum ftl_comm_call_kind kind;
	const void *sendbuf;
	void *recvbuf;  /* broadcast: the buffer */
	size_t count;
	ftl_dtype dtype;
	ftl_reduce_op op;
	int root;
	float *residual; /* allreduce_bf16: error feedback, or NULL */
	bool held;       /* broadcast: this rank already holds the root's bytes */
	const ftl_p2p_op *p2p_ops; /* p2p: count validated ops (the caller's, alive for the call) */
};

/* comm.c: ftl_comm_broadcast where some ranks already hold the root's bytes, each saying so in held: a
 * state sync after a join, where only the joiner lacks them. The result is the same; a backend that can
 * spares the holders the copy (shared memory), so on a shared host the root and the joiner get the cores. */
ftl_err ftl_comm_broadcast_held(ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root, bool held);

/* comm_core.c: the checks every collective shares: usable communicator, known dtype, byte count without
 * overflow (count * multiplier elements, the bytes of count of them in *bytes). */
ftl_err ftl_comm_check_call(struct ftl_comm *comm, const char *what, ftl_dtype dtype, size_t count,
			    size_t multiplier, size_t *bytes);
/* comm_core.c: whether two byte ranges share a byte (empty ones never do). */
bool ftl_comm_overlaps(const void *a, size_t a_len, const void *b, size_t b_len);
/* comm_core.c: "tcp", "nccl", or "unknown". */
const char *ftl_comm_backend_name(ftl_comm_backend backend);

/* comm_allreduce.c: the caller's options (NULL: a plain allreduce) widened into out, this library's size,
 * with the kind checked; FTL_ERR_INVALID with the diag saying why. */
ftl_err ftl_allreduce_opts_read(const ftl_allreduce_opts *opts, ftl_allreduce_opts *out);

/* comm_exact.c: the exact allreduce (FTL_ALLREDUCE_EXACT) with validated arguments, its integers in
 * comm->exact_scratch. */
ftl_err ftl_comm_exact_sum(struct ftl_comm *comm, const float *rows, size_t n_rows, size_t count,
			   uint64_t total_rows, float *out);

/* comm_core.c: runs the call through the backend's ops, on the calling thread. */
ftl_err ftl_comm_call_run(struct ftl_comm *comm, const struct ftl_comm_call *call);

/* comm_bf16_pipeline.c: the bf16 allreduce (FTL_ALLREDUCE_BF16) in host memory around a bf16 allreduce (tcp), with
 * validated arguments: in chunks of comm->bf16_chunk elements whose rounding and widening overlap the
 * transfer, or in one pass under two chunks. */
#define FTL_COMM_BF16_CHUNK ((size_t)1 << 18)
ftl_err ftl_comm_bf16_on_host(struct ftl_comm *comm, const float *sendbuf, float *recvbuf, size_t count,
			      ftl_reduce_op op, float *residual);

/* comm_bf16_pipeline.c: sets the chunk of that pipeline (tests and benchmarks); 0: always one pass. */
void ftl_comm_bf16_set_chunk(struct ftl_comm *comm, size_t count);

/* comm_async.c: a blocking call, in order with the outstanding requests: on the caller's thread when none
 * is outstanding, else queued behind them and waited for. */
ftl_err ftl_comm_async_call(struct ftl_comm *comm, const struct ftl_comm_call *call);

/* comm_async.c: the plain allreduce of validated arguments as a blocking call (ftl_comm_async_call), what
 * the kinds built on it (the exact sum) run; a zero count returns at once. */
ftl_err ftl_comm_async_allreduce(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				  ftl_dtype dtype, ftl_reduce_op op);

/* comm_async.c: queues the call as a request (starting the progress thread the first time). */
ftl_err ftl_comm_async_submit(struct ftl_comm *comm, const struct ftl_comm_call *call, ftl_comm_request **req);

/* comm_async.c: requests made and not yet completed. */
int ftl_comm_async_pending(struct ftl_comm *comm);

/* comm_async.c: aborts what is still running, joins the progress thread, frees every request not waited. */
void ftl_comm_async_destroy(struct ftl_comm *comm);

/* Creates a communicator whose setup may still be running (a non-blocking NCCL init: started, not waited
 * for): the first call on it, or ftl_comm_await, completes it. tcp connects here as ftl_comm_new does.
 * What the caller does between the two (a state-sync header over the host comm) overlaps the setup. */
ftl_err ftl_comm_start(const struct ftl_comm_config *cfg, struct ftl_comm **out);

/* Waits for a started communicator's setup; FTL_OK at once when it is ready. A failure breaks it. */
ftl_err ftl_comm_await(struct ftl_comm *comm);

/* Whether ftl_comm_shrink can work on comm in this process (backend and runtime). */
bool ftl_comm_can_shrink(const struct ftl_comm *comm);

/* Fills the shared part from a validated config. */
void ftl_comm_base_init(struct ftl_comm *comm, const struct ftl_comm_backend_ops *ops,
			const struct ftl_comm_config *cfg);

/* Records "ftl: <message>" as the diagnostic and returns err. With is_fatal the communicator is broken
 * for good (a failed or half-done transfer, an abort); without, it stays usable (a refused argument). */
ftl_err ftl_comm_fail(struct ftl_comm *comm, ftl_err err, bool is_fatal, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same into the calling thread's diag (creation, before a communicator exists). */
ftl_err ftl_comm_fail_diag(ftl_err err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Milliseconds on the monotonic clock, for deadlines. */
int64_t ftl_comm_now_ms(void);
/* Leaves comm for good, telling the peers: it is aborted, and its connections are shut down (not closed:
 * the descriptors stay the owner's until destroy), so a peer waiting in a call with this rank fails then,
 * as if it had died. For a communicator its owner holds but will never call again (a subgroup whose parent
 * communicator was replaced: train/subgroups.c). The calling thread must not be in a call on comm. */
void ftl_comm_hang_up(ftl_comm *comm);

/* A transport as the face sees it: one constant in the transport's own file, listed by backend in comm.c's
 * table (a backend not built in has no entry). */
struct ftl_comm_transport {
	/* Creates a communicator from a validated config; its setup may still be running (ftl_comm_start). */
	ftl_err (*create)(const struct ftl_comm_config *cfg, struct ftl_comm **out);
	/* 1 when the transport can work in this process, else 0 with the reason in the diag; NULL: always. */
	int (*probe)(void);
	/* Writes the unique id a communicator's bootstrap starts from (nccl); NULL: the transport needs none. */
	ftl_err (*make_id)(void *buf, size_t cap);
};

extern const struct ftl_comm_transport ftl_comm_tcp_transport;
#ifdef FTL_HAVE_NCCL
extern const struct ftl_comm_transport ftl_comm_nccl_transport;
/* 1 when the loaded NCCL has ncclCommShrink (2.27+, found with dlsym), else 0. */
bool ftl_comm_nccl_can_shrink(void);
/* 1 when NCCL loads and a CUDA device is visible; else 0 with the reason in the diag. */
int ftl_comm_nccl_probe(void);
/* Teardowns still running on detached threads (tests wait for 0 before they exit). */
int ftl_comm_nccl_pending_teardowns(void);
#endif

#endif /* FTL_COMM_COMM_H */
