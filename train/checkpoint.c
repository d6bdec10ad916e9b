/* Checkpoints and the registered state (see checkpoint.h for the pieces and the file layout).
 *
 * Save: after a completed step whose number is a multiple of FTL_CHECKPOINT_EVERY, rank 0 copies the
 * registered buffers and the save callback's bytes into the writer's staging buffer, behind the header;
 * that copy is all the step pays (the writer thread faults the buffer in during the steps before).
 *
 * Resume: rank 0 of a view in which nobody has live state (rank 0 is the oldest survivor, so a rank 0 with
 * no state means no member has any) loads the newest file that verifies and has the registered shape,
 * then the ordinary state sync hands it to everyone. A file is read whole and verified before a single
 * byte of it reaches the registered state, so a bad file can only be skipped, never half-loaded. When
 * the directory holds checkpoints and not one of them loads (another program's shape, all corrupt),
 * starting from step 0 would throw the job's progress away without a word, and its writes would then sit
 * beside files it cannot use: that is an error that stops the job, unless FTL_CHECKPOINT_FRESH=1 says to
 * start over. Either way no file is deleted: retention only ever removes files of this job's id.
 *
 * The job id: a rank 0 that starts with nothing to resume draws a random one; resuming takes the file's;
 * every other rank gets it with the state sync. So every checkpoint a job writes, whichever worker was
 * rank 0 and however often it was restarted, carries one id, and no other job's file does.
 *
 * Leaving: a rank 0 that leaves (ftl_agent_leave, `ftlctl leave`) with steps done since the last
 * checkpoint writes one more and waits for it (ftl_checkpoint_final). Only the thread that runs the steps
 * sees a consistent state, between steps; it is the thread that last took a checkpoint of this job. */
#include "checkpoint.h"

#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

/* The training this thread takes rank 0's checkpoints of (set by ftl_checkpoint_after_step): only that
 * thread may stage a final checkpoint, since only it knows no step is half way. */
static _Thread_local const ftl_checkpoints *stepping_here;

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

ftl_err ftl_checkpoint_setup(ftl_checkpoints *c, const ftl_training_config *cfg, const ftl_logger *log)
{
	ftl_checkpoint_teardown(c);
	c->cfg = cfg;
	c->log = log;
	if (!cfg->checkpoint_dir[0])
		return FTL_OK;
	c->writer = ftl_ckpt_writer_new(cfg->checkpoint_dir, cfg->checkpoint_keep, cfg->checkpoint_wait, log);
	return c->writer ? FTL_OK : ftl_diag_code();
}

void ftl_checkpoint_teardown(ftl_checkpoints *c)
{
	ftl_ckpt_writer_delete(c->writer);
	c->writer = NULL;
}

static uint64_t new_job_id(void)
{
	uint64_t id = 0;
	if (sodium_init() < 0)
		abort(); /* cannot happen once the writer started: it initialised libsodium */
	while (id == 0)
		randombytes_buf(&id, sizeof(id));
	return id;
}

/* The registered buffers as a header (names and sizes), with the job position. */
static void header_of(const ftl_checkpoints *c, const ftl_state_registry *r, ftl_ckpt_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = FTL_CKPT_VERSION;
	h->sum_kind = c->cfg->checkpoint_blake2b ? FTL_CKPT_SUM_BLAKE2B : FTL_CKPT_SUM_XXH3;
	h->job_id = r->job_id;
	h->step = r->step;
	h->data_epoch = r->data_epoch;
	h->sample_pos = r->sample_pos;
	h->n_buffers = (uint32_t)r->n_buffers;
	for (int i = 0; i < r->n_buffers; i++) {
		snprintf(h->names[i], sizeof(h->names[i]), "%s", r->buffers[i].name);
		h->sizes[i] = r->buffers[i].bytes;
	}
}

/* Room reserved for the save callback's bytes, which are known only when a checkpoint is due. */
#define SAVE_BYTES_SLACK (1u << 20)

