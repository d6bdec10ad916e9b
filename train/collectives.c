/* The collectives a step uses, on the current view's data communicator (the contract is in
 * include/ftl/execute.h): a failure keeps the communicator's diagnostic for ftl_last_error (and the calling
 * thread's diag), and an
 * asynchronous request remembers the communicator it was made on, so one that outlived a view change is
 * refused rather than waited on a communicator that is gone. */
#include "agent/agent_training.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "comm/comm.h"
#include "grad_bucket.h"
#include "training.h"
#include "requests.h"

static ftl_err fail(ftl_agent *a, ftl_err err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ftl_err fail(ftl_agent *a, ftl_err err, const char *fmt, ...)
{
	if (!ftl_training_of(a))
		return err;
	va_list ap;
	va_start(ap, fmt);
	ftl_kept_error *last = &ftl_agent_training(a)->exec.last_error;
	ftl_kept_error_vset(last, err, fmt, ap);
	va_end(ap);
	ftl_log(ftl_agent_logger(a), FTL_LOG_ERROR, "training", last->message, FTL_F_STR("error", ftl_strerror(err)));
	return ftl_kept_error_to_diag(last);
}

/* A collective's result; on failure the communicator's sticky reason becomes the agent's last error. */
static ftl_err check(ftl_agent *a, ftl_err e)
{
	if (e != FTL_OK && ftl_agent_training(a)->comm)
		return ftl_training_fail(ftl_agent_training(a), e, "%s", ftl_comm_error(ftl_agent_training(a)->comm));
	return e;
}

static ftl_comm *current(ftl_agent *a) { return ftl_agent_training(a) ? ftl_agent_training(a)->comm : NULL; }

/* A blocking collective's time in flight (comm_time.h: what names a slow rank): begin before the call, then
 * return timed(a, era, result). */
static uint64_t begin(ftl_agent *a) { return ftl_comm_time_begin(&ftl_agent_training(a)->comm_time, ftl_agent_now_us(a)); }

static ftl_err timed(ftl_agent *a, uint64_t era, ftl_err e)
{
	ftl_comm_time_end(&ftl_agent_training(a)->comm_time, era, ftl_agent_now_us(a));
	return e;
}

ftl_err ftl_allreduce(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype, ftl_reduce_op op,
		      const ftl_allreduce_opts *opts, ftl_request **req)
{
	if (req != NULL)
		*req = NULL;
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_allreduce: no communicator (call collectives inside ftl_execute)");
	ftl_allreduce_opts o;
	ftl_err e = ftl_allreduce_opts_read(opts, &o);
	if (e != FTL_OK)
		return fail(a, e, "ftl_allreduce: %s", ftl_error_message());
	if (req != NULL && o.bucket == NULL)
		return ftl_request_allreduce(a, sendbuf, recvbuf, count, dtype, op, &o, NULL, NULL, req);
	uint64_t era = begin(a);
	if (o.bucket != NULL)
		return timed(a, era, ftl_grad_bucket_allreduce(a, o.bucket, sendbuf, recvbuf, count, dtype, op, o.kind, req));
	return timed(a, era, check(a, ftl_train_metrics_allreduce(a, current(a), sendbuf, recvbuf, count, dtype, op, &o)));
}

ftl_err ftl_broadcast(ftl_agent *a, void *buf, size_t count, ftl_dtype dtype, int root)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_broadcast: no communicator (call collectives inside ftl_execute)");
	uint64_t era = begin(a);
	return timed(a, era, check(a, ftl_comm_broadcast(current(a), buf, count, dtype, root)));
}

ftl_err ftl_allgather(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_allgather: no communicator (call collectives inside ftl_execute)");
	uint64_t era = begin(a);
	return timed(a, era, check(a, ftl_comm_allgather(current(a), sendbuf, recvbuf, count, dtype)));
}

ftl_err ftl_barrier(ftl_agent *a)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_barrier: no communicator (call collectives inside ftl_execute)");
	uint64_t era = begin(a);
	return timed(a, era, check(a, ftl_comm_barrier(current(a))));
}

