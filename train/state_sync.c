/* State sync: after a view change or a failed step, every member takes rank 0's state by broadcast.
 * First a header of a fixed size (step, data epoch, sample position, a word unused, the job's checkpoint
 * id, the lineage of rank 0's state, then the job's shape: state_shape.h), so that a worker whose buffers or settings differ is
 * refused alone, naming the difference, before any collective whose size depends on them (the others then
 * lose it as a peer and go on in the next view); then, unless every rank holds it already (below), every
 * registered buffer, then the save/load bytes (their length, then them).
 *
 * Which communicator moves what (issue 14): control data is host memory and goes over the host path
 * (c->ctrl); a registered buffer goes over the communicator that reads its kind of memory, in place: a
 * device buffer over the data comm (nccl), a host buffer over the host path. No device pointer is ever
 * dereferenced here, and none is handed to the host comm; no host pointer reaches a device comm. Under tcp
 * the two are one communicator. Sizes are in bytes; host bytes travel as i64 words plus a padded tail
 * word, device bytes as the widest words that divide them (registration keeps device sizes even).
 *
 * Most syncs move nothing (issue 26): after a kill, every survivor already holds rank 0's state, because
 * the step contract (execute.h) has every rank change it only after a step's collectives succeeded, so the
 * same step count within the same lineage means the same state. The header therefore also carries the
 * lineage rank 0's state belongs to, each rank says whether its own step, data epoch, sample position, job
 * id and lineage are rank 0's, and one allreduce (MIN) decides for all: when every rank holds it, the
 * buffers and the callback bytes are not sent. A joiner, a merged lineage, or a rank whose failed step
 * completed here but not on rank 0 (its count moved) still takes all of it. Without this the broadcast cost
 * about 0.28 s per GB after every failure, and on a loaded host it ran beside the kernel freeing the dead
 * process's memory; rank 0's save callback (torch.save of the optimizer) runs only when its bytes move.
 * When they do move (a join), the ranks that hold them say so to the broadcast (ftl_comm_broadcast_held):
 * shared memory then copies them out only into the joiner, instead of into every rank, so on a shared host
 * the root and the joiner have the cores (100 MB, 4 ranks on 2 cores: from ~31 to ~15 ms). */
#include "state_sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "state_shape.h"

#define HDR_FIXED 6
#define HDR_WORDS (HDR_FIXED + FTL_SHAPE_WORDS)

/* Host memory over the host path: i64 words, then the tail padded into one word. held: this rank holds
 * rank 0's bytes already (ftl_comm_broadcast_held). */
static ftl_err bcast_host(ftl_comm *ctrl, void *buf, size_t len, bool held)
{
	size_t words = len / 8, tail = len % 8;
	ftl_err e = FTL_OK;
	if (words)
		e = ftl_comm_broadcast_held(ctrl, buf, words, FTL_I64, 0, held);
	if (e == FTL_OK && tail) {
		int64_t last = 0;
		memcpy(&last, (uint8_t *)buf + words * 8, tail);
		e = ftl_comm_broadcast_held(ctrl, &last, 1, FTL_I64, 0, held);
		memcpy((uint8_t *)buf + words * 8, &last, tail);
	}
	return e;
}

/* Device memory over the data comm, in place, in the widest words that divide it. */
static ftl_err bcast_device(ftl_comm *data, void *buf, size_t len, bool held)
{
	if (len % 8 == 0)
		return ftl_comm_broadcast_held(data, buf, len / 8, FTL_I64, 0, held);
	if (len % 4 == 0)
		return ftl_comm_broadcast_held(data, buf, len / 4, FTL_I32, 0, held);
	return ftl_comm_broadcast_held(data, buf, len / 2, FTL_F16, 0, held); /* a bit copy: reduces nothing */
}

static ftl_err bcast_buffer(const ftl_comm_pair *c, const ftl_buffer_reg *b, bool held)
{
	return b->is_device ? bcast_device(c->data, b->ptr, b->bytes, held)
			    : bcast_host(c->ctrl, b->ptr, b->bytes, held);
}

static ftl_err comm_failed(ftl_err e, const ftl_comm_pair *c)
{
	const char *why = ftl_comm_error(c->ctrl);
	if ((!why || !why[0]) && c->data != c->ctrl)
		why = ftl_comm_error(c->data);
	return ftl_diag_set(e, "ftl: state sync from rank 0 failed: %s", why && why[0] ? why : ftl_strerror(e));
}

