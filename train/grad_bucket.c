/* Gradient buckets (ftl/gradient.h): the compressed gradient allreduce of a training job, blocking and
 * asynchronous, with the error-feedback residual kept per bucket.
 *
 * Both paths are the same three stages: round buf (plus the residual) to bf16, sum the bf16 buffers over
 * the world with the exact bf16 allreduce (f32 additions, comm_reduce.c), widen the sum back into buf
 * (dividing by the world size for FTL_AVG, in f32). The blocking path is the communicator's
 * bf16 allreduce (FTL_ALLREDUCE_BF16), which overlaps rounding and widening with the transfer in chunks
 * (comm/comm_bf16_pipeline.c). The asynchronous path rounds into the bucket's own wire buffer and widens
 * when the request is consumed (requests.h): the buffer is the bucket's, not the communicator's, so several
 * buckets can be in flight at once.
 *
 * The residual is tied to the communicator it was accumulated under (comm_seq) and to the buffer length:
 * a new view or another length starts it from zero (why: ftl/gradient.h). */
#include "ftl/gradient.h"

#include "agent/agent_training.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_compress.h"
#include "base/diag.h"
#include "grad_bucket.h"
#include "base/log.h"
#include "requests.h"
#include "training.h"

const char *const ftl_compress_strs[FTL_COMPRESS_MAX] = {
	[FTL_COMPRESS_OFF] = "off",
	[FTL_COMPRESS_BF16] = "bf16",
	[FTL_COMPRESS_BF16_EF] = "bf16-ef",
};

struct ftl_grad_bucket {
	ftl_agent *agent;
	ftl_compress compress;
	size_t wire_cap;         /* elements wire holds (the asynchronous path's only) */
	uint16_t *wire;          /* [wire_cap] this rank's bf16 input, then the world's bf16 sum */
	size_t residual_cap;     /* elements residual holds */
	float *residual;         /* [residual_cap] error feedback (bf16-ef only): what rounding dropped, for next time */
	size_t residual_count;   /* the buffer length the residual is for (0: none yet) */
	uint64_t residual_seq;   /* ... and the communicator (comm_seq) it was accumulated under */
	bool is_busy;            /* an asynchronous request owns wire */
	float *out;              /* that request's buffer, length, divisor (FTL_AVG: the world size, else 1) */
	size_t out_count;
	int out_divisor;
};

ftl_err ftl_compress_check(ftl_compress compress, ftl_comm_backend backend, const ftl_batch_config *batch)
{
	if ((int)compress < 0 || compress >= FTL_COMPRESS_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "FTL_COMM_COMPRESS: unknown mode %d; expected off, bf16 or bf16-ef", (int)compress);
	if (compress == FTL_COMPRESS_OFF)
		return 0;
	if (backend != FTL_COMM_TCP)
		return ftl_diag_set(FTL_ERR_UNSUPPORTED,
				    "FTL_COMM_COMPRESS=%s with FTL_COMM=nccl: the compressed allreduce is for the tcp "
				    "backend (host memory); unset FTL_COMM_COMPRESS or use FTL_COMM=tcp",
				    ftl_compress_strs[compress]);
	if (batch->is_reproducible)
		return ftl_diag_set(FTL_ERR_INVALID,
				    "FTL_COMM_COMPRESS=%s with FTL_REPRODUCIBLE=1: reproducible mode promises exact, "
				    "bit-for-bit sums and compression rounds the gradients; unset one of them",
				    ftl_compress_strs[compress]);
	return FTL_OK;
}

ftl_grad_bucket *ftl_grad_bucket_new(ftl_agent *a, ftl_compress compress)
{
	ftl_training *t = ftl_agent_is_training(a) ? ftl_training_of(a) : NULL;
	if (t == NULL) {
		ftl_diag_set(FTL_ERR_INVALID, "ftl_grad_bucket_new: call ftl_set_training first (it holds FTL_COMM_COMPRESS)");
		return NULL;
	}
	if (compress == FTL_COMPRESS_DEFAULT)
		compress = t->cfg.compress;
	if (ftl_compress_check(compress, t->cfg.backend, &t->cfg.batch) != FTL_OK) {
		ftl_log(ftl_agent_logger(a), FTL_LOG_ERROR, "training", ftl_diag_message());
		return NULL;
	}
	ftl_grad_bucket *b = calloc(1, sizeof(*b));
	if (b == NULL) {
		ftl_diag_set(FTL_ERR_SYSTEM, "ftl_grad_bucket_new: out of memory");
		return NULL;
	}
	b->agent = a;
	b->compress = compress;
	return b;
}

void ftl_grad_bucket_delete(ftl_grad_bucket *b)
{
	if (b == NULL)
		return;
	free(b->wire);
	free(b->residual);
	free(b);
}

ftl_compress ftl_grad_bucket_compress(const ftl_grad_bucket *b) { return b->compress; }

/* Room for count elements: the residual, and the wire buffer when the asynchronous path needs one (the
 * blocking path's comm rounds in chunks of its own); a residual from another communicator or for another
 * length starts at zero. */
