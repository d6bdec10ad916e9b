/* comm_nccl: the GPU backend, NCCL with non-blocking communicators, made abortable and deadline-bound.
 *
 * NCCL's own calls block for as long as a peer is gone. So every communicator here is created with
 * config.blocking = 0: init, collectives and shrink return at once (ncclInProgress) and this file polls
 * ncclCommGetAsyncError and cudaStreamQuery against a deadline and the abort flag. A failed or aborted call
 * returns at once; the communicator it leaves behind is torn down with ncclCommAbort on a detached thread,
 * because that takes about a second (NCCL 2.28.3 on an H100) and must not sit between a failure and the
 * next communicator.
 *
 * Init is started, not waited for: nccl_create returns as soon as ncclCommInitRankConfig has
 * returned ncclInProgress, and the await op (comm.c calls it before the first collective, or the caller
 * through ftl_comm_await) polls it to the end. So whatever the caller does in between (the state-sync
 * header over the host comm) overlaps NCCL's bootstrap. Joins take a fresh init with the unique id from the
 * bootstrap; leaves may use ncclCommShrink(..., NCCL_SHRINK_ABORT) instead (NCCL >= 2.27, checked at
 * compile time and at run time, and resolved with dlsym so the library still loads against an older
 * libnccl; comm_rebuild.c decides). ncclCommRevoke (2.28.7+) is deliberately not used: the GPU machines
 * run 2.28.3, and the shrink-abort path already stops in-flight work.
 *
 * Asynchronous requests need no thread here (comm_async.c): enqueue puts the call on the stream and records
 * a CUDA event after it; poll is one look of the same loop the blocking calls run (the abort flag,
 * ncclCommGetAsyncError, the event instead of the whole stream, the deadline). A non-blocking communicator
 * may answer an enqueue with ncclInProgress: the stream takes nothing more (not even the event) until NCCL
 * says the enqueue is done, which that same loop waits for, deadline-bound.
 *
 * The compressed allreduce (FTL_ALLREDUCE_BF16) runs its rounding and widening as CUDA kernels on the
 * same stream (comm_nccl_compress.cu), built when CMake finds nvcc (FTL_HAVE_NCCL_COMPRESS). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "comm.h"
#ifdef FTL_HAVE_NCCL_COMPRESS
#include "comm_nccl_compress.h"
#endif

_Static_assert(sizeof(ncclUniqueId) == FTL_COMM_NCCL_ID_LEN, "ncclUniqueId size");

#define NONBLOCKING_MIN_VERSION 21400 /* ncclCommInitRankConfig with config.blocking */
#define SHRINK_MIN_VERSION 22700      /* ncclCommShrink */

struct ftl_comm_nccl {
	struct ftl_comm base;
	ncclComm_t nccl;
	cudaStream_t stream;
	bool is_own_stream;
	int device;
	int *scratch; /* one device int, for barrier */
	void *wire;       /* allreduce_bf16's device buffer (stream-ordered allocation), kept between calls */
	size_t wire_cap;  /* ... its size in bytes */
	bool is_ready;              /* the init or shrink that made it has completed */
	int64_t ready_deadline_ms;  /* ... or must have by then */
	const char *setup_what;     /* which call made it, for the diagnostic */
};

static atomic_int pending_teardowns;

int ftl_comm_nccl_pending_teardowns(void)
{
	return atomic_load(&pending_teardowns);
}

static int runtime_version(void)
{
	int v = 0;
	return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

#ifdef NCCL_SHRINK_ABORT
typedef ncclResult_t (*shrink_fn)(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int);

/* ncclCommShrink of the loaded library, or NULL when it has none. */
static shrink_fn loaded_shrink(void)
{
	return runtime_version() >= SHRINK_MIN_VERSION ? (shrink_fn)dlsym(RTLD_DEFAULT, "ncclCommShrink") : NULL;
}
#endif

bool ftl_comm_nccl_can_shrink(void)
{
#ifdef NCCL_SHRINK_ABORT
	return loaded_shrink() != NULL;
#else
	return false;
#endif
}

int ftl_comm_nccl_probe(void)
{
	int n = 0;
	cudaError_t ce = cudaGetDeviceCount(&n);
	if (ce != cudaSuccess || n == 0) {
		ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "no usable CUDA device: %s",
				  ce != cudaSuccess ? cudaGetErrorString(ce) : "device count is 0");
		return 0;
	}
	if (runtime_version() < NONBLOCKING_MIN_VERSION) {
		ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "NCCL %d is older than 2.14", runtime_version());
		return 0;
	}
	return 1;
}

