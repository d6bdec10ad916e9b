/* ftl/comm.h: the collectives (the comm layer): element types, reduction operations and the communicator
 * calls. They stay usable on their own, without an agent, for tests and benchmarks; the agent builds one
 * communicator per view (agent.h, execute.h). Every public header is C with extern "C" guards, usable from
 * C++; ftl/ftl.h includes them all.
 *
 * A communicator is a fixed, ordered group of ranks 0..world_size-1. Every rank calls the same collectives
 * in the same order with the same counts. Every call has a deadline (ftl_comm_set_timeout) and returns an
 * ftl_err; it never hangs. After FTL_ERR_PEER_LOST, FTL_ERR_ABORTED or FTL_ERR_TIMEOUT the communicator is
 * broken for good: every later call returns the same error at once, and the caller builds a new one over
 * the ranks that are left (the agent does this when the view changes). ftl_comm_error() says what happened,
 * e.g. "ftl: peer rank 2 (127.0.0.1:40123) lost during allreduce: connection reset by peer".
 *
 * Threads: one thread at a time calls a communicator; ftl_comm_abort() may be called from any thread (or a
 * signal handler) and wakes that call within milliseconds. Destroy only when no call is running. */

#ifndef FTL_COMM_H
#define FTL_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "ftl/error.h"
#include "ftl/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. f16 is IEEE binary16, bf16 is bfloat16; both are reduced in f32 and rounded to nearest
 * even on the tcp backend. u8, i8 and bool (one byte, 0 or 1) came in 0.3: what torch's object
 * collectives (pickled bytes) and masks travel as. */
typedef enum ftl_dtype {
	FTL_F32,
	FTL_F64,
	FTL_F16,
	FTL_BF16,
	FTL_I32,
	FTL_I64,
	FTL_U8,
	FTL_I8,
	FTL_BOOL,
	FTL_DTYPE_MAX
} ftl_dtype;

extern FTL_API const char *const ftl_dtype_strs[FTL_DTYPE_MAX];

/* Bytes per element, or 0 for a value out of range. */
FTL_API size_t ftl_dtype_size(ftl_dtype dtype);

/* Reductions. FTL_AVG is the sum divided by the world size (integer division for the integer types, of
 * the sum wrapped to the type's width). Integer sums and products wrap. FTL_PROD, FTL_BAND, FTL_BOR and
 * FTL_BXOR came in 0.3; the bitwise three take integer and bool dtypes only. On bool, sum and max are
 * "any" (or), product and min are "all" (and), xor is parity, avg is refused: the results torch's gloo
 * gives, and always 0 or 1. A pair the build cannot reduce is FTL_ERR_INVALID (a float with a bitwise op,
 * avg of bool) or FTL_ERR_UNSUPPORTED (nccl has no bitwise op), with the reason; see
 * ftl_reduce_op_accepts. */
typedef enum ftl_reduce_op {
	FTL_SUM,
	FTL_AVG,
	FTL_MIN,
	FTL_MAX,
	FTL_PROD,
	FTL_BAND,
	FTL_BOR,
	FTL_BXOR,
	FTL_REDUCE_OP_MAX
} ftl_reduce_op;

/* 1 when op is defined on dtype (whatever the backend), else 0. */
FTL_API int ftl_reduce_op_accepts(ftl_reduce_op op, ftl_dtype dtype);

extern FTL_API const char *const ftl_reduce_op_strs[FTL_REDUCE_OP_MAX];

/* Collective backends. */
typedef enum ftl_comm_backend {
	FTL_COMM_TCP,  /* host memory over TCP; always built */
	FTL_COMM_NCCL, /* device memory over NCCL; built when CMake finds CUDA and NCCL */
	FTL_COMM_BACKEND_MAX
} ftl_comm_backend;

extern FTL_API const char *const ftl_comm_backend_strs[FTL_COMM_BACKEND_MAX];

/* 1 when the backend was built into this library (and, for nccl, the library loaded), else 0. */
FTL_API int ftl_comm_backend_is_available(ftl_comm_backend backend);

typedef struct ftl_comm ftl_comm;

/* "peer X is in doubt": called on the thread that runs the call (the caller's, or the progress thread for
 * asynchronous requests), at the moment the comm sees a neighbour's connection break (reset, close, TCP
 * user timeout), and (tcp, with stall_hint_ms set) once per collective round in which the peer it waits on
 * has sent nothing for stall_hint_ms: a host that vanished sends no reset. Meant as a hint for membership,
 * which probes the peer at once; a slow peer answers the probe, so a hint is never a death alone. Must not
 * block and must not call back into the communicator. */
