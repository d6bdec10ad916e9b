/* The checkpoint writer: one thread and one staging buffer, so that a training step pays only for copying
 * its state into memory. The thread then makes the file durable and atomic:
 *   write .ckpt-<step>.tmp-<pid> chunk by chunk, asking the kernel to start writing each chunk back at once
 *   (sync_file_range), with the checksum computed alongside; append the checksum; fsync;
 *   rename to ckpt-<step>.ftl; fsync the directory; only then delete all but the newest `keep`.
 * A crash at any point leaves either the previous set of files or the new one, plus at most a temp that no
 * loader reads. A failed write (full disk, I/O error, no permission) removes its temp, is reported in the
 * log and the stats, and leaves every older checkpoint as it was; training goes on. Because the new file
 * is whole before an old one goes, the disk needs room for keep + 1 checkpoints: one that has room for
 * one but not two never gets a second, so a write that finds too little room fails before it starts (or
 * on ENOSPC) with the sizes and the free space in its message.
 * The file's name, checksum kind and job id come from the staged image's header: the writer writes
 * exactly what the training thread described.
 * While a write runs the staging buffer is the thread's: the next checkpoint is skipped (default) or waits
 * for it (is_waiting). Lock order: this writer's lock only; it never takes the agent's. */
#include "checkpoint.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/log.h"

/* Write granularity, and how often the kernel is told to start writing back. */
#define CHUNK_BYTES (8u << 20)
#define PAGE_STRIDE 4096u

const char *const ftl_ckpt_writer_state_strs[FTL_CKPT_WRITER_STATE_MAX] = {"idle", "writing", "failed"};

struct ftl_ckpt_writer {
	char dir[FTL_CKPT_DIR_MAX];
	int keep;
	bool is_waiting;                /* FTL_CHECKPOINT_BUSY=wait */
	const ftl_logger *log;          /* the agent's; it outlives the writer */
	pthread_t thread;
	pthread_mutex_t lock;           /* guards what follows */
	pthread_cond_t changed;
	bool is_stopping;
	bool is_staging;                /* the training thread is filling buf */
	bool has_job;                   /* buf is submitted and not yet written */
	bool is_reserving;              /* the thread is faulting in a buffer of want_cap (ftl_ckpt_writer_reserve) */
	size_t want_cap;
	uint8_t *buf;
	size_t cap;
	size_t len;
	uint64_t step;
	int64_t stall_us;
	ftl_ckpt_writer_stats stats;
};

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static ftl_err fail_io(const char *what, const char *path)
{
	return ftl_diag_set(FTL_ERR_SYSTEM, "%s %s: %s", what, path, strerror(errno));
}

/* The thin wrappers of write(2) below return 0, or -1 with errno (the caller names the file, and needs
 * ENOSPC to say how much room a checkpoint takes). */
