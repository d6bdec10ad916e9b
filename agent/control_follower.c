/* A follower's bounded event backlog (control_follower.h). The ring holds the lines not yet written:
 * [head, head + count), of which the first in_write are in the write in flight. */
#include "control_follower.h"

#include <stdio.h>
#include <stdlib.h>

struct ftl_follower {
	uv_write_t req;                                      /* the one write in flight */
	shared_line *ring[FTL_CONTROL_FOLLOWER_BACKLOG + 1]; /* + 1: room for the final line */
	unsigned head, count;
	unsigned in_write;                                   /* lines of the write in flight; 0 when none */
	bool is_dropped;
};

enum { RING = FTL_CONTROL_FOLLOWER_BACKLOG + 1 };

ftl_follower *ftl_follower_new(void) { return calloc(1, sizeof(ftl_follower)); }

static void release_from(ftl_follower *f, unsigned first)
{
	for (unsigned i = first; i < f->count; i++)
		line_release(f->ring[(f->head + i) % RING]);
	f->count = first;
}

void ftl_follower_free(ftl_follower *f)
{
	if (!f)
		return;
	release_from(f, 0);
	free(f);
}

static shared_line *final_line(void)
{
	char error[200];
	snprintf(error, sizeof(error),
		 "dropped: this follower fell %d events behind (it did not read them); reconnect, and read "
		 "`ftlctl status` for what it missed",
		 FTL_CONTROL_FOLLOWER_BACKLOG);
	json_t *j = json_pack("{s:b, s:b, s:s}", "ok", 0, "dropped", 1, "error", error);
	shared_line *line = j ? line_from_json(j) : NULL;
	json_decref(j);
	return line;
}

ftl_follower_push ftl_follower_add(ftl_follower *f, shared_line *line)
{
	if (f->is_dropped)
		return FTL_FOLLOWER_IGNORED;
	if (f->count < FTL_CONTROL_FOLLOWER_BACKLOG) {
		line->refs++;
		f->ring[(f->head + f->count++) % RING] = line;
		return FTL_FOLLOWER_QUEUED;
	}
	f->is_dropped = true;
	release_from(f, f->in_write); /* what it would never read in time anyway */
	shared_line *last = final_line();
	if (!last)
		return FTL_FOLLOWER_FAILED;
	f->ring[(f->head + f->count++) % RING] = last;
	return FTL_FOLLOWER_DROPPED;
}

ftl_err ftl_follower_write(ftl_follower *f, uv_stream_t *stream, uv_write_cb cb)
{
	if (f->in_write || f->count == 0)
		return FTL_OK;
	uv_buf_t bufs[FTL_FOLLOWER_WRITE_LINES];
	unsigned n = f->count < FTL_FOLLOWER_WRITE_LINES ? f->count : FTL_FOLLOWER_WRITE_LINES;
	for (unsigned i = 0; i < n; i++) {
		shared_line *line = f->ring[(f->head + i) % RING];
		bufs[i] = uv_buf_init(line->data, (unsigned)line->len);
	}
	int rc = uv_write(&f->req, stream, bufs, n, cb);
	if (rc != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "control: cannot write to an event follower: %s", uv_strerror(rc));
	f->in_write = n;
	return FTL_OK;
}

void ftl_follower_write_done(ftl_follower *f)
{
	for (unsigned i = 0; i < f->in_write; i++)
		line_release(f->ring[(f->head + i) % RING]);
	f->head = (f->head + f->in_write) % RING;
	f->count -= f->in_write;
	f->in_write = 0;
}

bool ftl_follower_is_drained(const ftl_follower *f) { return f->is_dropped && f->count == 0; }