static ftl_err nccl_make_id(void *buf, size_t cap)
{
	ncclUniqueId id;
	ncclResult_t r = ncclGetUniqueId(&id);
	if (r != ncclSuccess)
		return ftl_comm_fail_diag(FTL_ERR_BACKEND, "ncclGetUniqueId: %s", ncclGetErrorString(r));
	memcpy(buf, &id, sizeof(id));
	return FTL_OK;
}

static ftl_err nccl_code(ncclResult_t r)
{
	/* A remote error or a system (socket) error is what a dead peer looks like from here. */
	return r == ncclRemoteError || r == ncclSystemError ? FTL_ERR_PEER_LOST : FTL_ERR_BACKEND;
}

static void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

/* What a wait watches besides NCCL's own state: nothing more (an init), the stream draining (a blocking
 * call), or an event on it (an asynchronous request's mark). */
struct watch {
	ncclComm_t nccl;
	cudaStream_t stream; /* or NULL */
	cudaEvent_t event;   /* or NULL; queried instead of the stream */
	int limit_ms;        /* the timeout the deadline came from, for the diagnostic */
};

/* One look: FTL_OK with *is_done once NCCL has left ncclInProgress and the CUDA work is done; FTL_OK with
 * *is_done false while it runs; else the failure (abort, an error NCCL or CUDA reports, the deadline),
 * which breaks the communicator. */
static ftl_err look(struct ftl_comm_nccl *c, const struct watch *w, int64_t deadline, const char *what, bool *is_done)
{
	*is_done = false;
	if (atomic_load(&c->base.is_aborted))
		return ftl_comm_fail(&c->base, FTL_ERR_ABORTED, true, "%s aborted", what);
	ncclResult_t st = ncclSuccess;
	ncclResult_t r = ncclCommGetAsyncError(w->nccl, &st);
	if (r != ncclSuccess)
		st = r;
	if (st != ncclSuccess && st != ncclInProgress)
		return ftl_comm_fail(&c->base, nccl_code(st), true, "%s failed in NCCL: %s (%s)", what,
				     ncclGetErrorString(st), ncclGetLastError(w->nccl));
	if (st == ncclSuccess) {
		cudaError_t q = w->event != NULL ? cudaEventQuery(w->event)
			      : w->stream != NULL ? cudaStreamQuery(w->stream) : cudaSuccess;
		*is_done = q == cudaSuccess;
		if (q != cudaSuccess && q != cudaErrorNotReady)
			return ftl_comm_fail(&c->base, FTL_ERR_BACKEND, true, "%s failed in CUDA: %s", what,
					     cudaGetErrorString(q));
	}
	if (!*is_done && ftl_comm_now_ms() >= deadline)
		return ftl_comm_fail(&c->base, FTL_ERR_TIMEOUT, true,
				     "%s timed out after %d ms (a peer is stopped, gone or partitioned)", what,
				     w->limit_ms);
	return FTL_OK;
}

/* Looks until done, failed or past the deadline: spinning first, then napping. */
static ftl_err wait_until(struct ftl_comm_nccl *c, const struct watch *w, int64_t deadline, const char *what)
{
	for (unsigned spin = 0;; spin++) {
		bool is_done;
		ftl_err e = look(c, w, deadline, what, &is_done);
		if (e != FTL_OK || is_done)
			return e;
		if (spin > 64)
			nap_us(spin > 4096 ? 200 : 20);
	}
}

/* After a call was handed to NCCL: an enqueue error, or NCCL's own (non-blocking) enqueue waited out, so
 * that the stream may take the next work. */
