/* comm_bf16_pipeline: the bf16 allreduce (FTL_ALLREDUCE_BF16) where the backend has no kernels of its own
 * (tcp): round the f32 input to bf16 in host memory, run a bf16 allreduce, widen the result back to f32.
 *
 * Why chunks: rounding and widening take about half as long as the bf16 allreduce itself (64 MiB of f32 on
 * the 2-core loopback host: about 7 ms to round, 4 ms to widen, 25 ms for the allreduce with the
 * conversions taken out). One after the other they ate most of what halving the bytes saved. Cut into chunks, the
 * caller's thread rounds chunk k+1 while the communicator's progress thread (comm_async.c) has chunk k on
 * the wire, and widens chunk k while chunk k+1 is on the wire. Two chunk buffers suffice (chunk k+2 is
 * rounded into chunk k's buffer after chunk k was widened), and they stay in cache where a whole buffer
 * would not. A buffer under two chunks goes in one pass: there is nothing to overlap.
 *
 * The chunk (FTL_COMM_BF16_CHUNK, 256K elements: 1 MiB of f32) is measured: 2 ranks on the shared, loaded
 * 2-core host, `bench_comm_tcp 2 bf16 67108864 CHUNK` interleaved with the f32 run, the median over 8-10
 * rounds of each round's ratio to f32 at 64 MiB (two sweeps): one pass 0.93 0.94, 64K 0.88, 128K 1.00,
 * 256K 1.21 1.29, 512K 1.10 0.95, 1M 0.97. Smaller chunks pay a collective's fixed cost too often; larger
 * ones overlap less and fall out of the 2 MiB L2.
 *
 * What stays the same: every element is rounded, reduced and widened as in one pass (avg still sums in
 * bf16 and divides once in f32), so the bound in ftl/comm.h holds element by element. The bits are the same
 * wherever the chunk's allreduce adds an element's operands in the same order as the whole buffer's: always
 * at 2 ranks, and at any world size between the algorithms that add in rank order (doubling, halving,
 * shared memory). The ring at 3 ranks or more starts an element's sum at the rank that owns its segment,
 * which depends on the buffer's length; the one pass takes the ring above 2 MiB of bf16 and the chunks
 * (halving at this size) do not, so there the last bit may differ, within the same bound.
 *
 * Failure: a failed chunk fails the call. It breaks the communicator, so the one chunk queued behind it
 * completes at once with the same error; it is waited for all the same, so no request outlives the call.
 * Error feedback stores every element's residual once, failure or not, as the one pass does (it rounded
 * everything before sending anything): after a failed chunk the rest is still rounded. */
#include <stdlib.h>

#include "comm.h"
#include "comm_compress.h"

/* One compressed allreduce, cut into n_chunks nearly equal chunks (the first count % n_chunks of them one
 * element longer). */
struct bf16_pipeline {
	struct ftl_comm *comm;
	const float *sendbuf;
	float *recvbuf;
	float *residual;         /* or NULL */
	size_t count;
	size_t n_chunks;
	ftl_reduce_op wire_op;   /* avg sums on the wire and divides when widening */
	int divisor;
	uint16_t *slots[2];      /* chunk k is rounded into slots[k % 2] */
};

/* Grows the communicator's bf16 buffer to at least bytes; grown once, so no page faults per call. */
static uint16_t *wire_buffer(struct ftl_comm *comm, size_t bytes)
{
	if (comm->wire_cap < bytes) {
		void *grown = realloc(comm->wire, bytes);
		if (grown == NULL)
			return NULL;
		comm->wire = grown;
		comm->wire_cap = bytes;
	}
	return comm->wire;
}

static void chunk_range(const struct bf16_pipeline *p, size_t k, size_t *off, size_t *len)
{
	size_t base = p->count / p->n_chunks, extra = p->count % p->n_chunks;
	*off = k * base + (k < extra ? k : extra);
	*len = base + (k < extra);
}

