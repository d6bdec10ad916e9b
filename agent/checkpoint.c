/* Checkpoints and the registered state (see checkpoint.h for the pieces and the file layout).
 *
 * Save: after a completed step whose number is a multiple of FTL_CHECKPOINT_EVERY, rank 0 copies the
 * registered buffers and the save callback's bytes into the writer's staging buffer, behind the header;
 * that copy is all the step pays (the writer thread faults the buffer in during the steps before). Resume: rank 0 of a view in which nobody has live state (rank 0 is the
 * oldest survivor, so a rank 0 with no state means no member has any) loads the newest file that verifies,
 * then the ordinary state sync hands it to everyone. A file is read whole and verified before a single
 * byte of it reaches the registered state, so a bad file can only be skipped, never half-loaded. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int ftl_checkpoint_setup(ftl_training *t, char *err, size_t err_len)
{
	ftl_checkpoint_teardown(t);
	if (!t->cfg.checkpoint_dir[0])
		return 0;
	t->ckpt = ftl_ckpt_writer_new(t->cfg.checkpoint_dir, t->cfg.checkpoint_keep, t->cfg.checkpoint_wait, err,
				      err_len);
	return t->ckpt ? 0 : -1;
}

void ftl_checkpoint_teardown(ftl_training *t)
{
	ftl_ckpt_writer_delete(t->ckpt);
	t->ckpt = NULL;
}

/* The registered buffers as a header (names and sizes), with the job position. */
static void header_of(const ftl_training *t, ftl_ckpt_header *h)
{
	memset(h, 0, sizeof(*h));
	h->step = t->step;
	h->data_epoch = t->data_epoch;
	h->sample_pos = t->sample_pos;
	h->n_buffers = (uint32_t)t->n_buffers;
	for (int i = 0; i < t->n_buffers; i++) {
		snprintf(h->names[i], sizeof(h->names[i]), "%s", t->buffers[i].name);
		h->sizes[i] = t->buffers[i].bytes;
	}
}

/* Room reserved for the save callback's bytes, which are known only when a checkpoint is due. */
#define SAVE_BYTES_SLACK (1u << 20)

void ftl_checkpoint_after_step(ftl_training *t, uint64_t view_epoch, uint32_t world_size)
{
	if (!t->ckpt || t->cfg.checkpoint_every <= 0)
		return;
	ftl_ckpt_header h;
	if (t->step % (uint64_t)t->cfg.checkpoint_every != 0) {
		header_of(t, &h); /* get the staging buffer ready while the steps that are not due run */
		ftl_ckpt_writer_reserve(t->ckpt, ftl_ckpt_file_bytes(&h) + SAVE_BYTES_SLACK);
		return;
	}
	int64_t start = mono_us();
	header_of(t, &h);
	h.view_epoch = view_epoch;
	h.world_size = world_size;
	h.save_len = t->save ? t->save(t->cb_ctx, NULL, 0) : 0;
	uint8_t *image = ftl_ckpt_writer_begin(t->ckpt, t->step, ftl_ckpt_file_bytes(&h));
	if (!image)
		return;
	ftl_ckpt_encode_header(&h, image);
	char why[256];
	for (uint32_t i = 0; i < h.n_buffers; i++) {
		if (ftl_buffer_copy_out(&t->buffers[i], image + ftl_ckpt_payload_offset(&h, i), why, sizeof(why)) != 0) {
			ftl_ckpt_writer_cancel(t->ckpt, why);
			return;
		}
	}
	if (h.save_len) {
		size_t got = t->save(t->cb_ctx, image + ftl_ckpt_payload_offset(&h, h.n_buffers), h.save_len);
		if (got != h.save_len) {
			snprintf(why, sizeof(why), "the save callback wrote %zu bytes after asking for %llu", got,
				 (unsigned long long)h.save_len);
			ftl_ckpt_writer_cancel(t->ckpt, why);
			return;
		}
	}
	ftl_ckpt_writer_submit(t->ckpt, mono_us() - start);
}

static int read_at(int fd, uint8_t *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t k = pread(fd, buf, len, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		buf += k;
		len -= (size_t)k;
		off += k;
	}
	return 0;
}

