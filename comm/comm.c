/* comm: the public collective calls. Checks every argument, keeps a broken communicator broken (a stream
 * that failed half way can never be trusted again), and hands the rest to the backend's ops table. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <stdlib.h>

#include "comm.h"
#include "base/sized.h"

const char *ftl_comm_backend_name(ftl_comm_backend backend)
{
	return (unsigned)backend < FTL_COMM_BACKEND_MAX ? ftl_comm_backend_strs[backend] : "unknown";
}

/* The first size-stamped layout's size (as AGENT_CONFIG_OLDEST in agent/config.c). */
#define COMM_CONFIG_OLDEST sizeof(struct ftl_comm_config)

static void defaults(struct ftl_comm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	cfg->backend = FTL_COMM_TCP;
	cfg->world_size = 1;
	cfg->listen_fd = -1;
	cfg->timeout_ms = 60000;
	cfg->connect_timeout_ms = 30000;
	cfg->tcp_user_timeout_ms = 10000;
}

void ftl_comm_config_init_sized(struct ftl_comm_config *cfg, size_t size)
{
	struct ftl_comm_config full;
	defaults(&full);
	ftl_sized_fill(cfg, size, &full, sizeof(full));
}

int64_t ftl_comm_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keeps err with the message prefixed "ftl: ", as every communicator diagnostic reads. */
static ftl_err keep_error(ftl_kept_error *k, ftl_err err, const char *fmt, va_list ap)
{
	char text[sizeof k->message];
	vsnprintf(text, sizeof text, fmt, ap);
	return ftl_kept_error_set(k, err, "ftl: %s", text);
}

ftl_err ftl_comm_fail(struct ftl_comm *comm, ftl_err err, bool is_fatal, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ftl_comm_async_lock(comm); /* the progress thread and the caller may both have something to say */
	keep_error(&comm->error, err, fmt, ap);
	if (is_fatal && comm->broken == FTL_OK)
		comm->broken = err;
	ftl_comm_async_unlock(comm);
	va_end(ap);
	return err;
}

ftl_err ftl_comm_fail_diag(ftl_err err, const char *fmt, ...)
{
	ftl_kept_error text;
	va_list ap;
	va_start(ap, fmt);
	keep_error(&text, err, fmt, ap);
	va_end(ap);
	return ftl_kept_error_to_diag(&text);
}

void ftl_comm_base_init(struct ftl_comm *comm, const struct ftl_comm_backend_ops *ops,
			const struct ftl_comm_config *cfg)
{
	comm->ops = ops;
	comm->backend = cfg->backend;
	comm->rank = cfg->rank;
	comm->world_size = cfg->world_size;
	comm->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 60000;
	comm->comm_id = cfg->comm_id;
	atomic_init(&comm->is_aborted, 0);
	comm->broken = FTL_OK;
	ftl_kept_error_clear(&comm->error);
	comm->peer_reset_cb = cfg->peer_reset_cb;
	comm->peer_reset_arg = cfg->peer_reset_arg;
	comm->async = NULL;
	comm->wire = NULL;
	comm->wire_cap = 0;
	comm->bf16_chunk = FTL_COMM_BF16_CHUNK;
}

int ftl_comm_backend_is_available(ftl_comm_backend backend)
{
	if (backend == FTL_COMM_TCP)
		return 1;
#ifdef FTL_HAVE_NCCL
	if (backend == FTL_COMM_NCCL)
		return ftl_comm_nccl_probe();
#endif
	return 0;
}

