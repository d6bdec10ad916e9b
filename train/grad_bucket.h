/* grad_bucket: the checks behind FTL_COMM_COMPRESS, shared by the settings (training.c) and the buckets
 * (grad_bucket.c, the public API in ftl/gradient.h), and a bucket's allreduce for ftl_allreduce. */
#ifndef FTL_TRAIN_GRAD_BUCKET_H
#define FTL_TRAIN_GRAD_BUCKET_H

#include <stddef.h>

#include "ftl/execute.h"
#include "ftl/gradient.h"

/* FTL_OK when compress works with this backend and batch; else an error with the diag naming the settings and
 * the fix. */
ftl_err ftl_compress_check(ftl_compress compress, ftl_comm_backend backend, const ftl_batch_config *batch);

/* ftl_allreduce with opts->bucket = b (kind: the options' kind, which must be plain): blocking, or started
 * with a request when req is not NULL. */
ftl_err ftl_grad_bucket_allreduce(ftl_agent *a, ftl_grad_bucket *b, const void *sendbuf, void *recvbuf, size_t count,
				  ftl_dtype dtype, ftl_reduce_op op, ftl_allreduce_kind kind, ftl_request **req);

#endif
