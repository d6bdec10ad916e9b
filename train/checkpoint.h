/* Checkpoints: the job's state on disk, so that a job whose workers all died comes back at the step it
 * reached. The pieces, one file each:
 *  - checkpoint_format.c: the file image (header, registered buffers, save-callback bytes, BLAKE2b sum)
 *    as pure functions over memory: encode, seal, verify, shape check;
 *  - checkpoint_dir.c: file names (ckpt-<step, 20 digits>-<job id>.ftl, so name order is step order),
 *    listing, retention of a job's own files only, unfinished temp files;
 *  - checkpoint_read.c: one file read whole and verified (the resume's and the public reader's);
 *  - checkpoint_reader.c: the public reader (include/ftl/checkpoint.h): a file, or a directory's newest
 *    valid one, for programs outside a job (ftl.torch.load_checkpoint);
 *  - checkpoint_writer.c: the writer thread and its staging buffer; the training thread only copies the
 *    state into the staging buffer, the thread hashes, writes a temp file, fsyncs it, renames it, fsyncs
 *    the directory and only then deletes checkpoints older than the newest K;
 *  - checkpoint.c: the glue with the state registry (state_registry.h): stage the registered state after a
 *    step, resume from the newest file that verifies (or stop), the final checkpoint of a rank 0 that
 *    leaves, the status; it knows nothing of the agent or of ftl_execute;
 *  - checkpoint_leave.c: where leaving the cluster meets checkpoints (which thread, which rank).
 *
 * File image, format version 2 (all integers little-endian):
 *   0   8  magic "FTLCKPT\0"
 *   8   4  format version (FTL_CKPT_VERSION; version 1 files still load, see below)
 *  12   4  number of buffers N (<= FTL_MAX_BUFFERS)
 *  16   8  step (steps completed: the resumed job runs this step next)
 *  24   8  view epoch it was written in
 *  32   8  data epoch
 *  40   8  sample position
 *  48   4  world size of that view
 *  52   4  checksum kind: 1 BLAKE2b-256 (32 bytes), 2 XXH3-128 (16 bytes, the default)
 *  56   8  length of the save callback's bytes
 *  64   8  job id: random, drawn when a job starts with no checkpoint to resume, inherited on resume and
 *          by every rank through the state sync; retention deletes only files of its own job id
 *  72   8  reserved, 0
 *  80  72N per buffer: name (64 bytes, NUL-padded), size (8)
 *   .   .  the buffers' bytes in registration order, then the save callback's bytes
 *   .  16|32  the checksum of every byte before it (XXH3-128 in canonical, big-endian, form)
 * Version 1 (before job ids and XXH3): the fixed part ends at 64 (no job id, no reserved word), the
 * checksum kind word is 0 and means BLAKE2b-256. Such a file loads; it has job id 0, belongs to no job,
 * and is never deleted.
 *
 * Why XXH3 by default: the checksum guards against accidental damage (a torn write, a flipped bit on
 * disk), which a 128-bit non-cryptographic hash catches as surely as BLAKE2b, at ~18 GB/s instead of
 * ~0.8 GB/s: BLAKE2b was slower than the disk and set the checkpoint's speed. An unkeyed hash of either
 * kind stops no one who can rewrite the file; FTL_CHECKPOINT_CHECKSUM=blake2b remains for those who want
 * a cryptographic digest to compare against a copy kept elsewhere. */
#ifndef FTL_TRAIN_CHECKPOINT_H
#define FTL_TRAIN_CHECKPOINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kept_error.h"
#include "exec_machine.h"
#include "state_registry.h"

