/* The training layer's asynchronous requests (collectives.c) with a hook run when one is consumed, for
 * work that must wait for the data to arrive: a compressed gradient allreduce (grad_bucket.c) widens the
 * bf16 result into the caller's floats there. */
#ifndef FTL_TRAIN_REQUESTS_H
#define FTL_TRAIN_REQUESTS_H

#include <stddef.h>

#include "ftl/execute.h"

/* Called once, when ftl_wait or ftl_test consumes the request, with its result (FTL_ERR_INVALID when it
 * was refused as older than the current communicator). */
typedef void (*ftl_request_done_cb)(void *arg, ftl_err result);

/* ftl_allreduce with a request (opts: the caller's, or NULL; the comm refuses a kind that cannot run
 * asynchronously), with done (may be NULL) called when the request is consumed. On failure *req is NULL
 * and done is not called. */
ftl_err ftl_request_allreduce(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype,
			      ftl_reduce_op op, const ftl_allreduce_opts *opts, ftl_request_done_cb done, void *done_arg,
			      ftl_request **req);

#endif
