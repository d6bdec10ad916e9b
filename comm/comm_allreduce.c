/* comm_allreduce: the one allreduce call of ftl/comm.h. The kinds (plain, bf16 on the wire, the exact sum
 * of rows) and blocking or asynchronous are options of one call rather than names of their own, so a
 * new way to reduce is a new kind, not a new symbol every binding must learn. This file reads the
 * options, makes the checks every kind shares and sends each kind to its path: the backend's allreduce
 * (through the async queue), the bf16 pipeline (comm_bf16_pipeline.c, or the backend's kernels), the
 * exact sum (comm_exact.c). */
#include <string.h>

#include "comm.h"
#include "base/sized.h"

const char *const ftl_allreduce_kind_strs[FTL_ALLREDUCE_KIND_MAX] = {
	[FTL_ALLREDUCE_PLAIN] = "plain",
	[FTL_ALLREDUCE_BF16] = "bf16",
	[FTL_ALLREDUCE_EXACT] = "exact",
};

/* The first size-stamped layout's size (as COMM_CONFIG_OLDEST in comm.c). */
#define ALLREDUCE_OPTS_OLDEST sizeof(ftl_allreduce_opts)

static void defaults(ftl_allreduce_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->struct_size = sizeof(*o);
	o->kind = FTL_ALLREDUCE_PLAIN;
}

void ftl_allreduce_opts_init_sized(ftl_allreduce_opts *opts, size_t size)
{
	ftl_allreduce_opts full;
	defaults(&full);
	ftl_sized_fill(opts, size, &full, sizeof(full));
}

ftl_err ftl_allreduce_opts_read(const ftl_allreduce_opts *opts, ftl_allreduce_opts *out)
{
	defaults(out);
	if (opts == NULL)
		return FTL_OK;
	ftl_err e = ftl_sized_widen(opts, out, sizeof(*out), ALLREDUCE_OPTS_OLDEST, "ftl_allreduce_opts",
				    "ftl_allreduce_opts_init");
	if (e == FTL_OK && (unsigned)out->kind >= FTL_ALLREDUCE_KIND_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "allreduce: unknown kind %d; expected FTL_ALLREDUCE_PLAIN, "
				    "FTL_ALLREDUCE_BF16 or FTL_ALLREDUCE_EXACT", (int)out->kind);
	return e;
}

/* The checks every kind makes on buffers of count elements of dtype. */
static ftl_err check_buffers(struct ftl_comm *comm, const char *what, const void *sendbuf, void *recvbuf,
			     size_t count, ftl_dtype dtype, ftl_reduce_op op)
{
	size_t bytes = 0; /* set by the check; 0 keeps -Wmaybe-uninitialized quiet in Release */
	ftl_err err = ftl_comm_check_call(comm, what, dtype, count, 1, &bytes);
	if (err)
		return err;
	if ((unsigned)op >= FTL_REDUCE_OP_MAX)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s: unknown op %d", what, (int)op);
	if (!ftl_reduce_op_accepts(op, dtype))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s: the reduction %s is not defined on %s%s", what,
				     ftl_reduce_op_strs[op], ftl_dtype_strs[dtype],
				     op == FTL_AVG ? " (sum the values and divide)" : "; bitwise ops take integers or bool");
	if (comm->ops->is_without_bitwise && (op == FTL_BAND || op == FTL_BOR || op == FTL_BXOR))
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false, "%s: the %s backend has no bitwise reduction "
				     "(%s)", what, ftl_comm_backend_name(comm->backend), ftl_reduce_op_strs[op]);
	if (count > 0 && (sendbuf == NULL || recvbuf == NULL))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s: NULL buffer with count %zu", what, count);
	if (sendbuf != recvbuf && ftl_comm_overlaps(sendbuf, bytes, recvbuf, bytes))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false,
				     "%s: send and receive buffers overlap without being the same", what);
	return FTL_OK;
}

static ftl_err plain(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype,
		     ftl_reduce_op op, ftl_comm_request **req)
{
	if (req == NULL)
		return ftl_comm_async_allreduce(comm, sendbuf, recvbuf, count, dtype, op);
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
				    .count = count, .dtype = dtype, .op = op};
	if (!comm->ops->is_async && comm->ops->enqueue == NULL)
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false,
				     "the %s backend has no asynchronous collectives yet; call ftl_comm_allreduce "
				     "without a request", ftl_comm_backend_name(comm->backend));
	/* A zero count is queued too: its completion still says the calls before it have run. */
	return ftl_comm_async_submit(comm, &call, req);
}