/* Gives the staging buffer back after a failed copy (logged with the reason in the diag); returns err. */
static ftl_err cancel(ftl_checkpoints *c, ftl_err err)
{
	ftl_ckpt_writer_cancel(c->writer, ftl_diag_message());
	return err;
}

/* Copies the state into the writer's staging buffer and hands it over. An error, with the reason in the
 * diag and the log, when nothing was handed over (the writer is busy in skip mode, or a copy failed). */
static ftl_err stage(ftl_checkpoints *c, ftl_state_registry *r, uint64_t view_epoch, uint32_t world_size)
{
	int64_t start = mono_us();
	if (!r->job_id)
		r->job_id = new_job_id(); /* a job that never went through resume (tests, benchmarks) */
	ftl_ckpt_header h;
	header_of(c, r, &h);
	h.view_epoch = view_epoch;
	h.world_size = world_size;
	h.save_len = r->save ? r->save(r->cb_ctx, NULL, 0) : 0;
	uint8_t *image = ftl_ckpt_writer_begin(c->writer, r->step, ftl_ckpt_file_bytes(&h));
	if (!image)
		return ftl_diag_code();
	ftl_ckpt_encode_header(&h, image);
	for (uint32_t i = 0; i < h.n_buffers; i++) {
		ftl_err err = ftl_buffer_copy_out(&r->buffers[i], image + ftl_ckpt_payload_offset(&h, i));
		if (err)
			return cancel(c, err);
	}
	if (h.save_len) {
		size_t got = r->save(r->cb_ctx, image + ftl_ckpt_payload_offset(&h, h.n_buffers), h.save_len);
		if (got != h.save_len)
			return cancel(c, ftl_diag_set(FTL_ERR_INVALID, "the save callback wrote %zu bytes after asking "
						      "for %llu", got, (unsigned long long)h.save_len));
	}
	ftl_ckpt_writer_submit(c->writer, mono_us() - start);
	return FTL_OK;
}

void ftl_checkpoint_after_step(ftl_checkpoints *c, ftl_state_registry *r, uint64_t view_epoch, uint32_t world_size)
{
	if (!c->writer || c->cfg->checkpoint_every <= 0)
		return;
	stepping_here = c;
	if (r->step % (uint64_t)c->cfg->checkpoint_every != 0) {
		ftl_ckpt_header h;
		header_of(c, r, &h); /* get the staging buffer ready while the steps that are not due run */
		ftl_ckpt_writer_reserve(c->writer, ftl_ckpt_file_bytes(&h) + SAVE_BYTES_SLACK);
		return;
	}
	stage(c, r, view_epoch, world_size);
}