typedef void (*ftl_comm_peer_reset_cb)(void *arg, int peer_rank, const char *peer_addr);

/* tcp: asked on the creating thread while ftl_comm_new connects (at least every 20 ms); non-zero ends
 * the create with FTL_ERR_ABORTED. An elastic caller whose view was superseded stops building it at once
 * instead of holding its peers, who refuse its stale comm id, until the connect deadline. */
typedef int (*ftl_comm_is_cancelled_cb)(void *arg);

/* tcp: whether ranks on one host talk through a shared-memory segment. auto: when every rank of the
 * communicator is on this host (same boot id and network namespace) and none said off; else tcp. */
typedef enum ftl_comm_shm_mode {
	FTL_COMM_SHM_AUTO,
	FTL_COMM_SHM_OFF,
	FTL_COMM_SHM_MODE_MAX
} ftl_comm_shm_mode;

#define FTL_COMM_SHM_SLOT_MIN 4096u
#define FTL_COMM_SHM_SLOT_MAX (256u << 20)

/* How to build a communicator. Start from ftl_comm_config_init() and set what you need. */
struct ftl_comm_config {
	size_t struct_size;      /* this header's sizeof, set by ftl_comm_config_init() (as ftl_agent_config's) */
	ftl_comm_backend backend;
	int rank;                /* 0..world_size-1 */
	int world_size;          /* 1..FTL_COMM_WORLD_MAX */
	const void *bootstrap;   /* tcp: ftl_comm_tcp_bootstrap() text; nccl: ftl_comm_nccl_unique_id() bytes */
	size_t bootstrap_len;
	uint64_t comm_id;        /* tcp: every rank passes the same value (the view epoch); a peer that is
	                          * building another comm id refuses us, and we dial it again until the
	                          * connect deadline (it is mid view change) */
	int listen_fd;           /* tcp: a listening socket bound to this rank's address, kept by the caller;
	                          * -1: bind the address from the bootstrap for the time of the handshake */
	int timeout_ms;          /* deadline of each collective; default 60000 */
	int connect_timeout_ms;  /* deadline of ftl_comm_new(); default 30000 */
	int tcp_user_timeout_ms; /* tcp: TCP_USER_TIMEOUT, unacknowledged data for this long = peer lost;
	                          * default 10000 */
	int cuda_device;         /* nccl: the device this rank uses */
	void *cuda_stream;       /* nccl: a cudaStream_t to order the collectives on, or NULL for an own one */
	ftl_comm_peer_reset_cb peer_reset_cb; /* optional */
	void *peer_reset_arg;
	ftl_comm_is_cancelled_cb is_cancelled; /* optional (tcp, its shared-memory setup included) */
	void *cancel_arg;
	ftl_comm_shm_mode shm;   /* tcp: shared memory between ranks on one host (FTL_COMM_SHM); default auto */
	size_t shm_slot_bytes;   /* tcp over shared memory: bytes per rank and round (FTL_COMM_SHM_SLOT_KB);
	                          * the segment holds 2 * (world_size + 1) slots; 0: 1 MiB */
	int stall_hint_ms;       /* tcp: a peer silent this long during a collective round is passed to
	                          * peer_reset_cb (see there); 0 (default): never. Since 0.4.1 */
};

#define FTL_COMM_WORLD_MAX 65536

FTL_API void ftl_comm_config_init_sized(struct ftl_comm_config *cfg, size_t size);
#define ftl_comm_config_init(cfg) ftl_comm_config_init_sized((cfg), sizeof(*(cfg)))

/* Connects to the peers and returns a ready communicator in *out. On failure *out is NULL and
 * ftl_error_message() says why. */
FTL_API ftl_err ftl_comm_new(const struct ftl_comm_config *cfg, ftl_comm **out);
/* Before 0.4.5 (kept exported; the same call): */
FTL_API ftl_err ftl_comm_create(const struct ftl_comm_config *cfg, ftl_comm **out) FTL_DEPRECATED("ftl_comm_new");

