/* Reading an ftl checkpoint outside a job: a program that converts it (ftl.torch.load_checkpoint makes a
 * PyTorch state dict of it), inspects it or copies the weights elsewhere. The library that writes the
 * files is the one that reads them, so no second parser of the format exists.
 *
 * A checkpoint holds the registered buffers by name (raw bytes, in registration order), the job position
 * (step, sampler position) and the bytes of the save callback (ftl_register_callbacks). Opening reads the
 * whole file into memory and verifies its length and checksum before any of it is handed out: a damaged
 * or truncated file is refused, never half-read. */
#ifndef FTL_CHECKPOINT_H
#define FTL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "ftl/error.h"
#include "ftl/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ftl_checkpoint_reader ftl_checkpoint_reader;

/* Set struct_size before the call (as ftl_job_status's, ftl/execute.h). */
typedef struct ftl_checkpoint_info {
	size_t struct_size;
	uint64_t step;        /* steps completed: a job resuming from it runs this step next */
	uint64_t data_epoch;  /* the sampler's position */
	uint64_t sample_pos;
	uint64_t view_epoch;  /* the view it was written in, and that view's size */
	uint32_t world_size;
	uint32_t n_buffers;
	uint64_t job_id;      /* 0 for a file of format version 1 */
	uint64_t state_bytes; /* length of the save callback's bytes */
} ftl_checkpoint_info;

/* Opens the checkpoint file at path, or, when path is a directory (FTL_CHECKPOINT_DIR), its newest
 * checkpoint that verifies (older ones are tried when newer ones do not). On failure *out is NULL and
 * ftl_error_message() names the file and the reason, e.g. "ftl: checkpoint /ck/ckpt-...ftl: checksum
 * mismatch (xxh3): the file is corrupt" (FTL_ERR_INVALID), or "cannot open" (FTL_ERR_SYSTEM). */
FTL_API ftl_err ftl_checkpoint_reader_new(const char *path, ftl_checkpoint_reader **out);
FTL_API void ftl_checkpoint_reader_delete(ftl_checkpoint_reader *r);
/* Before 0.4.5 (kept exported; the same calls): */
FTL_API ftl_err ftl_checkpoint_reader_open(const char *path, ftl_checkpoint_reader **out)
	FTL_DEPRECATED("ftl_checkpoint_reader_new");
FTL_API void ftl_checkpoint_reader_close(ftl_checkpoint_reader *r) FTL_DEPRECATED("ftl_checkpoint_reader_delete");
/* The file it read (within the directory, when a directory was given); valid until the reader is deleted. */
FTL_API const char *ftl_checkpoint_reader_file(const ftl_checkpoint_reader *r);
FTL_API ftl_err ftl_checkpoint_reader_info(const ftl_checkpoint_reader *r, ftl_checkpoint_info *out);
/* Buffer i (0 <= i < n_buffers): its registered name and its bytes, valid until close. FTL_ERR_INVALID for
 * an i out of range. */
FTL_API ftl_err ftl_checkpoint_reader_buffer(const ftl_checkpoint_reader *r, uint32_t i, const char **name,
					     const void **data, uint64_t *bytes);
/* The save callback's bytes (*bytes is 0 when there are none), valid until close. */
FTL_API const void *ftl_checkpoint_reader_state(const ftl_checkpoint_reader *r, uint64_t *bytes);

#ifdef __cplusplus
}
#endif

#endif /* FTL_CHECKPOINT_H */