static ftl_err enqueued(struct ftl_comm_nccl *c, ncclResult_t r, const char *what)
{
	if (r != ncclSuccess && r != ncclInProgress)
		return ftl_comm_fail(&c->base, nccl_code(r), true, "%s: %s (%s)", what, ncclGetErrorString(r),
				     ncclGetLastError(c->nccl));
	struct watch w = {c->nccl, NULL, NULL, c->base.timeout_ms};
	return r == ncclSuccess ? FTL_OK : wait_until(c, &w, ftl_comm_now_ms() + w.limit_ms, what);
}

static ncclDataType_t nccl_dtype(ftl_dtype dtype)
{
	static const ncclDataType_t map[FTL_DTYPE_MAX] = {
		[FTL_F32] = ncclFloat32, [FTL_F64] = ncclFloat64, [FTL_F16] = ncclFloat16,
		[FTL_BF16] = ncclBfloat16, [FTL_I32] = ncclInt32, [FTL_I64] = ncclInt64,
		[FTL_U8] = ncclUint8, [FTL_I8] = ncclInt8, [FTL_BOOL] = ncclUint8,
	};
	return map[dtype];
}

/* The bitwise ops never get here (is_without_bitwise). A bool travels as a u8 of 0 or 1, where max is "any"
 * and min is "all": a sum or a product of bytes would not stay 0 or 1. */
static ncclRedOp_t nccl_op(ftl_reduce_op op, ftl_dtype dtype)
{
	static const ncclRedOp_t map[FTL_REDUCE_OP_MAX] = {
		[FTL_SUM] = ncclSum, [FTL_AVG] = ncclAvg, [FTL_MIN] = ncclMin, [FTL_MAX] = ncclMax,
		[FTL_PROD] = ncclProd,
	};
	if (dtype == FTL_BOOL)
		return op == FTL_SUM || op == FTL_MAX ? ncclMax : ncclMin;
	return map[op];
}

#ifdef FTL_HAVE_NCCL_COMPRESS
/* The compressed allreduce on the stream: round to bf16 into the wire buffer (error feedback in residual),
 * a bf16 allreduce in place (avg as a sum, divided once in f32 when widening), widen into recvbuf. The
 * kernels are comm_nccl_compress.cu's, bit for bit the host's (comm_compress.c). The wire buffer grows in
 * stream order, so an earlier call still using the old one is not disturbed. */
static ftl_err put_bf16(struct ftl_comm_nccl *c, const struct ftl_comm_call *call)
{
	size_t need = call->count * sizeof(uint16_t);
	cudaError_t ce = cudaSuccess;
	if (c->wire_cap < need) {
		if (c->wire != NULL)
			ce = cudaFreeAsync(c->wire, c->stream);
		c->wire = NULL;
		c->wire_cap = 0;
		if (ce == cudaSuccess && (ce = cudaMallocAsync(&c->wire, need, c->stream)) == cudaSuccess)
			c->wire_cap = need;
	}
	if (ce == cudaSuccess)
		ce = ftl_comm_cuda_compress_bf16(call->sendbuf, call->residual, c->wire, call->count, c->stream);
	if (ce != cudaSuccess)
		return ftl_comm_fail(&c->base, FTL_ERR_BACKEND, true, "allreduce_bf16 before the allreduce: %s",
				     cudaGetErrorString(ce));
	ncclRedOp_t op = call->op == FTL_AVG ? ncclSum : nccl_op(call->op, FTL_BF16);
	ftl_err e = enqueued(c, ncclAllReduce(c->wire, c->wire, call->count, ncclBfloat16, op, c->nccl, c->stream),
			     "allreduce_bf16");
	if (e != FTL_OK)
		return e;
	ce = ftl_comm_cuda_expand_bf16(c->wire, call->recvbuf, call->count,
				       call->op == FTL_AVG ? c->base.world_size : 1, c->stream);
	if (ce != cudaSuccess)
		return ftl_comm_fail(&c->base, FTL_ERR_BACKEND, true, "allreduce_bf16 after the allreduce: %s",
				     cudaGetErrorString(ce));
	return FTL_OK;
}
#endif