#define FTL_CKPT_MAGIC "FTLCKPT"
#define FTL_CKPT_VERSION 2u
#define FTL_CKPT_FIXED_BYTES 80u    /* version 2; version 1: FTL_CKPT_FIXED_BYTES_V1 */
#define FTL_CKPT_FIXED_BYTES_V1 64u
#define FTL_CKPT_ENTRY_BYTES 72u
#define FTL_CKPT_NAME_BYTES 64u
#define FTL_CKPT_SUM_MAX_BYTES 32u
/* The most a header can take: read this much to parse any file's header. */
#define FTL_CKPT_HEADER_MAX_BYTES (FTL_CKPT_FIXED_BYTES + FTL_MAX_BUFFERS * FTL_CKPT_ENTRY_BYTES)

/* ---- checkpoint_format.c ---- */

typedef enum ftl_ckpt_sum_kind {
	FTL_CKPT_SUM_NONE,      /* not a valid kind: version 1 files store 0 and mean BLAKE2b */
	FTL_CKPT_SUM_BLAKE2B,   /* BLAKE2b-256 (libsodium crypto_generichash), 32 bytes */
	FTL_CKPT_SUM_XXH3,      /* XXH3-128 (libxxhash), 16 bytes */
	FTL_CKPT_SUM_MAX
} ftl_ckpt_sum_kind;
extern const char *const ftl_ckpt_sum_kind_strs[FTL_CKPT_SUM_MAX];

typedef struct ftl_ckpt_header {
	uint32_t version;       /* FTL_CKPT_VERSION for files we write; 1 for old files */
	ftl_ckpt_sum_kind sum_kind;
	uint64_t job_id;        /* 0 for version 1 files */
	uint64_t step;
	uint64_t view_epoch;
	uint64_t data_epoch;
	uint64_t sample_pos;
	uint32_t world_size;
	uint32_t n_buffers;
	uint64_t save_len;
	char names[FTL_MAX_BUFFERS][FTL_CKPT_NAME_BYTES];
	uint64_t sizes[FTL_MAX_BUFFERS];
} ftl_ckpt_header;

/* Bytes before the payload, and of the whole file, for this header (its version, buffers, checksum). */
size_t ftl_ckpt_header_bytes(const ftl_ckpt_header *h);
uint64_t ftl_ckpt_file_bytes(const ftl_ckpt_header *h);
/* Where buffer i's bytes start in the image (i == n_buffers: where the save bytes start). */
uint64_t ftl_ckpt_payload_offset(const ftl_ckpt_header *h, uint32_t i);
/* Writes the header at the start of image (which has ftl_ckpt_file_bytes(h) bytes). */
void ftl_ckpt_encode_header(const ftl_ckpt_header *h, uint8_t *image);
/* Bytes of a checksum of this kind (0 for an invalid kind). */
size_t ftl_ckpt_sum_bytes(ftl_ckpt_sum_kind kind);
/* The checksum of data, ftl_ckpt_sum_bytes(kind) bytes into out. O(len): run it off the training thread. */
void ftl_ckpt_checksum(ftl_ckpt_sum_kind kind, const uint8_t *data, size_t len, uint8_t out[FTL_CKPT_SUM_MAX_BYTES]);
/* Writes the checksum of the kind in h into the image's last bytes (image has ftl_ckpt_file_bytes(h)). */
void ftl_ckpt_seal(const ftl_ckpt_header *h, uint8_t *image);
/* Reads a header (version 1 or 2) from the first `avail` bytes of a file of `file_len` bytes: magic,
 * version, checksum kind, counts, and that the file is exactly as long as the header says.
 * FTL_ERR_INVALID with the reason in the diag (the caller names the file). */
ftl_err ftl_ckpt_parse_header(const uint8_t *buf, size_t avail, uint64_t file_len, ftl_ckpt_header *h);
/* parse_header, then the checksum over the whole image. FTL_ERR_INVALID with the reason in the diag. */
ftl_err ftl_ckpt_verify(const uint8_t *image, size_t len, ftl_ckpt_header *h);
/* Whether a file's buffers (names and sizes, in order) are the ones registered (`mine`). FTL_ERR_INVALID with the reason in the diag. */
ftl_err ftl_ckpt_same_shape(const ftl_ckpt_header *file, const ftl_ckpt_header *mine);