static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Writes [off, off + n) of the image and asks the kernel to start writing it back (a hint: fsync decides). */
static int write_chunk(int fd, const uint8_t *image, size_t off, size_t n)
{
	if (write_all(fd, image + off, n) != 0)
		return -1;
	sync_file_range(fd, (off64_t)off, (off64_t)n, SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* XXH3 (~18 GB/s) hashes each chunk right after write() read it, while it is still in the cache: a few
 * percent of the write, and no second pass over the image competing for memory bandwidth. */
static int write_hashed_inline(int fd, const uint8_t *image, size_t body)
{
	XXH3_state_t *st = XXH3_createState();
	if (!st || XXH3_128bits_reset(st) != XXH_OK) {
		XXH3_freeState(st);
		errno = ENOMEM;
		return -1;
	}
	int rc = 0;
	for (size_t off = 0; off < body && rc == 0; off += CHUNK_BYTES) {
		size_t n = body - off < CHUNK_BYTES ? body - off : CHUNK_BYTES;
		rc = write_chunk(fd, image, off, n);
		if (rc == 0)
			XXH3_128bits_update(st, image + off, n);
	}
	XXH128_canonical_t sum; /* the stored form, as ftl_ckpt_checksum writes it */
	XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(st));
	XXH3_freeState(st);
	return rc == 0 ? write_all(fd, sum.digest, sizeof(sum.digest)) : -1;
}

/* BLAKE2b (~0.8 GB/s) is slower than the disk: it runs on a second thread while this one writes (the image
 * is all in memory, so neither waits for the other), and a checkpoint costs max(hash, write). */
typedef struct hash_job {
	ftl_ckpt_sum_kind kind;
	const uint8_t *data;
	size_t len;
	uint8_t sum[FTL_CKPT_SUM_MAX_BYTES];
} hash_job;

static void *hash_main(void *arg)
{
	hash_job *h = arg;
	ftl_ckpt_checksum(h->kind, h->data, h->len, h->sum);
	return NULL;
}

static int write_hashed_aside(int fd, ftl_ckpt_sum_kind kind, const uint8_t *image, size_t body)
{
	hash_job h = {.kind = kind, .data = image, .len = body};
	pthread_t hasher;
	bool is_threaded = pthread_create(&hasher, NULL, hash_main, &h) == 0; /* inherits our blocked signals */
	int rc = 0;
	for (size_t off = 0; off < body && rc == 0; off += CHUNK_BYTES)
		rc = write_chunk(fd, image, off, body - off < CHUNK_BYTES ? body - off : CHUNK_BYTES);
	int saved = errno;
	if (is_threaded)
		pthread_join(hasher, NULL);
	else
		hash_main(&h);
	errno = saved;
	return rc == 0 ? write_all(fd, h.sum, ftl_ckpt_sum_bytes(kind)) : -1;
}

/* Writes the image, then its checksum (the kind its header names). */
static int write_sealed(int fd, const ftl_ckpt_header *hdr, const uint8_t *image, size_t len)
{
	size_t body = len - ftl_ckpt_sum_bytes(hdr->sum_kind);
	if (hdr->sum_kind == FTL_CKPT_SUM_XXH3)
		return write_hashed_inline(fd, image, body);
	return write_hashed_aside(fd, hdr->sum_kind, image, body);
}

/* open + fsync(2); -1 with errno. */
static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* Bytes free to us on dir's file system; -1 when it cannot be asked. */
static int64_t free_bytes(const char *dir)
{
	struct statvfs fs;
	return statvfs(dir, &fs) == 0 ? (int64_t)((uint64_t)fs.f_bavail * fs.f_frsize) : -1;
}

/* The finished checkpoints in dir (any job's): how many, how many bytes. */
static void kept_files(const char *dir, size_t *n, uint64_t *bytes)
{
	char(*names)[FTL_CKPT_NAME_MAX];
	*bytes = 0;
	if (ftl_ckpt_list(dir, &names, n) != FTL_OK) {
		*n = 0;
		return;
	}
	for (size_t i = 0; i < *n; i++) {
		char path[FTL_CKPT_PATH_MAX + 8];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0)
			*bytes += (uint64_t)st.st_size;
	}
	free(names);
}

/* The message for a disk without room for one more checkpoint: the sizes, the free space, and why the
 * previous checkpoint's room does not count. */
static ftl_err fail_no_room(const ftl_ckpt_writer *w, uint64_t step, size_t len, int64_t avail)
{
	size_t n;
	uint64_t kept;
	kept_files(w->dir, &n, &kept);
	return ftl_diag_set(FTL_ERR_SYSTEM,
		 "no room for the checkpoint of step %llu in %s: it needs %.1f MiB, the file system has %.1f MiB free "
		 "beside the %zu checkpoint(s) already there (%.1f MiB); a checkpoint is written in full next to the "
		 "previous ones before the oldest is deleted, so the disk needs room for FTL_CHECKPOINT_KEEP + 1 = %d "
		 "checkpoints (%.1f MiB)",
		 (unsigned long long)step, w->dir, mib(len), avail < 0 ? -1.0 : mib((uint64_t)avail), n, mib(kept),
		 w->keep + 1, mib((uint64_t)len * (uint64_t)(w->keep + 1)));
}