/* Whether this job's checkpoint of its current step is already on disk (written by an earlier rank 0). */
static bool is_on_disk(const ftl_checkpoints *c, const ftl_state_registry *r)
{
	char name[FTL_CKPT_NAME_MAX], path[FTL_CKPT_PATH_MAX + 8];
	ftl_ckpt_file_name(r->step, r->job_id, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", c->cfg->checkpoint_dir, name);
	return access(path, F_OK) == 0;
}

void ftl_checkpoint_final(ftl_checkpoints *c, ftl_state_registry *r, uint64_t view_epoch, uint32_t world_size)
{
	if (stepping_here != c || !c->writer || !r->has_state) /* the thread first: the rest is that thread's */
		return;
	ftl_ckpt_writer_flush(c->writer); /* a write in progress finishes first: its staging buffer is needed */
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(c->writer, &s);
	if ((s.has_last && s.last_step == r->step) || is_on_disk(c, r))
		return; /* nothing new since the last checkpoint */
	ftl_log(c->log, FTL_LOG_INFO, "checkpoint",
		FTL_MSG("leaving as rank 0: writing a final checkpoint of step %llu", (unsigned long long)r->step),
		FTL_F_UINT("step", r->step));
	if (stage(c, r, view_epoch, world_size) != FTL_OK)
		return;
	ftl_ckpt_writer_flush(c->writer);
	ftl_ckpt_writer_get_stats(c->writer, &s);
	if (s.state == FTL_CKPT_WRITER_IDLE && s.has_last && s.last_step == r->step)
		ftl_log(c->log, FTL_LOG_INFO, "checkpoint", FTL_MSG("final checkpoint durable before leaving: %s", s.last_file),
			FTL_F_UINT("step", r->step), FTL_F_STR("file", s.last_file));
	/* a failure was logged by the writer, with its reason */
}

/* Puts a verified image into the registered state; an error with the reason in the diag. */
static ftl_err apply(ftl_state_registry *r, const ftl_ckpt_header *h, const uint8_t *image)
{
	for (uint32_t i = 0; i < h->n_buffers; i++) {
		ftl_err err = ftl_buffer_copy_in(&r->buffers[i], image + ftl_ckpt_payload_offset(h, i));
		if (err)
			return err;
	}
	if (r->load && h->save_len)
		r->load(r->cb_ctx, image + ftl_ckpt_payload_offset(h, h->n_buffers), h->save_len);
	r->step = h->step;
	r->data_epoch = h->data_epoch;
	r->sample_pos = h->sample_pos;
	return FTL_OK;
}

static void log_skip(const ftl_checkpoints *c, const char *path, const char *why)
{
	ftl_log(c->log, FTL_LOG_WARN, "checkpoint", FTL_MSG("skipping checkpoint %s: %s", path, why), FTL_F_STR("file", path),
		FTL_F_STR("why", why));
}

/* Loads one file into the registered state; an error with the reason in the diag (the state is untouched
 * then). */
static ftl_err load_one(ftl_checkpoints *c, ftl_state_registry *r, const char *path, const ftl_ckpt_header *mine)
{
	int64_t start = mono_us();
	ftl_ckpt_header h;
	uint8_t *image;
	ftl_err err = ftl_ckpt_read_file(path, mine, &h, &image);
	if (err)
		return err;
	err = apply(r, &h, image);
	free(image);
	if (err)
		return err;
	r->job_id = h.job_id ? h.job_id : new_job_id(); /* a version 1 file belongs to no job: start one */
	struct stat st;
	int64_t written_ms = stat(path, &st) == 0 ? (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 : 0;
	ftl_ckpt_writer_note_loaded(c->writer, h.step, path, written_ms);
	ftl_log(c->log, FTL_LOG_INFO, "checkpoint", FTL_MSG("resuming from checkpoint at step %llu", (unsigned long long)h.step),
		FTL_F_STR("file", path), FTL_F_UINT("step", h.step), FTL_F_UINT("data_epoch", h.data_epoch),
		FTL_F_UINT("sample_pos", h.sample_pos), FTL_F_UINT("written_in_epoch", h.view_epoch),
		FTL_F_HEX("job", r->job_id), FTL_F_DOUBLE("took_ms", (double)(mono_us() - start) / 1000.0));
	return FTL_OK;
}

/* The resume cannot go on: the reason goes to the diag and the log. */
static ftl_err resume_failed(const ftl_checkpoints *c, ftl_err err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static ftl_err resume_failed(const ftl_checkpoints *c, ftl_err err, const char *fmt, ...)
{
	char text[FTL_DIAG_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	ftl_log(c->log, FTL_LOG_ERROR, "checkpoint", text, FTL_F_STR("dir", c->cfg->checkpoint_dir));
	return ftl_diag_set(err, "%s", text);
}

static void start_fresh(ftl_state_registry *r) { r->job_id = new_job_id(); }

ftl_err ftl_checkpoint_resume(ftl_checkpoints *c, ftl_state_registry *r)
{
	if (!c->writer) {
		start_fresh(r);
		return FTL_OK;
	}
	const char *dir = c->cfg->checkpoint_dir;
	int temps = ftl_ckpt_remove_temps(dir);
	if (temps)
		ftl_log(c->log, FTL_LOG_INFO, "checkpoint",
			FTL_MSG("removed %d unfinished checkpoint temp file(s) from %s", temps, dir), FTL_F_INT("removed", temps),
			FTL_F_STR("dir", dir));
	char(*names)[FTL_CKPT_NAME_MAX];
	size_t n;
	ftl_err err = ftl_ckpt_list(dir, &names, &n);
	if (err)
		return resume_failed(c, err, "ftl: %s (FTL_CHECKPOINT_DIR); not starting over without knowing what it "
				     "holds", ftl_diag_message());
	ftl_ckpt_header mine;
	header_of(c, r, &mine);
	char newest[FTL_CKPT_NAME_MAX] = "", newest_why[256] = "";
	bool is_loaded = false;
	for (size_t i = 0; i < n && !is_loaded; i++) {
		char path[FTL_CKPT_PATH_MAX + 8];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		is_loaded = load_one(c, r, path, &mine) == FTL_OK;
		if (is_loaded)
			break;
		log_skip(c, path, ftl_diag_message());
		if (i == 0) {
			snprintf(newest, sizeof(newest), "%s", names[i]);
			snprintf(newest_why, sizeof(newest_why), "%s", ftl_diag_message());
		}
	}
	free(names);
	if (is_loaded) {
		r->has_state = true;
		return FTL_OK;
	}
	if (n == 0) {
		ftl_log(c->log, FTL_LOG_INFO, "checkpoint",
			FTL_MSG("no checkpoint in %s yet: starting from the initial state", dir), FTL_F_STR("dir", dir));
	} else if (c->cfg->checkpoint_fresh) {
		ftl_log(c->log, FTL_LOG_WARN, "checkpoint",
			FTL_MSG("none of the %zu checkpoint(s) in %s can be loaded (the newest, %s: %s): starting from "
				"the initial state as FTL_CHECKPOINT_FRESH=1 asks; those files are kept",
				n, dir, newest, newest_why),
			FTL_F_STR("dir", dir), FTL_F_UINT("checkpoints", n), FTL_F_STR("newest", newest),
			FTL_F_STR("why", newest_why));
	} else {
		return resume_failed(c, FTL_ERR_INVALID,
				     "ftl: cannot resume: none of the %zu checkpoint(s) in FTL_CHECKPOINT_DIR=%s can be "
				     "loaded (each is logged above); the newest, %s: %s. Run the program that wrote "
				     "them, or set FTL_CHECKPOINT_FRESH=1 to start from the initial state (the files "
				     "are kept)",
				     n, dir, newest, newest_why);
	}
	start_fresh(r);
	return FTL_OK;
}

json_t *ftl_checkpoint_status_json(ftl_checkpoints *c)
{
	if (!c->writer)
		return json_null();
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(c->writer, &s);
	char writer[sizeof(s.last_error.message) + 16];
	if (s.state == FTL_CKPT_WRITER_FAILED)
		snprintf(writer, sizeof(writer), "failed: %s", s.last_error.message);
	else
		snprintf(writer, sizeof(writer), "%s", ftl_ckpt_writer_state_strs[s.state]);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double age_s = (double)((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - s.last_done_ms) / 1000.0;
	return json_pack("{s:s, s:I, s:i, s:o, s:o, s:o, s:s, s:I, s:I, s:I}", "dir", c->cfg->checkpoint_dir, "every",
			 (json_int_t)c->cfg->checkpoint_every, "keep", c->cfg->checkpoint_keep, "last_step",
			 s.has_last ? json_integer((json_int_t)s.last_step) : json_null(), "last_file",
			 s.has_last ? json_string(s.last_file) : json_null(), "age_s",
			 s.has_last ? json_real(age_s) : json_null(), "writer", writer, "written", (json_int_t)s.written,
			 "skipped", (json_int_t)s.skipped, "failed", (json_int_t)s.failed);
}

static ftl_err exec_resume(void *ctx, ftl_state_registry *r)
{
	return ftl_checkpoint_resume(ctx, r);
}

static void exec_after_step(void *ctx, ftl_state_registry *r, uint64_t view_epoch, uint32_t world_size)
{
	ftl_checkpoint_after_step(ctx, r, view_epoch, world_size);
}

const ftl_exec_checkpoint_ops ftl_checkpoint_exec_ops = {.resume = exec_resume, .after_step = exec_after_step};
