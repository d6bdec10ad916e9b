/* State sync: after a view change or a failed step, every member takes rank 0's state by broadcast.
 * First a header (step, data epoch, sample position, the save callback's length, the job's checkpoint id,
 * each buffer's size) so that a shape mismatch is an error with a message rather than garbage; then every
 * registered buffer, then the save/load bytes. Sizes are in bytes; they travel as i64 words plus a padded tail. */
#include "agent_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define HDR_FIXED 5

static ftl_err bcast_bytes(ftl_agent *a, void *buf, size_t len)
{
	size_t words = len / 8, tail = len % 8;
	ftl_err e = FTL_OK;
	if (words)
		e = ftl_broadcast(a, buf, words, FTL_I64, 0);
	if (e == FTL_OK && tail) {
		int64_t last = 0;
		memcpy(&last, (uint8_t *)buf + words * 8, tail);
		e = ftl_broadcast(a, &last, 1, FTL_I64, 0);
		memcpy((uint8_t *)buf + words * 8, &last, tail);
	}
	return e;
}

ftl_err ftl_state_sync(ftl_agent *a, int rank)
{
	ftl_training *t = &a->train;
	size_t n = HDR_FIXED + (size_t)t->n_buffers;
	int64_t hdr[HDR_FIXED + FTL_MAX_BUFFERS];
	void *saved = NULL;
	size_t saved_len = 0;
	if (rank == 0 && t->save) {
		saved_len = t->save(t->cb_ctx, NULL, 0);
		saved = saved_len ? malloc(saved_len) : NULL;
		if (saved_len && (!saved || t->save(t->cb_ctx, saved, saved_len) != saved_len)) {
			free(saved);
			return FTL_ERR_SYSTEM;
		}
	}
	hdr[0] = (int64_t)t->step;
	hdr[1] = (int64_t)t->data_epoch;
	hdr[2] = (int64_t)t->sample_pos;
	hdr[3] = (int64_t)saved_len;
	hdr[4] = (int64_t)t->job_id;
	for (int i = 0; i < t->n_buffers; i++)
		hdr[HDR_FIXED + i] = (int64_t)t->buffers[i].bytes;
	int64_t mine[HDR_FIXED + FTL_MAX_BUFFERS];
	memcpy(mine, hdr, n * sizeof(*hdr));
	ftl_err e = ftl_broadcast(a, hdr, n, FTL_I64, 0);
	for (int i = 0; e == FTL_OK && i < t->n_buffers; i++) {
		if (hdr[HDR_FIXED + i] != mine[HDR_FIXED + i]) {
			snprintf(t->last_error, sizeof(t->last_error),
				 "ftl: registered buffer %s is %lld bytes here but %lld on rank 0: every worker must "
				 "register the same buffers",
				 t->buffers[i].name, (long long)mine[HDR_FIXED + i], (long long)hdr[HDR_FIXED + i]);
			e = FTL_ERR_INVALID;
		}
	}
	if (e == FTL_OK)
		e = ftl_batch_check_against_rank0(a);
	for (int i = 0; e == FTL_OK && i < t->n_buffers; i++)
		e = bcast_bytes(a, t->buffers[i].ptr, t->buffers[i].bytes);
	if (e == FTL_OK && hdr[3] > 0) {
		if (rank != 0)
			saved = malloc((size_t)hdr[3]);
		e = saved ? bcast_bytes(a, saved, (size_t)hdr[3]) : FTL_ERR_SYSTEM;
		if (e == FTL_OK && rank != 0 && t->load)
			t->load(t->cb_ctx, saved, (size_t)hdr[3]);
	}
	free(saved);
	if (e == FTL_OK) {
		t->step = (uint64_t)hdr[0];
		t->data_epoch = (uint64_t)hdr[1];
		t->sample_pos = (uint64_t)hdr[2];
		t->job_id = (uint64_t)hdr[4];
		ftl_train_metrics_note_sync(t, (uint64_t)hdr[3]);
	}
	return e;
}