/* ---- the allreduce family: one call, one options struct ----
 *
 * ftl_comm_allreduce(comm, sendbuf, recvbuf, count, dtype, op, opts, req): recvbuf[i] = op over all ranks of
 * sendbuf[i], for i < count. sendbuf == recvbuf works in place; other overlaps are refused. opts NULL is a
 * plain allreduce; opts says how else the sum travels (kind below). req NULL blocks until the result is in
 * recvbuf; else the call starts it and returns at once with a request in *req (asynchronous collectives,
 * below). Every rank must make the same call, kind and options included.
 *
 * Kinds:
 * - FTL_ALLREDUCE_PLAIN: the dtype on the wire; blocking or asynchronous.
 * - FTL_ALLREDUCE_BF16: a compressed f32 allreduce (dtype FTL_F32): bf16 on the wire (half the bytes),
 *   every addition done in f32 and each partial sum rounded to bf16 for the next hop, the result widened back
 *   to f32 (avg divides in f32). For sum and avg, |result - exact| <= (world_size + 1) * 2^-8 * sum over
 *   ranks of |sendbuf[i]| (bf16's unit roundoff, once per partial sum plus the input; with error feedback, of
 *   |sendbuf[i] + residual[i]| against the exact sum of those); min and max return the bf16-rounded extreme.
 *   tcp: host memory; nccl: device memory (sendbuf, recvbuf and residual), rounded and widened by CUDA
 *   kernels on the comm's stream with the same bits as the host, in builds that found nvcc (else
 *   FTL_ERR_UNSUPPORTED). opts->residual: NULL, or count floats of error feedback, zero at the start and kept
 *   by the caller between calls on the same data (a gradient bucket): each call adds it to sendbuf before
 *   rounding and stores what the rounding dropped, so input rounding does not accumulate over steps (sum and
 *   avg only). tcp cuts a large buffer into chunks (1 MiB of f32) so that rounding and widening overlap the
 *   transfer, with the same bound and, at 2 ranks, the same bits. Keeps a bf16 buffer until ftl_comm_delete: count *
 *   2 bytes for the largest count so far (nccl), at most 2 MiB (tcp). Blocking only (an asynchronous
 *   compressed allreduce is a gradient bucket's, ftl/gradient.h).
 * - FTL_ALLREDUCE_EXACT: the exact sum of float rows over the world, in an order that cannot matter (dtype
 *   FTL_F32, op FTL_SUM): sendbuf holds this rank's opts->n_rows rows of count floats (its micro-shards'
 *   gradients; NULL when n_rows is 0), the world opts->total_rows in all (the same on every rank; it bounds
 *   the sum); recvbuf (count floats, every rank, not overlapping sendbuf) gets the sum of every row of every
 *   rank. How: the elements are taken in blocks of 64; an allreduce-max agrees on each block's largest
 *   magnitude M; each row's block is scaled by the power of two 2^s that keeps total_rows * M * 2^s within
 *   2^30, rounded to int32 (nearest, ties to even), and the integers are added, locally and by an i32
 *   allreduce. Integer addition is associative and cannot overflow under that bound, so the sum is the same
 *   whatever the world size, the ring or the grouping of rows on ranks; each element keeps
 *   30 - log2(total_rows) bits below its block's M (27 for 8 rows; float keeps 24 below the element). A NaN
 *   or an infinity in any row is FTL_ERR_INVALID on every rank. Host memory, tcp backend (nccl:
 *   FTL_ERR_UNSUPPORTED); blocking only. Costs a max allreduce of count/64 floats and a sum allreduce of as
 *   many bytes as the f32 one, plus the conversions; keeps (count + count/32) * 4 bytes of integers until
 *   ftl_comm_delete, for the largest count so far.
 *
 * A kind or combination this build or backend cannot run is FTL_ERR_UNSUPPORTED, with nothing started. */
typedef enum ftl_allreduce_kind {
	FTL_ALLREDUCE_PLAIN,
	FTL_ALLREDUCE_BF16,
	FTL_ALLREDUCE_EXACT,
	FTL_ALLREDUCE_KIND_MAX
} ftl_allreduce_kind;

extern FTL_API const char *const ftl_allreduce_kind_strs[FTL_ALLREDUCE_KIND_MAX]; /* "plain", "bf16", "exact" */

struct ftl_grad_bucket;

/* Start from ftl_allreduce_opts_init() and set what the kind needs. Size-stamped like ftl_comm_config: the
 * library reads struct_size bytes, so fields added at the end later keep their defaults for a program built
 * against this header. */
typedef struct ftl_allreduce_opts {
	size_t struct_size;          /* this header's sizeof, set by ftl_allreduce_opts_init() */
	ftl_allreduce_kind kind;     /* default FTL_ALLREDUCE_PLAIN */
	float *residual;             /* bf16: error feedback, or NULL (default) */
	size_t n_rows;               /* exact: rows of count floats in this rank's sendbuf */
	uint64_t total_rows;         /* exact: rows over the world, the same on every rank, >= n_rows, > 0 */
	struct ftl_grad_bucket *bucket; /* ftl_allreduce only (ftl/gradient.h): a gradient buffer's bucket, which
				      * says whether to compress and keeps the residual; kind stays plain */
} ftl_allreduce_opts;