/* Reads and verifies one file against the registered shape; *image (malloc'd) holds it on success. */
static int read_verified(const char *path, const ftl_ckpt_header *mine, ftl_ckpt_header *h, uint8_t **image,
			 char *why, size_t why_len)
{
	*image = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(why, why_len, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	uint8_t head[FTL_CKPT_FIXED_BYTES + FTL_MAX_BUFFERS * FTL_CKPT_ENTRY_BYTES];
	size_t avail = (uint64_t)st.st_size < sizeof(head) ? (size_t)st.st_size : sizeof(head);
	int rc = -1;
	if (read_at(fd, head, avail, 0) != 0)
		snprintf(why, why_len, "cannot read: %s", strerror(errno));
	else if (ftl_ckpt_parse_header(head, avail, (uint64_t)st.st_size, h, why, why_len) == 0 &&
		 ftl_ckpt_same_shape(h, mine, why, why_len) == 0) {
		*image = malloc((size_t)st.st_size);
		if (!*image)
			snprintf(why, why_len, "no memory to read %lld bytes", (long long)st.st_size);
		else if (read_at(fd, *image, (size_t)st.st_size, 0) != 0)
			snprintf(why, why_len, "cannot read: %s", strerror(errno));
		else
			rc = ftl_ckpt_verify(*image, (size_t)st.st_size, h, why, why_len);
	}
	close(fd);
	if (rc != 0) {
		free(*image);
		*image = NULL;
	}
	return rc;
}

/* Puts a verified image into the registered state. */
static int apply(ftl_training *t, const ftl_ckpt_header *h, const uint8_t *image, char *why, size_t why_len)
{
	for (uint32_t i = 0; i < h->n_buffers; i++)
		if (ftl_buffer_copy_in(&t->buffers[i], image + ftl_ckpt_payload_offset(h, i), why, why_len) != 0)
			return -1;
	if (t->load && h->save_len)
		t->load(t->cb_ctx, image + ftl_ckpt_payload_offset(h, h->n_buffers), h->save_len);
	t->step = h->step;
	t->data_epoch = h->data_epoch;
	t->sample_pos = h->sample_pos;
	return 0;
}

static void log_skip(const char *path, const char *why)
{
	char fields[FTL_CKPT_PATH_MAX + 64];
	snprintf(fields, sizeof(fields), "file=%s", path);
	ftl_log(FTL_LOG_WARN, "checkpoint", fields, "skipping checkpoint %s: %s", path, why);
}

static bool load_one(ftl_training *t, const char *path, const ftl_ckpt_header *mine)
{
	int64_t start = mono_us();
	ftl_ckpt_header h;
	uint8_t *image;
	char why[256];
	if (read_verified(path, mine, &h, &image, why, sizeof(why)) != 0) {
		log_skip(path, why);
		return false;
	}
	int rc = apply(t, &h, image, why, sizeof(why));
	free(image);
	if (rc != 0) {
		log_skip(path, why);
		return false;
	}
	struct stat st;
	int64_t written_ms = stat(path, &st) == 0 ? (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 : 0;
	ftl_ckpt_writer_note_loaded(t->ckpt, h.step, path, written_ms);
	char fields[FTL_CKPT_PATH_MAX + 256];
	snprintf(fields, sizeof(fields), "file=%s step=%llu data_epoch=%llu sample_pos=%llu written_in_epoch=%llu took_ms=%.1f",
		 path, (unsigned long long)h.step, (unsigned long long)h.data_epoch, (unsigned long long)h.sample_pos,
		 (unsigned long long)h.view_epoch, (double)(mono_us() - start) / 1000.0);
	ftl_log(FTL_LOG_INFO, "checkpoint", fields, "resuming from checkpoint at step %llu", (unsigned long long)h.step);
	return true;
}

bool ftl_checkpoint_resume(ftl_training *t)
{
	if (!t->ckpt)
		return false;
	const char *dir = t->cfg.checkpoint_dir;
	int temps = ftl_ckpt_remove_temps(dir);
	if (temps)
		ftl_log(FTL_LOG_INFO, "checkpoint", NULL, "removed %d unfinished checkpoint temp file(s) from %s", temps, dir);
	char(*names)[FTL_CKPT_NAME_MAX];
	size_t n;
	if (ftl_ckpt_list(dir, &names, &n) != 0) {
		ftl_log(FTL_LOG_ERROR, "checkpoint", NULL, "cannot read FTL_CHECKPOINT_DIR=%s: %s; starting from the initial state",
			dir, strerror(errno));
		return false;
	}
	ftl_ckpt_header mine;
	header_of(t, &mine);
	size_t i = 0;
	bool is_loaded = false;
	for (; i < n && !is_loaded; i++) {
		char path[FTL_CKPT_PATH_MAX + 8];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		is_loaded = load_one(t, path, &mine);
	}
	free(names);
	if (!is_loaded && n == 0)
		ftl_log(FTL_LOG_INFO, "checkpoint", NULL, "no checkpoint in %s yet: starting from the initial state", dir);
	else if (!is_loaded)
		ftl_log(FTL_LOG_WARN, "checkpoint", NULL,
			"none of the %zu checkpoints in %s verifies (each skipped above): starting from the initial state", n,
			dir);
	return is_loaded;
}

json_t *ftl_checkpoint_status_json(ftl_training *t)
{
	if (!t->ckpt)
		return json_null();
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(t->ckpt, &s);
	char writer[sizeof(s.last_error) + 16];
	if (s.state == FTL_CKPT_WRITER_FAILED)
		snprintf(writer, sizeof(writer), "failed: %s", s.last_error);
	else
		snprintf(writer, sizeof(writer), "%s", ftl_ckpt_writer_state_strs[s.state]);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double age_s = (double)((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - s.last_done_ms) / 1000.0;
	return json_pack("{s:s, s:I, s:i, s:o, s:o, s:o, s:s, s:I, s:I, s:I}", "dir", t->cfg.checkpoint_dir, "every",
			 (json_int_t)t->cfg.checkpoint_every, "keep", t->cfg.checkpoint_keep, "last_step",
			 s.has_last ? json_integer((json_int_t)s.last_step) : json_null(), "last_file",
			 s.has_last ? json_string(s.last_file) : json_null(), "age_s",
			 s.has_last ? json_real(age_s) : json_null(), "writer", writer, "written", (json_int_t)s.written,
			 "skipped", (json_int_t)s.skipped, "failed", (json_int_t)s.failed);
}