/* Rounds chunk k into its slot and queues its bf16 allreduce. */
static ftl_err start_chunk(const struct bf16_pipeline *p, size_t k, ftl_comm_request **req)
{
	size_t off, len;
	chunk_range(p, k, &off, &len);
	uint16_t *wire = p->slots[k % 2];
	ftl_comm_compress_bf16(p->sendbuf + off, p->residual != NULL ? p->residual + off : NULL, wire, len);
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLREDUCE, .sendbuf = wire, .recvbuf = wire, .count = len,
				    .dtype = FTL_BF16, .op = p->wire_op};
	return ftl_comm_async_submit(p->comm, &call, req);
}

/* Waits for chunk k and widens it into recvbuf. */
static ftl_err finish_chunk(const struct bf16_pipeline *p, size_t k, ftl_comm_request **req)
{
	ftl_err err = ftl_comm_wait(p->comm, req);
	if (err == FTL_OK) {
		size_t off, len;
		chunk_range(p, k, &off, &len);
		ftl_comm_expand_bf16(p->slots[k % 2], p->recvbuf + off, len, p->divisor);
	}
	return err;
}

/* After a failure at chunk `from`: the residual of the chunks never rounded, as the one pass keeps it. */
static void round_the_rest(const struct bf16_pipeline *p, size_t from)
{
	for (size_t k = from; p->residual != NULL && k < p->n_chunks; k++) {
		size_t off, len;
		chunk_range(p, k, &off, &len);
		ftl_comm_compress_bf16(p->sendbuf + off, p->residual + off, p->slots[0], len);
	}
}

static ftl_err run_pipeline(const struct bf16_pipeline *p)
{
	ftl_err err = FTL_OK;
	ftl_comm_request *in_flight = NULL; /* chunk k-1's */
	size_t k = 0;
	for (; k < p->n_chunks && err == FTL_OK; k++) {
		ftl_comm_request *next = NULL;
		err = start_chunk(p, k, &next);
		if (in_flight != NULL) {
			ftl_err e = finish_chunk(p, k - 1, &in_flight);
			err = err != FTL_OK ? err : e;
		}
		in_flight = next;
	}
	if (in_flight != NULL) { /* chunk k-1, the last started */
		ftl_err e = finish_chunk(p, k - 1, &in_flight);
		err = err != FTL_OK ? err : e;
	}
	if (err != FTL_OK)
		round_the_rest(p, k);
	return err;
}

void ftl_comm_bf16_set_chunk(struct ftl_comm *comm, size_t count)
{
	comm->bf16_chunk = count;
}

ftl_err ftl_comm_bf16_on_host(struct ftl_comm *comm, const float *sendbuf, float *recvbuf, size_t count,
			      ftl_reduce_op op, float *residual)
{
	struct bf16_pipeline p = {
		.comm = comm,
		.sendbuf = sendbuf,
		.recvbuf = recvbuf,
		.residual = residual,
		.count = count,
		.n_chunks = 1,
		.wire_op = op == FTL_AVG ? FTL_SUM : op,
		.divisor = op == FTL_AVG ? comm->world_size : 1,
	};
	if (comm->ops->is_async && comm->bf16_chunk > 0 && count / comm->bf16_chunk >= 2)
		p.n_chunks = count / comm->bf16_chunk;
	size_t slot = count / p.n_chunks + (count % p.n_chunks != 0); /* the longest chunk */
	uint16_t *wire = wire_buffer(comm, (p.n_chunks > 1 ? 2 : 1) * slot * sizeof(uint16_t));
	if (wire == NULL)
		return ftl_comm_fail(comm, FTL_ERR_SYSTEM, false, "allreduce_bf16: out of memory for %zu elements",
				     count);
	p.slots[0] = wire;
	p.slots[1] = wire + slot;
	if (p.n_chunks > 1)
		return run_pipeline(&p);
	ftl_comm_compress_bf16(sendbuf, residual, wire, count);
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLREDUCE, .sendbuf = wire, .recvbuf = wire, .count = count,
				    .dtype = FTL_BF16, .op = p.wire_op};
	ftl_err err = ftl_comm_async_call(comm, &call);
	if (err == FTL_OK)
		ftl_comm_expand_bf16(wire, recvbuf, count, p.divisor);
	return err;
}