/* ---- checkpoint_read.c ---- */

/* Reads the file at path whole into *image (malloc'd, ftl_ckpt_file_bytes(h) bytes) and verifies it:
 * header, length, checksum and, when mine is not NULL, the registered shape. An error with the reason in
 * the diag (the caller names the file); *image is NULL then. */
ftl_err ftl_ckpt_read_file(const char *path, const ftl_ckpt_header *mine, ftl_ckpt_header *h, uint8_t **image);

/* ---- checkpoint_dir.c ---- */

#define FTL_CKPT_DIR_MAX 256   /* sizeof(ftl_training_config.checkpoint_dir) */
#define FTL_CKPT_NAME_MAX 48   /* ckpt-<20 digits>-<16 hex digits>.ftl and its NUL */
#define FTL_CKPT_PATH_MAX (FTL_CKPT_DIR_MAX + FTL_CKPT_NAME_MAX)

/* ckpt-<step>-<job id>.ftl; job id 0 gives the version 1 name ckpt-<step>.ftl. */
void ftl_ckpt_file_name(uint64_t step, uint64_t job_id, char *out, size_t len);
/* Whether name is a finished checkpoint (either form); its step and job id (0: none) in the out params. */
bool ftl_ckpt_parse_file_name(const char *name, uint64_t *step, uint64_t *job_id);
/* The finished checkpoints in dir, newest first (names only, a malloc'd array); FTL_ERR_SYSTEM, with the
 * reason (dir named) in the diag, when dir cannot be read or out of memory (*names NULL then). */
ftl_err ftl_ckpt_list(const char *dir, char (**names)[FTL_CKPT_NAME_MAX], size_t *n);
/* Deletes all but the newest `keep` finished checkpoints of job `job_id` (never another job's, never one
 * without a job id); returns how many it deleted. */
int ftl_ckpt_retain(const char *dir, uint64_t job_id, int keep);
/* Deletes temp files left by writers that died mid-write; returns how many. */
int ftl_ckpt_remove_temps(const char *dir);
/* mkdir -p. An error with the reason in the diag (the caller names the setting). */
ftl_err ftl_ckpt_make_dir(const char *dir);

/* ---- checkpoint_writer.c ---- */

typedef enum ftl_ckpt_writer_state {
	FTL_CKPT_WRITER_IDLE,
	FTL_CKPT_WRITER_WRITING,
	FTL_CKPT_WRITER_FAILED,
	FTL_CKPT_WRITER_STATE_MAX
} ftl_ckpt_writer_state;
extern const char *const ftl_ckpt_writer_state_strs[FTL_CKPT_WRITER_STATE_MAX];

typedef struct ftl_ckpt_writer_stats {
	ftl_ckpt_writer_state state;
	ftl_kept_error last_error;      /* why the latest write failed (state FAILED) */
	bool has_last;                  /* a checkpoint became durable in this process */
	uint64_t last_step;
	char last_file[FTL_CKPT_PATH_MAX + 8];
	int64_t last_done_ms;           /* CLOCK_REALTIME, when it became durable */
	uint64_t written, skipped, failed;
	uint64_t last_bytes;
	int64_t last_write_us;          /* seal + write + fsync + rename + fsync dir */
	int64_t last_stall_us;          /* what the training thread paid: the staging copy */
} ftl_ckpt_writer_stats;

typedef struct ftl_ckpt_writer ftl_ckpt_writer;

/* Makes dir if missing and starts the thread (with every signal blocked). NULL with the reason in the diag. */
struct ftl_logger;
ftl_ckpt_writer *ftl_ckpt_writer_new(const char *dir, int keep, bool is_waiting, const struct ftl_logger *log);
/* Finishes a write in progress (it becomes durable), then stops the thread. */
void ftl_ckpt_writer_delete(ftl_ckpt_writer *w);
/* A staging buffer of `bytes` for the checkpoint of `step`, owned by the caller until submit or cancel.
 * NULL, with the reason in the diag and the log, when the previous write is still running in skip mode
 * (FTL_ERR_TIMEOUT: it did not finish before this checkpoint was due; counted) or out of memory
 * (FTL_ERR_SYSTEM); in wait mode it waits for the previous write instead. */