/* Rank 0's save callback bytes (malloc'd; NULL with len 0 when there are none). */
static ftl_err save_bytes(ftl_state_registry *r, void **out, size_t *len)
{
	*out = NULL;
	*len = r->save ? r->save(r->cb_ctx, NULL, 0) : 0;
	if (!*len)
		return FTL_OK;
	*out = malloc(*len);
	if (*out && r->save(r->cb_ctx, *out, *len) == *len)
		return FTL_OK;
	free(*out);
	*out = NULL;
	return ftl_diag_set(FTL_ERR_SYSTEM, "ftl: state sync: the save callback did not write the %zu bytes it asked for "
		 "(or out of memory)", *len);
}

/* Whether this worker already holds what rank 0 is about to send (rank 0's header, our lineage). */
static bool holds_rank0_state(const ftl_state_registry *r, uint64_t lineage, const int64_t *hdr)
{
	return r->has_state && lineage != 0 && (uint64_t)hdr[5] == lineage && (uint64_t)hdr[0] == r->step &&
	       (uint64_t)hdr[1] == r->data_epoch && (uint64_t)hdr[2] == r->sample_pos && (uint64_t)hdr[4] == r->job_id;
}

/* Rank 0's save callback bytes to everyone (after the buffers): their length first, then the bytes, loaded
 * on the others. *len: how many moved. */
static ftl_err sync_saved_bytes(ftl_state_registry *r, const ftl_comm_pair *c, int rank, size_t *len)
{
	void *saved = NULL;
	size_t saved_len = 0;
	ftl_err e;
	if (rank == 0 && (e = save_bytes(r, &saved, &saved_len)) != FTL_OK)
		return e;
	int64_t n = (int64_t)saved_len;
	if ((e = ftl_comm_broadcast(c->ctrl, &n, 1, FTL_I64, 0)) != FTL_OK) {
		free(saved);
		return comm_failed(e, c);
	}
	if (n > 0 && rank != 0 && !(saved = malloc((size_t)n)))
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl: state sync: out of memory for %lld callback bytes", (long long)n);
	if (n > 0 && (e = bcast_host(c->ctrl, saved, (size_t)n, false)) == FTL_OK && rank != 0 && r->load)
		r->load(r->cb_ctx, saved, (size_t)n);
	free(saved);
	*len = (size_t)n;
	return e == FTL_OK ? FTL_OK : comm_failed(e, c);
}

ftl_err ftl_state_sync(ftl_state_registry *r, const ftl_comm_pair *c, int rank, uint64_t lineage, uint64_t *moved)
{
	int64_t hdr[HDR_WORDS];
	hdr[0] = (int64_t)r->step;
	hdr[1] = (int64_t)r->data_epoch;
	hdr[2] = (int64_t)r->sample_pos;
	hdr[3] = 0; /* unused: the callback bytes' length travels with them (sync_saved_bytes) */
	hdr[4] = (int64_t)r->job_id;
	hdr[5] = (int64_t)lineage;
	ftl_shape_pack(r, hdr + HDR_FIXED);
	ftl_err e = ftl_comm_broadcast(c->ctrl, hdr, HDR_WORDS, FTL_I64, 0);
	if (e != FTL_OK)
		return comm_failed(e, c);
	if (rank != 0 && (e = ftl_shape_check(r, hdr + HDR_FIXED)) != FTL_OK)
		return e; /* refused: the caller leaves the view before anyone sends what the shape sizes */
	bool held = rank == 0 || holds_rank0_state(r, lineage, hdr);
	int64_t everyone_holds = held;
	if ((e = ftl_comm_allreduce(c->ctrl, &everyone_holds, &everyone_holds, 1, FTL_I64, FTL_MIN, NULL, NULL)) != FTL_OK)
		return comm_failed(e, c);
	*moved = 0;
	if (everyone_holds)
		return FTL_OK;
	for (int i = 0; e == FTL_OK && i < r->n_buffers; i++)
		e = bcast_buffer(c, &r->buffers[i], held);
	if (e != FTL_OK)
		return comm_failed(e, c);
	size_t saved_len = 0;
	if ((e = sync_saved_bytes(r, c, rank, &saved_len)) != FTL_OK)
		return e;
	r->step = (uint64_t)hdr[0];
	r->data_epoch = (uint64_t)hdr[1];
	r->sample_pos = (uint64_t)hdr[2];
	r->job_id = (uint64_t)hdr[4];
	r->has_state = true;
	*moved = ftl_state_buffer_bytes(r) + (uint64_t)saved_len;
	return FTL_OK;
}
