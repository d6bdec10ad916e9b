/* comm_core: what every part of comm/ shares, below the transports and the public face: the clock of the
 * deadlines, the sticky error (ftl_comm_fail, ftl_comm_error), the shared part of a communicator
 * (ftl_comm_base_init), the checks every collective makes and the dispatch of one validated call to the backend's ops. Nothing here
 * names a transport or the face (comm.c), so a transport built on these calls forms no circle with them. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "comm.h"

const char *ftl_comm_backend_name(ftl_comm_backend backend)
{
	return (unsigned)backend < FTL_COMM_BACKEND_MAX ? ftl_comm_backend_strs[backend] : "unknown";
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

/* The diagnostic's lock, while asynchronous requests exist (the progress thread and the caller may both have
 * something to say); a communicator without them has one thread and no lock. Returns the lock taken. */
static pthread_mutex_t *lock_error(const struct ftl_comm *comm)
{
	pthread_mutex_t *lock = comm->error_lock;
	if (lock != NULL)
		pthread_mutex_lock(lock);
	return lock;
}

static void unlock_error(pthread_mutex_t *lock)
{
	if (lock != NULL)
		pthread_mutex_unlock(lock);
}

ftl_err ftl_comm_fail(struct ftl_comm *comm, ftl_err err, bool is_fatal, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_t *lock = lock_error(comm);
	keep_error(&comm->error, err, fmt, ap);
	if (is_fatal && comm->broken == FTL_OK)
		comm->broken = err;
	unlock_error(lock);
	va_end(ap);
	return err;
}

/* A copy for the calling thread: the progress thread may rewrite the diagnostic while another thread reads it
 * (a request failing as the caller looks at an earlier failure). */
const char *ftl_comm_error(const ftl_comm *comm)
{
	static _Thread_local char copy[sizeof(((ftl_comm *)0)->error.message)];
	if (comm == NULL)
		return "ftl: communicator is NULL";
	pthread_mutex_t *lock = lock_error(comm);
	memcpy(copy, comm->error.message, sizeof copy);
	unlock_error(lock);
	return copy;
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
	comm->stall_hint_ms = cfg->stall_hint_ms;
	comm->async = NULL;
	comm->error_lock = NULL;
	comm->wire = NULL;
	comm->wire_cap = 0;
	comm->bf16_chunk = FTL_COMM_BF16_CHUNK;
}

ftl_err ftl_comm_await(struct ftl_comm *comm)
{
	if (comm->broken != FTL_OK)
		return comm->broken;
	return comm->ops->await != NULL ? comm->ops->await(comm) : FTL_OK;
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
