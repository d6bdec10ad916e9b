/* The public checkpoint reader (include/ftl/checkpoint.h): one verified image in memory and pointers into
 * it. A directory is read the way a resume reads it, newest first, skipping what does not verify, but with
 * no registered shape to match: the reader takes whatever program wrote the file. */
#include "ftl/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sized.h"
#include "checkpoint.h"

struct ftl_checkpoint_reader {
	ftl_ckpt_header h;
	uint8_t *image;                      /* the whole file, verified */
	char file[FTL_CKPT_PATH_MAX + 8];
};

static ftl_err open_file(const char *path, ftl_checkpoint_reader *r)
{
	snprintf(r->file, sizeof(r->file), "%s", path);
	return ftl_ckpt_read_file(path, NULL, &r->h, &r->image);
}

/* The newest file in dir that verifies; the reason names the newest one when none does. */
static ftl_err open_newest(const char *dir, ftl_checkpoint_reader *r)
{
	char(*names)[FTL_CKPT_NAME_MAX];
	size_t n;
	if (ftl_ckpt_list(dir, &names, &n) != FTL_OK)
		return ftl_diag_prefix("ftl: ");
	char newest_why[FTL_DIAG_MSG_MAX] = "";
	ftl_err err = FTL_ERR_INVALID;
	for (size_t i = 0; i < n && err; i++) {
		char path[FTL_CKPT_PATH_MAX + 8];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		err = open_file(path, r);
		if (err && i == 0)
			snprintf(newest_why, sizeof(newest_why), "%s: %s", path, ftl_diag_message());
	}
	free(names);
	if (n == 0)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl: no checkpoint in %s (files named ckpt-<step>-<job>.ftl)", dir);
	if (err)
		return ftl_diag_set(err, "ftl: none of the %zu checkpoint(s) in %s verifies; the newest, %s", n, dir,
				    newest_why);
	return FTL_OK;
}

ftl_err ftl_checkpoint_reader_new(const char *path, ftl_checkpoint_reader **out)
{
	*out = NULL;
	struct stat st;
	if (stat(path, &st) != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl: checkpoint %s: cannot open: %s", path, strerror(errno));
	ftl_checkpoint_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl: no memory for a checkpoint reader");
	ftl_err err;
	if (S_ISDIR(st.st_mode)) {
		err = open_newest(path, r);
	} else {
		err = open_file(path, r);
		if (err)
			ftl_diag_prefix("ftl: checkpoint %s: ", path);
	}
	if (err) {
		free(r);
		return err;
	}
	*out = r;
	return FTL_OK;
}

void ftl_checkpoint_reader_delete(ftl_checkpoint_reader *r)
{
	if (!r)
		return;
	free(r->image);
	free(r);
}

const char *ftl_checkpoint_reader_file(const ftl_checkpoint_reader *r) { return r->file; }

ftl_err ftl_checkpoint_reader_info(const ftl_checkpoint_reader *r, ftl_checkpoint_info *out)
{
	ftl_checkpoint_info full = {.step = r->h.step,
				     .data_epoch = r->h.data_epoch,
				     .sample_pos = r->h.sample_pos,
				     .view_epoch = r->h.view_epoch,
				     .world_size = r->h.world_size,
				     .n_buffers = r->h.n_buffers,
				     .job_id = r->h.job_id,
				     .state_bytes = r->h.save_len};
	return ftl_sized_out(&full, out, sizeof(full), sizeof(full), "ftl_checkpoint_info");
}

ftl_err ftl_checkpoint_reader_buffer(const ftl_checkpoint_reader *r, uint32_t i, const char **name, const void **data,
				     uint64_t *bytes)
{
	if (i >= r->h.n_buffers)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl: checkpoint %s has %u buffers, no buffer %u", r->file,
				    r->h.n_buffers, i);
	*name = r->h.names[i];
	*data = r->image + ftl_ckpt_payload_offset(&r->h, i);
	*bytes = r->h.sizes[i];
	return FTL_OK;
}

const void *ftl_checkpoint_reader_state(const ftl_checkpoint_reader *r, uint64_t *bytes)
{
	*bytes = r->h.save_len;
	return r->image + ftl_ckpt_payload_offset(&r->h, r->h.n_buffers);
}
