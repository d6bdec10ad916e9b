/* grad_bucket: the checks behind FTL_COMM_COMPRESS, shared by the settings (training.c) and the buckets
 * (grad_bucket.c, the public API in ftl/gradient.h). */
#ifndef FTL_TRAIN_GRAD_BUCKET_H
#define FTL_TRAIN_GRAD_BUCKET_H

#include <stddef.h>

#include "ftl/execute.h"

/* FTL_OK when compress works with this backend and batch; else an error with the diag naming the settings and
 * the fix. */
ftl_err ftl_compress_check(ftl_compress compress, ftl_comm_backend backend, const ftl_batch_config *batch);

#endif