ftl_err ftl_comm_start(const struct ftl_comm_config *caller_cfg, ftl_comm **out)
{
	if (out == NULL)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "ftl_comm_create: out is NULL");
	*out = NULL;
	struct ftl_comm_config full;
	defaults(&full);
	ftl_err widened = ftl_sized_widen(caller_cfg, &full, sizeof(full), COMM_CONFIG_OLDEST, "struct ftl_comm_config",
					  "ftl_comm_config_init");
	if (widened != FTL_OK)
		return ftl_comm_fail_diag(widened, "%s", ftl_error_message());
	const struct ftl_comm_config *cfg = &full;
	if (cfg->world_size < 1 || cfg->world_size > FTL_COMM_WORLD_MAX)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "world size %d is not in 1..%d",
					 cfg->world_size, FTL_COMM_WORLD_MAX);
	if (cfg->rank < 0 || cfg->rank >= cfg->world_size)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "rank %d is not in 0..%d", cfg->rank,
					 cfg->world_size - 1);
	if (cfg->bootstrap == NULL && cfg->bootstrap_len > 0)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "bootstrap is NULL but its length is %zu",
					 cfg->bootstrap_len);
	if (cfg->timeout_ms < 0 || cfg->connect_timeout_ms < 0 || cfg->tcp_user_timeout_ms < 0)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "timeouts must not be negative");
	if ((unsigned)cfg->shm >= FTL_COMM_SHM_MODE_MAX)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "shm mode %d is neither auto nor off", (int)cfg->shm);
	if (cfg->shm_slot_bytes != 0 &&
	    (cfg->shm_slot_bytes < FTL_COMM_SHM_SLOT_MIN || cfg->shm_slot_bytes > FTL_COMM_SHM_SLOT_MAX))
		return ftl_comm_fail_diag(FTL_ERR_INVALID,
					 "shm slot of %zu bytes is not in %u..%u (FTL_COMM_SHM_SLOT_KB 4..262144)",
					 cfg->shm_slot_bytes, FTL_COMM_SHM_SLOT_MIN, FTL_COMM_SHM_SLOT_MAX);
	switch (cfg->backend) {
	case FTL_COMM_TCP:
		return ftl_comm_tcp_create(cfg, out);
	case FTL_COMM_NCCL:
#ifdef FTL_HAVE_NCCL
		return ftl_comm_nccl_create(cfg, out);
#else
		return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED,
					 "the nccl backend is not built in (CMake found no CUDA/NCCL)");
#endif
	default:
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "unknown backend %d", (int)cfg->backend);
	}
}

ftl_err ftl_comm_await(struct ftl_comm *comm)
{
	if (comm->broken != FTL_OK)
		return comm->broken;
	return comm->ops->await != NULL ? comm->ops->await(comm) : FTL_OK;
}

/* A started communicator, waited for: the ready one ftl_comm_create promises. */
ftl_err ftl_comm_create(const struct ftl_comm_config *cfg, ftl_comm **out)
{
	ftl_err e = ftl_comm_start(cfg, out);
	if (e != FTL_OK || (e = ftl_comm_await(*out)) == FTL_OK)
		return e;
	ftl_comm_fail_diag(e, "%s", (*out)->error.message + 5 /* without "ftl: " */);
	ftl_comm_destroy(*out);
	*out = NULL;
	return e;
}

bool ftl_comm_can_shrink(const struct ftl_comm *comm)
{
	return comm != NULL && comm->ops->shrink != NULL && (comm->ops->can_shrink == NULL || comm->ops->can_shrink());
}

ftl_err ftl_comm_nccl_unique_id(void *buf, size_t cap)
{
	if (buf == NULL || cap < FTL_COMM_NCCL_ID_LEN)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "unique id needs %d bytes",
					 FTL_COMM_NCCL_ID_LEN);
#ifdef FTL_HAVE_NCCL
	return ftl_comm_nccl_make_id(buf, cap);
#else
	return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "the nccl backend is not built in");
#endif
}

ftl_err ftl_comm_check_call(struct ftl_comm *comm, const char *what, ftl_dtype dtype, size_t count,
			    size_t multiplier, size_t *bytes)
{
	if (comm->broken != FTL_OK)
		return comm->broken;
	if (atomic_load(&comm->is_aborted))
		return ftl_comm_fail(comm, FTL_ERR_ABORTED, true, "%s on an aborted communicator", what);
	size_t size = ftl_dtype_size(dtype);
	if (size == 0)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s: unknown dtype %d", what, (int)dtype);
	if (count > SIZE_MAX / size / multiplier)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s: %zu elements of %s overflow size_t",
				     what, count, ftl_dtype_strs[dtype]);
	*bytes = count * size;
	return FTL_OK;
}