FTL_API void ftl_allreduce_opts_init_sized(ftl_allreduce_opts *opts, size_t size);
#define ftl_allreduce_opts_init(opts) ftl_allreduce_opts_init_sized((opts), sizeof(*(opts)))

typedef struct ftl_comm_request ftl_comm_request;

FTL_API ftl_err ftl_comm_allreduce(ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				   ftl_dtype dtype, ftl_reduce_op op, const ftl_allreduce_opts *opts,
				   ftl_comm_request **req);

/* buf on every rank = buf on rank root. */
FTL_API ftl_err ftl_comm_broadcast(ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root);

/* recvbuf (count * world_size elements) = the sendbufs of ranks 0, 1, ... in order. sendbuf may be
 * recvbuf + rank * count (in place). */
FTL_API ftl_err ftl_comm_allgather(ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   ftl_dtype dtype);

/* Returns once every rank has entered the barrier. */
FTL_API ftl_err ftl_comm_barrier(ftl_comm *comm);

/* Asynchronous collectives. ftl_comm_allreduce with a req starts an allreduce and returns at once with a
 * request in *req; the buffers belong to the communicator until the request completes. Several may be
 * outstanding: a progress thread of the communicator (started by the first asynchronous call, joined by ftl_comm_delete) runs
 * them one after the other in the order they were made, so every rank must make them in the same order,
 * as with blocking calls. A blocking call made while requests are outstanding queues behind them and
 * returns when it has run, so the order of all calls is the order they were made.
 *
 * Failure keeps the blocking rules: when a peer dies, the deadline passes (it counts from the moment a
 * request starts running) or ftl_comm_abort is called, the running request and every later outstanding one
 * complete at once with the same sticky error, and ftl_comm_error says why.
 *
 * ftl_comm_wait blocks until *req completes, returns its result, frees it and sets *req to NULL.
 * ftl_comm_test never blocks: *done = 0 (FTL_OK, *req kept) while it runs; else *done = 1 and it returns
 * the result, frees it and sets *req to NULL, like wait. Every request must be waited (or tested done);
 * ftl_comm_delete aborts the ones still running and frees every one not yet waited (their handles are
 * then invalid). A refused argument returns the error with *req = NULL and nothing started.
 * Threads: like blocking calls, one thread at a time makes, waits and tests a communicator's requests.
 * The peer_reset hook of an asynchronous request runs on the progress thread.
 * Backends: tcp (the progress thread); nccl, with no thread: a request is enqueued on the communicator's
 * CUDA stream at once with a CUDA event after it, test queries the events oldest first (and
 * ncclCommGetAsyncError, the abort flag, the deadline), wait polls the same way. Buffers are device memory
 * there, and the caller orders what produced them before the call (same stream, or synchronised). */
FTL_API ftl_err ftl_comm_wait(ftl_comm *comm, ftl_comm_request **req);
FTL_API ftl_err ftl_comm_test(ftl_comm *comm, ftl_comm_request **req, int *done);

/* ---- point-to-point and all-to-all (0.3) ----
 *
 * ftl_comm_p2p runs a batch of sends and receives between pairs of ranks, all at once: every op of the
 * batch makes progress together, so a ring shift (send to rank + 1, receive from rank - 1, one batch) or an
 * exchange with many peers cannot deadlock on the order of the ops. Only the ranks the ops name take part;
 * the others need not call. Matching: per pair and direction, the k-th send from a to b meets the k-th
 * receive of b from a, batch or not, and both give the same number of bytes (dtype may differ); a header
 * with the pair's sequence number and the bytes checks it. A mismatch is FTL_ERR_INVALID for the receiver,
 * with both sizes in the reason, and breaks the communicator: the sender, whose send may have completed
 * (a send returns once the bytes are handed to the kernel or the peer), fails at its next call. A peer
 * may not be this rank. Blocking, under the collectives' rules: the deadline
 * (the whole batch), abort, and a peer that dies fails the batch with FTL_ERR_PEER_LOST, the communicator
 * broken for good (every rank learns at its next call).
 * tcp: one two-way connection per pair, made the first time the pair exchanges (the lower rank dials the
 * higher one's listening socket), so the communicator needs cfg.listen_fd, a listener kept by the caller
 * (the agent's): without one, FTL_ERR_UNSUPPORTED. nccl: ncclSend and ncclRecv in one group, device
 * memory, on the communicator's stream. */