/* A p2p batch: every send and receive in one NCCL group, so they progress together. */
static ncclResult_t put_p2p(struct ftl_comm_nccl *c, const struct ftl_comm_call *call)
{
	ncclResult_t r = ncclGroupStart();
	for (size_t i = 0; i < call->count && r == ncclSuccess; i++) {
		const ftl_p2p_op *o = &call->p2p_ops[i];
		r = o->is_recv ? ncclRecv(o->buf, o->count, nccl_dtype(o->dtype), o->peer, c->nccl, c->stream)
			       : ncclSend(o->buf, o->count, nccl_dtype(o->dtype), o->peer, c->nccl, c->stream);
	}
	ncclResult_t end = ncclGroupEnd();
	return r != ncclSuccess ? r : end;
}

/* Puts one call on the stream without waiting for it. */
static ftl_err put(struct ftl_comm_nccl *c, const struct ftl_comm_call *call)
{
	const char *what = ftl_comm_call_kind_strs[call->kind];
	ncclResult_t r = ncclSuccess;
	switch (call->kind) {
	case FTL_COMM_CALL_ALLREDUCE:
		if (call->count > 0) /* a zero-count request only marks its place in the order */
			r = ncclAllReduce(call->sendbuf, call->recvbuf, call->count, nccl_dtype(call->dtype),
					  nccl_op(call->op, call->dtype), c->nccl, c->stream);
		break;
	case FTL_COMM_CALL_BROADCAST:
		r = ncclBroadcast(call->recvbuf, call->recvbuf, call->count, nccl_dtype(call->dtype), call->root,
				  c->nccl, c->stream);
		break;
	case FTL_COMM_CALL_ALLGATHER:
		r = ncclAllGather(call->sendbuf, call->recvbuf, call->count, nccl_dtype(call->dtype), c->nccl, c->stream);
		break;
	case FTL_COMM_CALL_BARRIER:
		r = ncclAllReduce(c->scratch, c->scratch, 1, ncclInt32, ncclSum, c->nccl, c->stream);
		break;
	case FTL_COMM_CALL_P2P:
		r = put_p2p(c, call);
		break;
	default:
#ifdef FTL_HAVE_NCCL_COMPRESS
		return put_bf16(c, call);
#else
		return ftl_comm_fail(&c->base, FTL_ERR_UNSUPPORTED, false, "%s is not built in", what);
#endif
	}
	return enqueued(c, r, what);
}

/* A blocking call: on the stream, then waited for until the stream has drained. */
static ftl_err run(struct ftl_comm *comm, const struct ftl_comm_call *call)
{
	struct ftl_comm_nccl *c = (struct ftl_comm_nccl *)comm;
	ftl_err e = put(c, call);
	struct watch w = {c->nccl, c->stream, NULL, c->base.timeout_ms};
	return e != FTL_OK ? e : wait_until(c, &w, ftl_comm_now_ms() + w.limit_ms, ftl_comm_call_kind_strs[call->kind]);
}

static ftl_err nccl_allreduce(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			      ftl_dtype dtype, ftl_reduce_op op)
{
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
				    .count = count, .dtype = dtype, .op = op};
	return run(comm, &call);
}

static ftl_err nccl_p2p(struct ftl_comm *comm, const ftl_p2p_op *ops, int n_ops)
{
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_P2P, .p2p_ops = ops, .count = (size_t)n_ops};
	return run(comm, &call);
}

static ftl_err nccl_broadcast(struct ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root,
			      bool held)
{
	(void)held; /* NCCL writes every rank's buffer */
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_BROADCAST, .recvbuf = buf, .count = count, .dtype = dtype,
				    .root = root};
	return run(comm, &call);
}

static ftl_err nccl_allgather(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			      ftl_dtype dtype)
{
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLGATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
				    .count = count, .dtype = dtype};
	return run(comm, &call);
}

static ftl_err nccl_barrier(struct ftl_comm *comm)
{
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_BARRIER, .dtype = FTL_I32};
	return run(comm, &call);
}

