/* State sync: after a view change or a failed step, every member takes rank 0's state by broadcast.
 * First a header of a fixed size (step, data epoch, sample position, the save callback's length, the job's
 * checkpoint id, then the job's shape: state_shape.h), so that a worker whose buffers or settings differ is
 * refused alone, naming the difference, before any collective whose size depends on them (the others then
 * lose it as a peer and go on in the next view); then every registered buffer, then the save/load bytes.
 *
 * Which communicator moves what (issue 14): control data is host memory and goes over the host path
 * (c->ctrl); a registered buffer goes over the communicator that reads its kind of memory, in place: a
 * device buffer over the data comm (nccl), a host buffer over the host path. No device pointer is ever
 * dereferenced here, and none is handed to the host comm; no host pointer reaches a device comm. Under tcp
 * the two are one communicator. Sizes are in bytes; host bytes travel as i64 words plus a padded tail
 * word, device bytes as the widest words that divide them (registration keeps device sizes even). */
#include "state_sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_shape.h"

#define HDR_FIXED 5
#define HDR_WORDS (HDR_FIXED + FTL_SHAPE_WORDS)

/* Host memory over the host path: i64 words, then the tail padded into one word. */
static ftl_err bcast_host(ftl_comm *ctrl, void *buf, size_t len)
{
	size_t words = len / 8, tail = len % 8;
	ftl_err e = FTL_OK;
	if (words)
		e = ftl_comm_broadcast(ctrl, buf, words, FTL_I64, 0);
	if (e == FTL_OK && tail) {
		int64_t last = 0;
		memcpy(&last, (uint8_t *)buf + words * 8, tail);
		e = ftl_comm_broadcast(ctrl, &last, 1, FTL_I64, 0);
		memcpy((uint8_t *)buf + words * 8, &last, tail);
	}
	return e;
}

/* Device memory over the data comm, in place, in the widest words that divide it. */
static ftl_err bcast_device(ftl_comm *data, void *buf, size_t len)
{
	if (len % 8 == 0)
		return ftl_comm_broadcast(data, buf, len / 8, FTL_I64, 0);
	if (len % 4 == 0)
		return ftl_comm_broadcast(data, buf, len / 4, FTL_I32, 0);
	return ftl_comm_broadcast(data, buf, len / 2, FTL_F16, 0); /* a bit copy: broadcast reduces nothing */
}

static ftl_err bcast_buffer(const ftl_comm_pair *c, const ftl_buffer_reg *b)
{
	return b->is_device ? bcast_device(c->data, b->ptr, b->bytes) : bcast_host(c->ctrl, b->ptr, b->bytes);
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

ftl_err ftl_state_sync(ftl_state_registry *r, const ftl_comm_pair *c, int rank, uint64_t *moved)
{
	int64_t hdr[HDR_WORDS];
	void *saved = NULL;
	size_t saved_len = 0;
	ftl_err e;
	if (rank == 0 && (e = save_bytes(r, &saved, &saved_len)) != FTL_OK)
		return e;
	hdr[0] = (int64_t)r->step;
	hdr[1] = (int64_t)r->data_epoch;
	hdr[2] = (int64_t)r->sample_pos;
	hdr[3] = (int64_t)saved_len;
	hdr[4] = (int64_t)r->job_id;
	ftl_shape_pack(r, hdr + HDR_FIXED);
	if ((e = ftl_comm_broadcast(c->ctrl, hdr, HDR_WORDS, FTL_I64, 0)) != FTL_OK) {
		free(saved);
		return comm_failed(e, c);
	}
	if (rank != 0 && (e = ftl_shape_check(r, hdr + HDR_FIXED)) != FTL_OK)
		return e; /* refused: the caller leaves the view before anyone sends what the shape sizes */
	for (int i = 0; e == FTL_OK && i < r->n_buffers; i++)
		e = bcast_buffer(c, &r->buffers[i]);
	if (e == FTL_OK && hdr[3] > 0) {
		if (rank != 0)
			saved = malloc((size_t)hdr[3]);
		if (!saved) {
			return ftl_diag_set(FTL_ERR_SYSTEM, "ftl: state sync: out of memory for %lld callback bytes", (long long)hdr[3]);
		}
		e = bcast_host(c->ctrl, saved, (size_t)hdr[3]);
		if (e == FTL_OK && rank != 0 && r->load)
			r->load(r->cb_ctx, saved, (size_t)hdr[3]);
	}
	free(saved);
	if (e != FTL_OK)
		return comm_failed(e, c);
	r->step = (uint64_t)hdr[0];
	r->data_epoch = (uint64_t)hdr[1];
	r->sample_pos = (uint64_t)hdr[2];
	r->job_id = (uint64_t)hdr[4];
	r->has_state = true;
	*moved = ftl_state_buffer_bytes(r) + (uint64_t)hdr[3];
	return FTL_OK;
}