typedef struct ftl_p2p_op {
	int is_recv;     /* 0: send buf to peer; 1: receive from peer into buf */
	int peer;        /* 0..world_size-1, not this rank */
	void *buf;       /* count elements of dtype (a send only reads them) */
	size_t count;
	ftl_dtype dtype;
} ftl_p2p_op;

FTL_API ftl_err ftl_comm_p2p(ftl_comm *comm, const ftl_p2p_op *ops, int n_ops);

/* All to all, a collective (every rank calls it): block q of rank r's sendbuf goes to rank q, where it is
 * block r of recvbuf. Blocks lie one after the other in rank order; send_counts[q] and recv_counts[q] give
 * their sizes in elements, or, NULL, count each. The counts must agree (what r sends q is what q receives
 * from r), else FTL_ERR_INVALID on both. sendbuf and recvbuf may not overlap. One ftl_comm_p2p batch with
 * every other rank (so the same links and rules); this rank's own block is copied. */
FTL_API ftl_err ftl_comm_alltoall(ftl_comm *comm, const void *sendbuf, const size_t *send_counts, void *recvbuf,
				  const size_t *recv_counts, size_t count, ftl_dtype dtype);

/* A communicator over some of comm's ranks (0.3): ranks lists n of them (1..world size, ascending, this rank
 * among them), and every rank listed calls this with the same list; in the new one, rank i is ranks[i].
 * Its comm id is derived from comm's and the list (two splits of other ranks never meet); the rest of its
 * config is cfg's (NULL: defaults): listen_fd, timeouts, shm, is_cancelled. The others take no part.
 * Works on a healthy communicator; the new one lives apart (delete both). tcp only (FTL_ERR_UNSUPPORTED
 * on nccl), from the parent's bootstrap addresses. */
FTL_API ftl_err ftl_comm_split(ftl_comm *comm, const int *ranks, int n, const struct ftl_comm_config *cfg,
			       ftl_comm **out);

/* A smaller communicator without the ranks in exclude (1 to world size - 1 of them, renumbered in order),
 * built from this one without a new bootstrap; works on a broken communicator. nccl >= 2.27 only; tcp answers
 * FTL_ERR_UNSUPPORTED (build a new one with ftl_comm_new). The old communicator still needs deleting. */
FTL_API ftl_err ftl_comm_shrink(ftl_comm *comm, const int *exclude, int exclude_count, ftl_comm **out);

/* Any thread: the running call (if any) returns FTL_ERR_ABORTED without waiting any more (tcp: it completes
 * only where the rest of its data has arrived already, as from a peer that finished its part and left), and
 * every later one returns FTL_ERR_ABORTED. */
FTL_API void ftl_comm_abort(ftl_comm *comm);
/* Whether ftl_comm_abort was called on comm (any thread), or comm is broken for good (0.3). */
FTL_API int ftl_comm_is_aborted(const ftl_comm *comm);

/* Closes connections and frees the communicator; NULL is fine. Never blocks on the network: the nccl
 * backend tears the communicator down on a detached thread. */
FTL_API void ftl_comm_delete(ftl_comm *comm);
/* Before 0.4.5 (kept exported; the same call): */
FTL_API void ftl_comm_destroy(ftl_comm *comm) FTL_DEPRECATED("ftl_comm_delete");

/* Sets the deadline of later calls, in milliseconds (> 0). FTL_ERR_INVALID for a bad value. */
FTL_API ftl_err ftl_comm_set_timeout(ftl_comm *comm, int timeout_ms);

/* The last diagnostic, "" when none: a copy for the calling thread, valid until its next ftl_comm_error call
 * (any thread may call it, while another runs the communicator's calls). */
FTL_API const char *ftl_comm_error(const ftl_comm *comm);

FTL_API int ftl_comm_rank(const ftl_comm *comm);
FTL_API int ftl_comm_world_size(const ftl_comm *comm);

/* tcp bootstrap: the data addresses of ranks 0..n-1 ("host:port", "[v6]:port"), one per line. Writes at
 * most cap bytes to buf (which may be NULL when cap is 0) and returns the length the text needs, like
 * snprintf, or 0 for bad input (n < 1, an empty or too long address, one with a newline). */
FTL_API size_t ftl_comm_tcp_bootstrap(char *buf, size_t cap, const char *const *addrs, int n);

/* nccl bootstrap: rank 0 makes a fresh unique id (FTL_COMM_NCCL_ID_LEN bytes) and the rendezvous hands it
 * to every rank as the bootstrap data. Returns FTL_ERR_UNSUPPORTED when nccl is not built in. */
#define FTL_COMM_NCCL_ID_LEN 128
FTL_API ftl_err ftl_comm_nccl_unique_id(void *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* FTL_COMM_H */