static ftl_err prepare(ftl_grad_bucket *b, size_t count, bool needs_wire, const char *what)
{
	ftl_training *t = ftl_agent_training(b->agent);
	bool is_ef = b->compress == FTL_COMPRESS_BF16_EF;
	bool is_out_of_memory = false;
	if (needs_wire && b->wire_cap < count) {
		uint16_t *wire = realloc(b->wire, count * sizeof(*wire));
		if (wire != NULL) {
			b->wire = wire;
			b->wire_cap = count;
		}
		is_out_of_memory |= wire == NULL;
	}
	if (is_ef && b->residual_cap < count) {
		float *residual = realloc(b->residual, count * sizeof(*residual));
		if (residual != NULL) {
			b->residual = residual;
			b->residual_cap = count;
		}
		is_out_of_memory |= residual == NULL;
	}
	if (is_out_of_memory)
		return ftl_training_fail(t, FTL_ERR_SYSTEM, "%s: out of memory for a bucket of %zu floats", what, count);
	if (is_ef && (b->residual_count != count || b->residual_seq != t->comm_seq)) {
		memset(b->residual, 0, count * sizeof(float));
		b->residual_count = count;
		b->residual_seq = t->comm_seq;
	}
	return FTL_OK;
}

/* The checks both paths make, and room for count elements (prepare). */
static ftl_err start(ftl_agent *a, ftl_grad_bucket *b, const void *sendbuf, void *recvbuf, size_t count,
		     ftl_dtype dtype, ftl_reduce_op op, ftl_allreduce_kind kind, bool needs_wire)
{
	ftl_training *t = ftl_agent_training(a);
	if (b->agent != a || (count > 0 && (sendbuf == NULL || recvbuf == NULL)) || dtype != FTL_F32 ||
	    (op != FTL_SUM && op != FTL_AVG) || kind != FTL_ALLREDUCE_PLAIN) {
		return ftl_training_fail(t, FTL_ERR_INVALID, "ftl_allreduce with a gradient bucket: needs this agent's "
					 "bucket, f32 buffers, FTL_SUM or FTL_AVG, and the plain kind (the bucket "
					 "says whether to compress)");
	}
	if (b->is_busy) {
		return ftl_training_fail(t, FTL_ERR_INVALID, "ftl_allreduce with a gradient bucket: the bucket's "
					 "previous request is still outstanding; ftl_wait for it first");
	}
	return prepare(b, count, needs_wire, "ftl_allreduce with a gradient bucket");
}

static int divisor(const ftl_agent *a, ftl_reduce_op op)
{
	return op == FTL_AVG ? ftl_comm_world_size(ftl_agent_training(a)->comm) : 1;
}

/* The blocking path: the comm's own compressed allreduce, whose rounding and widening overlap the transfer
 * in chunks. */
static ftl_err reduce_now(ftl_agent *a, ftl_grad_bucket *b, const float *sendbuf, float *recvbuf, size_t count,
			  ftl_reduce_op op)
{
	ftl_comm *c = ftl_agent_training(a)->comm;
	ftl_allreduce_opts o;
	ftl_allreduce_opts_init(&o);
	o.kind = FTL_ALLREDUCE_BF16;
	o.residual = b->residual;
	ftl_err e = ftl_train_metrics_allreduce(a, c, sendbuf, recvbuf, count, FTL_F32, op, &o);
	if (e != FTL_OK)
		return ftl_training_fail(ftl_agent_training(a), e, "%s", ftl_comm_error(c));
	return e;
}

/* requests.h's hook: the sum arrived (or the request failed); the wire buffer is free again. */
static void widen_when_done(void *arg, ftl_err result)
{
	ftl_grad_bucket *b = arg;
	if (result == FTL_OK)
		ftl_comm_expand_bf16(b->wire, b->out, b->out_count, b->out_divisor);
	b->is_busy = false;
}

/* The asynchronous path: rounds into the bucket's wire buffer now, widens when the request is consumed. */
static ftl_err start_reduce(ftl_agent *a, ftl_grad_bucket *b, const float *sendbuf, float *recvbuf, size_t count,
			    ftl_reduce_op op, ftl_request **req)
{
	ftl_comm_compress_bf16(sendbuf, b->residual, b->wire, count);
	b->out = recvbuf;
	b->out_count = count;
	b->out_divisor = divisor(a, op);
	ftl_err e = ftl_request_allreduce(a, b->wire, b->wire, count, FTL_BF16, FTL_SUM, NULL, widen_when_done, b, req);
	b->is_busy = e == FTL_OK;
	return e;
}

ftl_err ftl_grad_bucket_allreduce(ftl_agent *a, ftl_grad_bucket *b, const void *sendbuf, void *recvbuf, size_t count,
				  ftl_dtype dtype, ftl_reduce_op op, ftl_allreduce_kind kind, ftl_request **req)
{
	if (b->compress == FTL_COMPRESS_OFF && b->agent == a && kind == FTL_ALLREDUCE_PLAIN && dtype == FTL_F32)
		return ftl_allreduce(a, sendbuf, recvbuf, count, FTL_F32, op, NULL, req);
	ftl_err e = start(a, b, sendbuf, recvbuf, count, dtype, op, kind, req != NULL);
	if (e != FTL_OK)
		return e;
	if (req != NULL)
		return start_reduce(a, b, sendbuf, recvbuf, count, op, req);
	return count == 0 ? FTL_OK : reduce_now(a, b, sendbuf, recvbuf, count, op);
}