#ifdef FTL_HAVE_NCCL_COMPRESS
static ftl_err nccl_allreduce_bf16(struct ftl_comm *comm, const float *sendbuf, float *recvbuf, size_t count,
				   ftl_reduce_op op, float *residual)
{
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLREDUCE_BF16, .sendbuf = sendbuf, .recvbuf = recvbuf,
				    .count = count, .dtype = FTL_F32, .op = op, .residual = residual};
	return run(comm, &call);
}
#endif

/* An asynchronous request: on the stream, with an event after it as its mark. */
static ftl_err nccl_enqueue(struct ftl_comm *comm, const struct ftl_comm_call *call, void **mark)
{
	struct ftl_comm_nccl *c = (struct ftl_comm_nccl *)comm;
	cudaEvent_t ev;
	cudaError_t ce = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
	if (ce != cudaSuccess)
		return ftl_comm_fail(comm, FTL_ERR_BACKEND, false, "%s: no CUDA event for the request: %s",
				     ftl_comm_call_kind_strs[call->kind], cudaGetErrorString(ce));
	ftl_err e = put(c, call);
	if (e == FTL_OK && (ce = cudaEventRecord(ev, c->stream)) != cudaSuccess)
		e = ftl_comm_fail(comm, FTL_ERR_BACKEND, true, "%s: cudaEventRecord: %s",
				  ftl_comm_call_kind_strs[call->kind], cudaGetErrorString(ce));
	if (e != FTL_OK) {
		cudaEventDestroy(ev);
		return e;
	}
	*mark = ev;
	return FTL_OK;
}

static ftl_err nccl_poll(struct ftl_comm *comm, void *mark, int64_t deadline_ms, bool is_blocking, bool *is_done)
{
	struct ftl_comm_nccl *c = (struct ftl_comm_nccl *)comm;
	struct watch w = {c->nccl, c->stream, (cudaEvent_t)mark, c->base.timeout_ms};
	if (!is_blocking)
		return look(c, &w, deadline_ms, "asynchronous request", is_done);
	ftl_err e = wait_until(c, &w, deadline_ms, "asynchronous request");
	*is_done = e == FTL_OK;
	return e;
}

static void nccl_release_mark(struct ftl_comm *comm, void *mark)
{
	(void)comm;
	cudaEventDestroy((cudaEvent_t)mark); /* an event still pending is released when it completes */
}

static void nccl_abort(struct ftl_comm *comm)
{
	(void)comm; /* the polling loop sees is_aborted within microseconds */
}

/* What a teardown thread needs once the communicator struct is gone. */
struct teardown {
	ncclComm_t nccl;
	cudaStream_t stream; /* destroyed when own */
	bool is_own_stream;
	int *scratch;
	void *wire;
	int device;
	bool is_clean; /* healthy: finalize and destroy; else abort */
};

static void *teardown_main(void *arg)
{
	struct teardown *td = arg;
	cudaSetDevice(td->device);
	if (td->nccl != NULL && td->is_clean) {
		/* Finalize flushes outstanding work; if a peer vanished meanwhile, give up after 10 s. */
		ncclResult_t st = ncclCommFinalize(td->nccl);
		for (int i = 0; i < 100000 && (st == ncclSuccess || st == ncclInProgress); i++) {
			if (ncclCommGetAsyncError(td->nccl, &st) != ncclSuccess || st != ncclInProgress)
				break;
			nap_us(100);
		}
		if (st == ncclSuccess)
			ncclCommDestroy(td->nccl);
		else
			ncclCommAbort(td->nccl);
	} else if (td->nccl != NULL) {
		ncclCommAbort(td->nccl);
	}
	if (td->is_own_stream && td->stream != NULL)
		cudaStreamDestroy(td->stream);
	if (td->scratch != NULL)
		cudaFree(td->scratch);
	if (td->wire != NULL)
		cudaFree(td->wire);
	free(td);
	atomic_fetch_sub(&pending_teardowns, 1);
	return NULL;
}