bool ftl_comm_overlaps(const void *a, size_t a_len, const void *b, size_t b_len)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
	return a_len > 0 && b_len > 0 && x < y + b_len && y < x + a_len;
}

const char *const ftl_comm_call_kind_strs[FTL_COMM_CALL_KIND_MAX] = {
	[FTL_COMM_CALL_ALLREDUCE] = "allreduce",
	[FTL_COMM_CALL_BROADCAST] = "broadcast",
	[FTL_COMM_CALL_ALLGATHER] = "allgather",
	[FTL_COMM_CALL_BARRIER] = "barrier",
	[FTL_COMM_CALL_ALLREDUCE_BF16] = "allreduce_bf16",
	[FTL_COMM_CALL_P2P] = "p2p",
};

ftl_err ftl_comm_call_run(struct ftl_comm *comm, const struct ftl_comm_call *c)
{
	ftl_err e = ftl_comm_await(comm);
	if (e != FTL_OK)
		return e;
	switch (c->kind) {
	case FTL_COMM_CALL_ALLREDUCE:
		return comm->ops->allreduce(comm, c->sendbuf, c->recvbuf, c->count, c->dtype, c->op);
	case FTL_COMM_CALL_BROADCAST:
		return comm->ops->broadcast(comm, c->recvbuf, c->count, c->dtype, c->root, c->held);
	case FTL_COMM_CALL_ALLGATHER:
		return comm->ops->allgather(comm, c->sendbuf, c->recvbuf, c->count, c->dtype);
	case FTL_COMM_CALL_ALLREDUCE_BF16:
		return comm->ops->allreduce_bf16(comm, c->sendbuf, c->recvbuf, c->count, c->op, c->residual);
	case FTL_COMM_CALL_P2P:
		return comm->ops->p2p(comm, c->p2p_ops, (int)c->count);
	default:
		return comm->ops->barrier(comm);
	}
}

ftl_err ftl_comm_broadcast(ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root)
{
	return ftl_comm_broadcast_held(comm, buf, count, dtype, root, false);
}

ftl_err ftl_comm_broadcast_held(ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root, bool held)
{
	size_t bytes = 0;
	if (comm == NULL)
		return FTL_ERR_INVALID;
	ftl_err err = ftl_comm_check_call(comm, "broadcast", dtype, count, 1, &bytes);
	if (err)
		return err;
	if (root < 0 || root >= comm->world_size)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "broadcast: root %d is not in 0..%d", root,
				     comm->world_size - 1);
	if (count == 0)
		return FTL_OK;
	if (buf == NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "broadcast: NULL buffer with count %zu", count);
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_BROADCAST, .recvbuf = buf, .count = count, .dtype = dtype,
				    .root = root, .held = held};
	return ftl_comm_async_call(comm, &call);
}

ftl_err ftl_comm_allgather(ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   ftl_dtype dtype)
{
	size_t bytes = 0;
	if (comm == NULL)
		return FTL_ERR_INVALID;
	ftl_err err = ftl_comm_check_call(comm, "allgather", dtype, count, (size_t)comm->world_size, &bytes);
	if (err)
		return err;
	if (count == 0)
		return FTL_OK;
	if (sendbuf == NULL || recvbuf == NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "allgather: NULL buffer with count %zu", count);
	const char *own = (const char *)recvbuf + (size_t)comm->rank * bytes;
	if (sendbuf != own && ftl_comm_overlaps(sendbuf, bytes, recvbuf, bytes * (size_t)comm->world_size))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false,
				     "allgather: sendbuf overlaps recvbuf but is not recvbuf + rank * count");
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLGATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
				    .count = count, .dtype = dtype};
	return ftl_comm_async_call(comm, &call);
}