/* temp, write, fsync, rename, fsync dir. An error with the reason in the diag; the temp is gone then. */
static ftl_err write_durably(const ftl_ckpt_writer *w, const ftl_ckpt_header *h, const uint8_t *image, size_t len,
			 char *final, size_t final_len)
{
	char name[FTL_CKPT_NAME_MAX], tmp[FTL_CKPT_PATH_MAX + 32];
	ftl_ckpt_file_name(h->step, h->job_id, name, sizeof(name));
	snprintf(final, final_len, "%s/%s", w->dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.ckpt-%llu.tmp-%ld", w->dir, (unsigned long long)h->step, (long)getpid());
	int64_t avail = free_bytes(w->dir);
	if (avail >= 0 && (uint64_t)avail < len)
		return fail_no_room(w, h->step, len, avail);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail_io("cannot create", tmp);
	const char *failed = NULL, *what = tmp; /* what failed, on which path; cause says why */
	if (write_sealed(fd, h, image, len) != 0)
		failed = "cannot write";
	else if (fsync(fd) != 0)
		failed = "cannot fsync";
	int cause = errno;
	if (close(fd) != 0 && !failed) {
		failed = "cannot close";
		cause = errno;
	}
	if (!failed && rename(tmp, final) != 0) {
		failed = "cannot rename to";
		what = final;
		cause = errno;
	}
	if (failed) {
		unlink(tmp);
		if (cause == ENOSPC)
			return fail_no_room(w, h->step, len, free_bytes(w->dir));
		errno = cause;
		return fail_io(failed, what);
	}
	if (fsync_dir(w->dir) != 0)
		return fail_io("cannot fsync the directory", w->dir);
	return FTL_OK;
}

static void write_job(ftl_ckpt_writer *w)
{
	uint64_t step = w->step;
	size_t len = w->len;
	char final[FTL_CKPT_PATH_MAX + 8];
	int64_t start = mono_us();
	ftl_ckpt_header h;
	int rc = ftl_ckpt_parse_header(w->buf, len, len, &h);
	if (rc == 0 && h.step != step)
		ftl_diag_set(FTL_ERR_INVALID, "another step in its header");
	if (rc != 0 || h.step != step) /* the training thread staged something other than it said */
		rc = ftl_diag_set(FTL_ERR_INVALID, "the staged image of step %llu is malformed: %s",
				  (unsigned long long)step, ftl_diag_message());
	else
		rc = write_durably(w, &h, w->buf, len, final, sizeof(final));
	int64_t took = mono_us() - start;
	int deleted = rc == 0 ? ftl_ckpt_retain(w->dir, h.job_id, w->keep) : 0;

	pthread_mutex_lock(&w->lock);
	ftl_ckpt_writer_stats *s = &w->stats;
	if (rc == 0) {
		s->state = FTL_CKPT_WRITER_IDLE;
		s->has_last = true;
		s->last_step = step;
		snprintf(s->last_file, sizeof(s->last_file), "%s", final);
		s->last_done_ms = wall_ms();
		s->written++;
		s->last_bytes = len;
		s->last_write_us = took;
		s->last_stall_us = w->stall_us;
	} else {
		s->state = FTL_CKPT_WRITER_FAILED;
		ftl_kept_error_from_diag(&s->last_error); /* read on other threads */
		s->failed++;
	}
	int64_t stall = w->stall_us;
	w->has_job = false;
	pthread_cond_broadcast(&w->changed);
	pthread_mutex_unlock(&w->lock);

	if (rc == 0) {
		double mb = (double)len / 1e6;
		ftl_log(w->log, FTL_LOG_INFO, "checkpoint", "checkpoint durable", FTL_F_UINT("step", step),
			FTL_F_STR("file", final), FTL_F_UINT("bytes", len), FTL_F_DOUBLE("took_ms", (double)took / 1000.0),
			FTL_F_DOUBLE("mb_per_s", took > 0 ? mb / ((double)took / 1e6) : 0.0),
			FTL_F_DOUBLE("stall_ms", (double)stall / 1000.0), FTL_F_INT("deleted", deleted));
	} else {
		ftl_log(w->log, FTL_LOG_ERROR, "checkpoint",
			FTL_MSG("checkpoint of step %llu failed: %s; training goes on and the older checkpoints are kept "
				"(check the disk behind FTL_CHECKPOINT_DIR)",
				(unsigned long long)step, ftl_diag_message()),
			FTL_F_UINT("step", step), FTL_F_STR("error", ftl_diag_message()));
	}
}

static bool wants_buffer(const ftl_ckpt_writer *w) { return w->want_cap > w->cap && !w->is_staging; }

/* Allocates and touches a staging buffer of want_cap, so that the first checkpoint's copy does not pay
 * for faulting its pages in (for 1 GB, several times the copy itself). Called and returns locked. */
static void reserve_locked(ftl_ckpt_writer *w)
{
	size_t want = w->want_cap;
	w->is_reserving = true;
	pthread_mutex_unlock(&w->lock);
	uint8_t *fresh = malloc(want);
	for (size_t i = 0; fresh && i < want; i += PAGE_STRIDE)
		((volatile uint8_t *)fresh)[i] = 0; /* a write per page faults it in (malloc+memset could become calloc) */
	pthread_mutex_lock(&w->lock);
	w->is_reserving = false;
	if (fresh) {
		free(w->buf);
		w->buf = fresh;
		w->cap = want;
	} else {
		w->want_cap = 0; /* begin will try again, and say so if it cannot */
	}
	pthread_cond_broadcast(&w->changed);
}

static void *writer_main(void *arg)
{
	ftl_ckpt_writer *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->has_job && !w->is_stopping && !wants_buffer(w))
			pthread_cond_wait(&w->changed, &w->lock);
		if (w->has_job) {
			pthread_mutex_unlock(&w->lock);
			write_job(w); /* buf, len and step are the thread's while has_job */
			pthread_mutex_lock(&w->lock);
		} else if (w->is_stopping) {
			break;
		} else {
			reserve_locked(w);
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

ftl_ckpt_writer *ftl_ckpt_writer_new(const char *dir, int keep, bool is_waiting, const ftl_logger *log)
{
	if (sodium_init() < 0) {
		ftl_diag_set(FTL_ERR_SYSTEM, "libsodium failed to initialise");
		return NULL;
	}
	if (ftl_ckpt_make_dir(dir) != FTL_OK) {
		ftl_diag_prefix("FTL_CHECKPOINT_DIR=%s: ", dir);
		return NULL;
	}
	ftl_ckpt_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		ftl_diag_set(FTL_ERR_SYSTEM, "out of memory starting the checkpoint writer");
		return NULL;
	}
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->keep = keep > 0 ? keep : 1;
	w->is_waiting = is_waiting;
	w->log = log;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->changed, NULL);
	/* The thread takes no signal: the program decides which of its threads handles SIGTERM and friends. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&w->thread, NULL, writer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		ftl_diag_set(FTL_ERR_SYSTEM, "cannot start the checkpoint writer thread: %s", strerror(rc));
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->changed);
		free(w);
		return NULL;
	}
	return w;
}

void ftl_ckpt_writer_delete(ftl_ckpt_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->is_stopping = true;
	pthread_cond_broadcast(&w->changed);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->changed);
	free(w->buf);
	free(w);
}

/* Skip mode: the previous write still runs. The reason goes to the diag and the log. */
static void skip(const ftl_ckpt_writer *w, uint64_t step, uint64_t busy_with)
{
	ftl_diag_set(FTL_ERR_TIMEOUT, "previous checkpoint (step %llu) still being written, skipping step %llu "
		     "(FTL_CHECKPOINT_BUSY=wait waits instead; a larger FTL_CHECKPOINT_EVERY gives the disk more time)",
		     (unsigned long long)busy_with, (unsigned long long)step);
	ftl_log(w->log, FTL_LOG_WARN, "checkpoint", ftl_diag_message(), FTL_F_UINT("step", step),
		FTL_F_UINT("writing", busy_with));
}

uint8_t *ftl_ckpt_writer_begin(ftl_ckpt_writer *w, uint64_t step, size_t bytes)
{
	pthread_mutex_lock(&w->lock);
	assert(!w->is_staging);
	if (w->has_job && !w->is_waiting) {
		uint64_t busy_with = w->step;
		w->stats.skipped++;
		pthread_mutex_unlock(&w->lock);
		skip(w, step, busy_with);
		return NULL;
	}
	while (w->has_job || w->is_reserving)
		pthread_cond_wait(&w->changed, &w->lock);
	if (bytes > w->cap) {
		free(w->buf); /* no realloc: the old contents are not worth copying */
		w->buf = malloc(bytes);
		w->cap = w->buf ? bytes : 0;
	}
	if (!w->buf) {
		pthread_mutex_unlock(&w->lock);
		ftl_diag_set(FTL_ERR_SYSTEM, "no memory for a %zu-byte checkpoint staging buffer; skipping step %llu", bytes,
			     (unsigned long long)step);
		ftl_log(w->log, FTL_LOG_ERROR, "checkpoint", ftl_diag_message(), FTL_F_UINT("step", step),
			FTL_F_UINT("bytes", bytes));
		return NULL;
	}
	w->is_staging = true;
	w->step = step;
	w->len = bytes;
	pthread_mutex_unlock(&w->lock);
	return w->buf;
}

void ftl_ckpt_writer_reserve(ftl_ckpt_writer *w, size_t bytes)
{
	pthread_mutex_lock(&w->lock);
	if (bytes > w->want_cap && bytes > w->cap) {
		w->want_cap = bytes;
		pthread_cond_broadcast(&w->changed);
	}
	pthread_mutex_unlock(&w->lock);
}

void ftl_ckpt_writer_submit(ftl_ckpt_writer *w, int64_t stall_us)
{
	pthread_mutex_lock(&w->lock);
	w->is_staging = false;
	w->has_job = true;
	w->stall_us = stall_us;
	w->stats.state = FTL_CKPT_WRITER_WRITING;
	pthread_cond_broadcast(&w->changed);
	pthread_mutex_unlock(&w->lock);
}

void ftl_ckpt_writer_cancel(ftl_ckpt_writer *w, const char *why)
{
	pthread_mutex_lock(&w->lock);
	w->is_staging = false;
	w->stats.failed++;
	uint64_t step = w->step;
	pthread_mutex_unlock(&w->lock);
	ftl_log(w->log, FTL_LOG_ERROR, "checkpoint",
		FTL_MSG("checkpoint of step %llu not written: %s", (unsigned long long)step, why), FTL_F_UINT("step", step),
		FTL_F_STR("why", why));
}

void ftl_ckpt_writer_flush(ftl_ckpt_writer *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->has_job || w->is_reserving || wants_buffer(w))
		pthread_cond_wait(&w->changed, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void ftl_ckpt_writer_get_stats(ftl_ckpt_writer *w, ftl_ckpt_writer_stats *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->stats;
	pthread_mutex_unlock(&w->lock);
}

void ftl_ckpt_writer_note_loaded(ftl_ckpt_writer *w, uint64_t step, const char *file, int64_t written_ms)
{
	pthread_mutex_lock(&w->lock);
	w->stats.has_last = true;
	w->stats.last_step = step;
	snprintf(w->stats.last_file, sizeof(w->stats.last_file), "%s", file);
	w->stats.last_done_ms = written_ms;
	pthread_mutex_unlock(&w->lock);
}