/* Hands the NCCL communicator and its CUDA resources to a detached thread and frees c now. */
static void release(struct ftl_comm_nccl *c)
{
	struct teardown *td = malloc(sizeof(*td));
	if (td != NULL) {
		*td = (struct teardown){
			.nccl = c->nccl, .stream = c->stream, .is_own_stream = c->is_own_stream,
			.scratch = c->scratch, .wire = c->wire, .device = c->device,
			.is_clean = c->is_ready && c->base.broken == FTL_OK && !atomic_load(&c->base.is_aborted),
		};
		atomic_fetch_add(&pending_teardowns, 1);
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, teardown_main, td) != 0)
			teardown_main(td); /* no thread to spare: do it here rather than leak */
		pthread_attr_destroy(&attr);
	}
	free(c);
}

static void nccl_destroy(struct ftl_comm *comm)
{
	release((struct ftl_comm_nccl *)comm);
}

static ftl_err nccl_shrink(struct ftl_comm *comm, const int *exclude, int exclude_count, struct ftl_comm **out);

/* Polls the init or shrink that made c to its end (the deadline it was started with). */
static ftl_err nccl_await(struct ftl_comm *comm)
{
	struct ftl_comm_nccl *c = (struct ftl_comm_nccl *)comm;
	if (c->is_ready)
		return FTL_OK;
	int64_t left = c->ready_deadline_ms - ftl_comm_now_ms();
	struct watch w = {c->nccl, NULL, NULL, left > 1 ? (int)left : 1};
	ftl_err e = wait_until(c, &w, ftl_comm_now_ms() + w.limit_ms, c->setup_what);
	c->is_ready = e == FTL_OK;
	return e;
}

static const struct ftl_comm_backend_ops nccl_ops = {
	.allreduce = nccl_allreduce,
	.broadcast = nccl_broadcast,
	.allgather = nccl_allgather,
	.barrier = nccl_barrier,
	.shrink = nccl_shrink,
	.can_shrink = ftl_comm_nccl_can_shrink,
	.await = nccl_await,
	.abort = nccl_abort,
	.destroy = nccl_destroy,
#ifdef FTL_HAVE_NCCL_COMPRESS
	.allreduce_bf16 = nccl_allreduce_bf16,
#endif
	.enqueue = nccl_enqueue,
	.poll = nccl_poll,
	.release_mark = nccl_release_mark,
	.p2p = nccl_p2p,
	.is_without_bitwise = true,
};

/* A communicator struct with its stream and scratch; the NCCL communicator comes later. */
static ftl_err alloc_comm(const struct ftl_comm_config *cfg, struct ftl_comm_nccl **out)
{
	cudaError_t ce = cudaSetDevice(cfg->cuda_device);
	if (ce != cudaSuccess)
		return ftl_comm_fail_diag(FTL_ERR_BACKEND, "cudaSetDevice(%d): %s", cfg->cuda_device,
					 cudaGetErrorString(ce));
	struct ftl_comm_nccl *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return ftl_comm_fail_diag(FTL_ERR_SYSTEM, "out of memory");
	ftl_comm_base_init(&c->base, &nccl_ops, cfg);
	c->device = cfg->cuda_device;
	c->stream = (cudaStream_t)cfg->cuda_stream;
	if (c->stream == NULL) {
		ce = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
		c->is_own_stream = ce == cudaSuccess;
	}
	if (ce == cudaSuccess)
		ce = cudaMalloc((void **)&c->scratch, sizeof(int));
	if (ce != cudaSuccess) {
		release(c);
		return ftl_comm_fail_diag(FTL_ERR_BACKEND, "CUDA stream or memory: %s",
					 cudaGetErrorString(ce));
	}
	*out = c;
	return FTL_OK;
}

/* After a non-blocking init or shrink was started: an error now, or the communicator to await later. */
static ftl_err started(struct ftl_comm_nccl *c, ncclResult_t r, int timeout_ms, const char *what,
		       struct ftl_comm **out)
{
	if (r != ncclSuccess && r != ncclInProgress) {
		ftl_err e = ftl_comm_fail_diag(nccl_code(r), "%s: %s", what, ncclGetErrorString(r));
		release(c);
		return e;
	}
	c->is_ready = false;
	c->ready_deadline_ms = ftl_comm_now_ms() + timeout_ms;
	c->setup_what = what;
	*out = &c->base;
	return FTL_OK;
}