static ftl_err bf16(struct ftl_comm *comm, const float *sendbuf, float *recvbuf, size_t count, ftl_reduce_op op,
		    float *residual)
{
	if (count == 0)
		return FTL_OK;
	if (comm->backend != FTL_COMM_TCP && comm->ops->allreduce_bf16 == NULL) /* the host path needs host memory */
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false,
				     "allreduce_bf16: this build of the %s backend has no compression kernels "
				     "(CMake found no nvcc, or a sanitizer build)", ftl_comm_backend_name(comm->backend));
	size_t bytes = count * sizeof(float);
	if (residual != NULL && op != FTL_SUM && op != FTL_AVG)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false,
				     "allreduce_bf16: error feedback is for sum and avg, not %s", ftl_reduce_op_strs[op]);
	if (residual != NULL &&
	    (ftl_comm_overlaps(residual, bytes, sendbuf, bytes) || ftl_comm_overlaps(residual, bytes, recvbuf, bytes)))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false,
				     "allreduce_bf16: the residual overlaps the send or receive buffer");
	if (comm->ops->allreduce_bf16 == NULL)
		return ftl_comm_bf16_on_host(comm, sendbuf, recvbuf, count, op, residual);
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLREDUCE_BF16, .sendbuf = sendbuf, .recvbuf = recvbuf,
				    .count = count, .dtype = FTL_F32, .op = op, .residual = residual};
	return ftl_comm_async_call(comm, &call);
}

static ftl_err exact(struct ftl_comm *comm, const float *rows, float *out, size_t count, ftl_reduce_op op,
		     const ftl_allreduce_opts *o)
{
	if (op != FTL_SUM)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "allreduce_exact: the exact sum is FTL_SUM, not %s",
				     ftl_reduce_op_strs[op]);
	if (o->total_rows == 0 || o->total_rows < o->n_rows || (rows == NULL && o->n_rows > 0) || out == NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false,
				     "allreduce_exact: %zu rows here of %llu in all, rows %s, out %s: give total_rows "
				     ">= n_rows > 0 or n_rows 0, the rows, and count floats for the sum",
				     o->n_rows, (unsigned long long)o->total_rows, rows ? "set" : "NULL",
				     out ? "set" : "NULL");
	if (count > 0 && o->n_rows > SIZE_MAX / count / sizeof(float))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "allreduce_exact: %zu rows of %zu floats overflow "
				     "size_t", o->n_rows, count);
	if (o->n_rows > 0 && ftl_comm_overlaps(rows, o->n_rows * count * sizeof(float), out, count * sizeof(float)))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "allreduce_exact: the rows overlap the sum");
	if (comm->backend != FTL_COMM_TCP)
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false, "the exact allreduce works on host memory "
				     "(tcp backend); use FTL_COMM=tcp for FTL_REPRODUCIBLE");
	return count == 0 ? FTL_OK : ftl_comm_exact_sum(comm, rows, o->n_rows, count, o->total_rows, out);
}

ftl_err ftl_comm_allreduce(ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype,
			   ftl_reduce_op op, const ftl_allreduce_opts *opts, ftl_comm_request **req)
{
	if (req != NULL)
		*req = NULL;
	if (comm == NULL)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "ftl_comm_allreduce: the communicator is NULL");
	ftl_allreduce_opts o;
	ftl_err e = ftl_allreduce_opts_read(opts, &o);
	if (e != FTL_OK)
		return ftl_comm_fail(comm, e, false, "%s", ftl_error_message());
	if (o.bucket != NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "allreduce: a gradient bucket is the agent's "
				     "(ftl_allreduce); ftl_comm_allreduce takes opts->residual instead");
	if (o.kind != FTL_ALLREDUCE_PLAIN && dtype != FTL_F32)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "allreduce_%s: f32 only, not %s",
				     ftl_allreduce_kind_strs[o.kind],
				     (unsigned)dtype < FTL_DTYPE_MAX ? ftl_dtype_strs[dtype] : "an unknown dtype");
	if (o.kind != FTL_ALLREDUCE_PLAIN && req != NULL)
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false,
				     "allreduce_%s: blocking only; call it without a request (an asynchronous "
				     "compressed allreduce is a gradient bucket's, ftl/gradient.h)",
				     ftl_allreduce_kind_strs[o.kind]);
	const char *what = o.kind == FTL_ALLREDUCE_PLAIN ? (req ? "allreduce_async" : "allreduce")
			 : o.kind == FTL_ALLREDUCE_BF16 ? "allreduce_bf16" : "allreduce_exact";
	/* the exact sum's sendbuf is n_rows rows, checked by exact() */
	e = check_buffers(comm, what, o.kind == FTL_ALLREDUCE_EXACT ? recvbuf : sendbuf, recvbuf, count, dtype, op);
	if (e != FTL_OK)
		return e;
	switch (o.kind) {
	case FTL_ALLREDUCE_BF16:
		return bf16(comm, sendbuf, recvbuf, count, op, o.residual);
	case FTL_ALLREDUCE_EXACT:
		return exact(comm, sendbuf, recvbuf, count, op, &o);
	default:
		return plain(comm, sendbuf, recvbuf, count, dtype, op, req);
	}
}