uint8_t *ftl_ckpt_writer_begin(ftl_ckpt_writer *w, uint64_t step, size_t bytes);
/* Asks the thread to have a staging buffer of at least `bytes` ready, its pages faulted in, before the
 * next begin (which waits for it if it is not done). Cheap to call every step. */
void ftl_ckpt_writer_reserve(ftl_ckpt_writer *w, size_t bytes);
/* Hands the filled buffer to the thread; stall_us is what staging cost the caller (for the log). */
void ftl_ckpt_writer_submit(ftl_ckpt_writer *w, int64_t stall_us);
void ftl_ckpt_writer_cancel(ftl_ckpt_writer *w, const char *why);
/* Waits until no write (or reservation) is in progress. */
void ftl_ckpt_writer_flush(ftl_ckpt_writer *w);
void ftl_ckpt_writer_get_stats(ftl_ckpt_writer *w, ftl_ckpt_writer_stats *out);
/* The job resumed from this file: it is the last checkpoint until the next one is written. */
void ftl_ckpt_writer_note_loaded(ftl_ckpt_writer *w, uint64_t step, const char *file, int64_t written_ms);

/* ---- checkpoint.c: with the state registry ---- */

typedef struct ftl_checkpoints {
	ftl_ckpt_writer *writer;           /* NULL: checkpoints are off */
	const ftl_training_config *cfg;    /* dir, every, keep, busy, fresh, checksum */
	const struct ftl_logger *log;      /* the agent's: where resumes, skips and writes are said */
} ftl_checkpoints;

/* From ftl_set_training: starts the writer when cfg->checkpoint_dir is set (cfg and log must outlive c). An
 * error with the reason in the diag. */
ftl_err ftl_checkpoint_setup(ftl_checkpoints *c, const ftl_training_config *cfg, const struct ftl_logger *log);
void ftl_checkpoint_teardown(ftl_checkpoints *c);
/* After a completed step on rank 0: stage the state for the writer when the step is due. */
void ftl_checkpoint_after_step(ftl_checkpoints *c, ftl_state_registry *r, uint64_t view_epoch, uint32_t world_size);
/* Rank 0 of a view with no live state: load the newest checkpoint that verifies and has the registered
 * shape into the registry (buffers, callbacks, step, sampler, job id; has_state), logging every file
 * skipped and why. FTL_OK when one loaded or there is none (a new job id then); an error, with its message
 * in the diag (directory, newest file, what differs, FTL_CHECKPOINT_FRESH), when the directory cannot be read
 * or none of its checkpoints loads, unless cfg->checkpoint_fresh. */
ftl_err ftl_checkpoint_resume(ftl_checkpoints *c, ftl_state_registry *r);
/* Rank 0 leaving: when the calling thread is the one that took this job's checkpoints and the state is
 * newer than the last checkpoint (of this process or on disk), writes one and waits until it is durable
 * (or failed: logged). No-op otherwise. */
void ftl_checkpoint_final(ftl_checkpoints *c, ftl_state_registry *r, uint64_t view_epoch, uint32_t world_size);
/* The hooks ftl_execute's state machine takes (exec_machine.h); ctx: an ftl_checkpoints. */
extern const ftl_exec_checkpoint_ops ftl_checkpoint_exec_ops;
/* checkpoint_leave.c: the agent is leaving; ftl_checkpoint_final when this worker was rank 0 of the view
 * it last stepped in. From ftl_execute (after it found the agent left) and ftl_agent_leave. */
struct ftl_agent;
void ftl_checkpoint_before_leaving(struct ftl_agent *a);
/* The "checkpoint" object of the status (null when checkpoints are off); any thread. */
json_t *ftl_checkpoint_status_json(ftl_checkpoints *c);

#endif