static ftl_err nccl_create(const struct ftl_comm_config *cfg, struct ftl_comm **out)
{
	if (cfg->bootstrap_len != sizeof(ncclUniqueId))
		return ftl_comm_fail_diag(FTL_ERR_INVALID,
					 "nccl bootstrap must be a %zu-byte ncclUniqueId, got %zu bytes",
					 sizeof(ncclUniqueId), cfg->bootstrap_len);
	int version = runtime_version();
	if (version < NONBLOCKING_MIN_VERSION)
		return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED,
					 "NCCL %d cannot make non-blocking communicators (needs 2.14)", version);
	struct ftl_comm_nccl *c;
	ftl_err e = alloc_comm(cfg, &c);
	if (e != FTL_OK)
		return e;
	ncclUniqueId id;
	memcpy(&id, cfg->bootstrap, sizeof(id));
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	config.blocking = 0;
	ncclResult_t r = ncclCommInitRankConfig(&c->nccl, cfg->world_size, id, cfg->rank, &config);
	return started(c, r, cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 30000, "ncclCommInitRankConfig",
		       out);
}

static ftl_err nccl_shrink(struct ftl_comm *comm, const int *exclude, int exclude_count, struct ftl_comm **out)
{
	struct ftl_comm_nccl *old = (struct ftl_comm_nccl *)comm;
#ifdef NCCL_SHRINK_ABORT
	shrink_fn shrink = loaded_shrink();
	if (shrink == NULL)
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false,
				     "ncclCommShrink needs NCCL 2.27 or newer; this is %d: make a new communicator",
				     runtime_version());
	if (!old->is_ready)
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false,
				     "shrink: this communicator never finished its init: make a new communicator");
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.backend = FTL_COMM_NCCL;
	cfg.world_size = comm->world_size - exclude_count;
	cfg.rank = comm->rank;
	for (int i = 0; i < exclude_count; i++)
		cfg.rank -= exclude[i] < comm->rank;
	cfg.timeout_ms = comm->timeout_ms;
	cfg.cuda_device = old->device;
	cfg.cuda_stream = old->is_own_stream ? NULL : old->stream;
	cfg.peer_reset_cb = comm->peer_reset_cb;
	cfg.peer_reset_arg = comm->peer_reset_arg;
	cfg.stall_hint_ms = comm->stall_hint_ms;
	int *list = malloc(sizeof(int) * (size_t)(exclude_count > 0 ? exclude_count : 1));
	if (list == NULL)
		return ftl_comm_fail(comm, FTL_ERR_SYSTEM, false, "shrink: out of memory");
	if (exclude_count > 0)
		memcpy(list, exclude, sizeof(int) * (size_t)exclude_count);
	struct ftl_comm_nccl *c;
	ftl_err e = alloc_comm(&cfg, &c);
	if (e == FTL_OK) {
		ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
		config.blocking = 0;
		/* A broken parent may have kernels stuck on a dead peer: abort them first. */
		int flags = comm->broken != FTL_OK || atomic_load(&comm->is_aborted) ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT;
		ncclResult_t r = shrink(old->nccl, list, exclude_count, &c->nccl, &config, flags);
		e = started(c, r, comm->timeout_ms, "ncclCommShrink", out);
	}
	free(list);
	if (e != FTL_OK)
		ftl_comm_fail(comm, e, comm->broken != FTL_OK, "%s", ftl_diag_message() + 5 /* without "ftl: " */);
	return e;
#else
	(void)old;
	(void)exclude;
	(void)exclude_count;
	(void)out;
	return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false, "built against an nccl.h without ncclCommShrink");
#endif
}

const struct ftl_comm_transport ftl_comm_nccl_transport = {
	.create = nccl_create, .probe = ftl_comm_nccl_probe, .make_id = nccl_make_id};