ftl_err ftl_p2p(ftl_agent *a, const ftl_p2p_op *ops, int n_ops)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_p2p: no communicator (call it inside ftl_execute)");
	uint64_t era = begin(a);
	return timed(a, era, check(a, ftl_comm_p2p(current(a), ops, n_ops)));
}

ftl_err ftl_alltoall(ftl_agent *a, const void *sendbuf, const size_t *send_counts, void *recvbuf,
		     const size_t *recv_counts, size_t count, ftl_dtype dtype)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_alltoall: no communicator (call collectives inside ftl_execute)");
	uint64_t era = begin(a);
	return timed(a, era, check(a, ftl_comm_alltoall(current(a), sendbuf, send_counts, recvbuf, recv_counts, count, dtype)));
}

/* ---- asynchronous requests: a comm request tagged with the communicator it was made on ---- */

struct ftl_request {
	ftl_comm_request *inner; /* freed by the comm's destroy if the comm went first */
	ftl_comm *comm;
	uint64_t comm_seq;       /* with comm: the pointer alone could be reused by the next communicator */
	ftl_request_done_cb done; /* optional, called when the request is consumed */
	void *done_arg;
	uint64_t era;            /* its time in flight, from post to consumption (comm_time.h) */
};

ftl_err ftl_request_allreduce(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype,
			      ftl_reduce_op op, const ftl_allreduce_opts *opts, ftl_request_done_cb done, void *done_arg,
			      ftl_request **req)
{
	if (req == NULL)
		return fail(a, FTL_ERR_INVALID, "ftl_allreduce: req is NULL");
	*req = NULL;
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_allreduce: no communicator (call collectives inside ftl_execute)");
	ftl_request *r = malloc(sizeof(*r));
	if (r == NULL)
		return fail(a, FTL_ERR_SYSTEM, "ftl_allreduce: out of memory for a request");
	*r = (ftl_request){.comm = current(a), .comm_seq = ftl_agent_training(a)->comm_seq, .done = done, .done_arg = done_arg};
	ftl_err e = ftl_comm_allreduce(current(a), sendbuf, recvbuf, count, dtype, op, opts, &r->inner);
	if (e != FTL_OK) {
		free(r);
		return check(a, e);
	}
	r->era = begin(a);
	*req = r;
	return FTL_OK;
}

/* Frees a consumed request, after its hook. */
static void consumed(ftl_agent *a, ftl_request **req, ftl_err result)
{
	ftl_request *r = *req;
	timed(a, r->era, result);
	if (r->done)
		r->done(r->done_arg, result);
	free(r);
	*req = NULL;
}

/* The request's communicator is still the current one; else it is refused and freed. */
static ftl_err check_request(ftl_agent *a, ftl_request **req, const char *what)
{
	if (req == NULL || *req == NULL)
		return fail(a, FTL_ERR_INVALID, "%s: the request is NULL (already waited?)", what);
	ftl_request *r = *req;
	if (r->comm == current(a) && r->comm_seq == ftl_agent_training(a)->comm_seq)
		return FTL_OK;
	consumed(a, req, FTL_ERR_INVALID);
	return fail(a, FTL_ERR_INVALID,
		    "%s: the request was made under an older communicator, replaced since by a view change; it was "
		    "aborted with it (wait for every request inside the step that made it)", what);
}

ftl_err ftl_wait(ftl_agent *a, ftl_request **req)
{
	ftl_err e = check_request(a, req, "ftl_wait");
	if (e != FTL_OK)
		return e;
	e = check(a, ftl_comm_wait(current(a), &(*req)->inner));
	consumed(a, req, e);
	return e;
}

ftl_err ftl_test(ftl_agent *a, ftl_request **req, int *done)
{
	if (done == NULL)
		return fail(a, FTL_ERR_INVALID, "ftl_test: done is NULL");
	*done = 0;
	ftl_err e = check_request(a, req, "ftl_test");
	if (e != FTL_OK)
		return e;
	e = check(a, ftl_comm_test(current(a), &(*req)->inner, done));
	if (*done || (*req)->inner == NULL)
		consumed(a, req, e);
	return e;
}
