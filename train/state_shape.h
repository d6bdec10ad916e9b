/* The job's shape: what every worker of a job must agree on before it may take part in a state sync —
 * the registered buffers (names, sizes in bytes, host or device memory, in registration order), the
 * backend, the sampler and the fixed global batch.
 *
 * Why a fixed-size table: rank 0 broadcasts its shape as the first words of every state sync. If its
 * length depended on the buffer count, a joiner registering one more buffer would call a broadcast of
 * another size, and the comm's mismatch check would fail every rank of the job (issue 24, item 1). At a
 * fixed size the broadcast always pairs; the joiner compares rank 0's table with its own, and a joiner that
 * differs is refused alone, with a sentence naming the first difference, before any collective whose size
 * depends on the state. O(FTL_MAX_BUFFERS^2) to compare, a few KB on the wire. */
#ifndef FTL_TRAIN_STATE_SHAPE_H
#define FTL_TRAIN_STATE_SHAPE_H

#include <stdint.h>

#include "state_registry.h"

#define FTL_SHAPE_NAME_WORDS 8 /* a buffer name: 64 bytes, NUL included */
#define FTL_SHAPE_BUFFER_WORDS (FTL_SHAPE_NAME_WORDS + 2)
#define FTL_SHAPE_FIXED_WORDS 9
#define FTL_SHAPE_WORDS (FTL_SHAPE_FIXED_WORDS + FTL_MAX_BUFFERS * FTL_SHAPE_BUFFER_WORDS)

/* Writes r's shape into words[FTL_SHAPE_WORDS] (unused buffer slots are zero). */
void ftl_shape_pack(const ftl_state_registry *r, int64_t *words);

/* FTL_OK when r has the shape rank 0 sent (rank0[FTL_SHAPE_WORDS]); otherwise FTL_ERR_REFUSED with one
 * sentence in the diag: "ftl: refused by the job: <the first difference>; ..." */
ftl_err ftl_shape_check(const ftl_state_registry *r, const int64_t *rank0);

#endif