ftl_err ftl_comm_barrier(ftl_comm *comm)
{
	size_t bytes = 0;
	if (comm == NULL)
		return FTL_ERR_INVALID;
	ftl_err err = ftl_comm_check_call(comm, "barrier", FTL_I32, 0, 1, &bytes);
	if (err)
		return err;
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_BARRIER, .dtype = FTL_I32};
	return ftl_comm_async_call(comm, &call);
}

ftl_err ftl_comm_shrink(ftl_comm *comm, const int *exclude, int exclude_count, ftl_comm **out)
{
	if (comm == NULL || out == NULL)
		return FTL_ERR_INVALID;
	*out = NULL;
	if (comm->ops->shrink == NULL)
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false,
				     "the %s backend cannot shrink; build a new communicator with ftl_comm_create",
				     ftl_comm_backend_name(comm->backend));
	int pending = ftl_comm_async_pending(comm);
	if (pending > 0)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false,
				     "shrink: %d asynchronous requests are still running; wait for them first", pending);
	if (exclude_count < 1 || exclude_count >= comm->world_size || exclude == NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false,
				     "shrink: %d excluded ranks of %d (a shrink drops 1 to world size - 1; NCCL refuses "
				     "an empty list: for the same members build a new communicator)",
				     exclude_count, comm->world_size);
	for (int i = 0; i < exclude_count; i++) {
		if (exclude[i] < 0 || exclude[i] >= comm->world_size)
			return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "shrink: rank %d is not in 0..%d",
					     exclude[i], comm->world_size - 1);
		if (exclude[i] == comm->rank)
			return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "shrink: this rank (%d) is excluded",
					     comm->rank);
		for (int k = 0; k < i; k++)
			if (exclude[k] == exclude[i])
				return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "shrink: rank %d is listed twice",
						     exclude[i]);
	}
	/* A comm broken with FTL_ERR_ABORTED may still shrink: that is how the dead ranks are dropped. A
	 * started one must first be ready: its NCCL communicator is the parent. */
	if (comm->broken == FTL_OK && comm->ops->await != NULL && comm->ops->await(comm) != FTL_OK)
		return comm->broken;
	ftl_err e = comm->ops->shrink(comm, exclude, exclude_count, out);
	if (e != FTL_OK || (e = ftl_comm_await(*out)) == FTL_OK)
		return e;
	ftl_comm_fail(comm, e, false, "shrink: %s", (*out)->error.message + 5);
	ftl_comm_destroy(*out);
	*out = NULL;
	return e;
}

void ftl_comm_abort(ftl_comm *comm)
{
	if (comm == NULL)
		return;
	atomic_store(&comm->is_aborted, 1);
	comm->ops->abort(comm);
}

int ftl_comm_is_aborted(const ftl_comm *comm)
{
	return comm != NULL && (atomic_load(&comm->is_aborted) || comm->broken != FTL_OK);
}

void ftl_comm_destroy(ftl_comm *comm)
{
	if (comm == NULL)
		return;
	ftl_comm_async_destroy(comm);
	free(comm->wire);
	free(comm->exact_scratch);
	comm->ops->destroy(comm);
}

ftl_err ftl_comm_set_timeout(ftl_comm *comm, int timeout_ms)
{
	if (comm == NULL || timeout_ms <= 0)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "ftl_comm_set_timeout: %d ms; give a positive number",
					  timeout_ms);
	comm->timeout_ms = timeout_ms;
	return FTL_OK;
}

const char *ftl_comm_error(const ftl_comm *comm)
{
	return comm != NULL ? comm->error.message : "ftl: communicator is NULL";
}

int ftl_comm_rank(const ftl_comm *comm)
{
	return comm != NULL ? comm->rank : -1;
}

int ftl_comm_world_size(const ftl_comm *comm)
{
	return comm != NULL ? comm->world_size : 0;
}
