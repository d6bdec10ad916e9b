/* comm: the public face of the communicators and their factory. Checks every argument, keeps a broken
 * communicator broken (a stream that failed half way can never be trusted again), and hands the rest to the
 * backend's ops table. A communicator is made by the transport its config names, looked up in the table
 * below: each transport registers itself there as one constant (comm.h), so this file calls no transport's
 * function and includes no transport's header, and the transports call only the core (comm_core.c). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "base/sized.h"

/* The first size-stamped layout's size (as AGENT_CONFIG_OLDEST in agent/config.c). */
#define COMM_CONFIG_OLDEST offsetof(struct ftl_comm_config, stall_hint_ms)

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

/* The transports built into this library, by backend; NULL: not built in. */
static const struct ftl_comm_transport *const transports[FTL_COMM_BACKEND_MAX] = {
	[FTL_COMM_TCP] = &ftl_comm_tcp_transport,
#ifdef FTL_HAVE_NCCL
	[FTL_COMM_NCCL] = &ftl_comm_nccl_transport,
#endif
};

static const struct ftl_comm_transport *transport_of(ftl_comm_backend backend)
{
	return (unsigned)backend < FTL_COMM_BACKEND_MAX ? transports[backend] : NULL;
}

int ftl_comm_backend_is_available(ftl_comm_backend backend)
{
	const struct ftl_comm_transport *t = transport_of(backend);
	return t != NULL && (t->probe == NULL || t->probe());
}

ftl_err ftl_comm_start(const struct ftl_comm_config *caller_cfg, ftl_comm **out)
{
	if (out == NULL)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "ftl_comm_new: out is NULL");
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
	if (cfg->timeout_ms < 0 || cfg->connect_timeout_ms < 0 || cfg->tcp_user_timeout_ms < 0 ||
	    cfg->stall_hint_ms < 0)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "timeouts (and stall_hint_ms) must not be negative");
	if ((unsigned)cfg->shm >= FTL_COMM_SHM_MODE_MAX)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "shm mode %d is neither auto nor off", (int)cfg->shm);
	if (cfg->shm_slot_bytes != 0 &&
	    (cfg->shm_slot_bytes < FTL_COMM_SHM_SLOT_MIN || cfg->shm_slot_bytes > FTL_COMM_SHM_SLOT_MAX))
		return ftl_comm_fail_diag(FTL_ERR_INVALID,
					 "shm slot of %zu bytes is not in %u..%u (FTL_COMM_SHM_SLOT_KB 4..262144)",
					 cfg->shm_slot_bytes, FTL_COMM_SHM_SLOT_MIN, FTL_COMM_SHM_SLOT_MAX);
	if ((unsigned)cfg->backend >= FTL_COMM_BACKEND_MAX)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "unknown backend %d", (int)cfg->backend);
	const struct ftl_comm_transport *t = transport_of(cfg->backend);
	if (t == NULL)
		return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "the %s backend is not built in (CMake found no CUDA/NCCL)",
					  ftl_comm_backend_name(cfg->backend));
	return t->create(cfg, out);
}

/* A started communicator, waited for: the ready one ftl_comm_new promises. */
ftl_err ftl_comm_new(const struct ftl_comm_config *cfg, ftl_comm **out)
{
	ftl_err e = ftl_comm_start(cfg, out);
	if (e != FTL_OK || (e = ftl_comm_await(*out)) == FTL_OK)
		return e;
	ftl_comm_fail_diag(e, "%s", (*out)->error.message + 5 /* without "ftl: " */);
	ftl_comm_delete(*out);
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
	const struct ftl_comm_transport *t = transport_of(FTL_COMM_NCCL);
	if (t == NULL || t->make_id == NULL)
		return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "the nccl backend is not built in");
	return t->make_id(buf, cap);
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
				     "the %s backend cannot shrink; build a new communicator with ftl_comm_new",
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
	ftl_comm_delete(*out);
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

void ftl_comm_hang_up(ftl_comm *comm)
{
	if (comm == NULL)
		return;
	ftl_comm_abort(comm);
	if (comm->ops->hang_up)
		comm->ops->hang_up(comm);
}

int ftl_comm_is_aborted(const ftl_comm *comm)
{
	return comm != NULL && (atomic_load(&comm->is_aborted) || comm->broken != FTL_OK);
}

void ftl_comm_delete(ftl_comm *comm)
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

int ftl_comm_rank(const ftl_comm *comm)
{
	return comm != NULL ? comm->rank : -1;
}

int ftl_comm_world_size(const ftl_comm *comm)
{
	return comm != NULL ? comm->world_size : 0;
}
