/* Gradient allreduces: the one collective of a training step that may be lossy. A gradient is noisy
 * already (a minibatch estimate), so carrying it as bf16 on the wire (half the bytes) costs the training
 * nothing measurable while halving the communication of a step bound by the network; the job turns it on
 * with FTL_COMM_COMPRESS (ftl_training_config.compress, ftl/execute.h). Everything else a job reduces
 * (loss and sample counts, state sync, the exact sum of reproducible mode) goes through the exact
 * collectives, which are never compressed.
 *
 * A bucket is one gradient buffer's companion (DDP's bucket): it holds the bf16 wire copy and, with error
 * feedback, the residual: what rounding dropped from this rank's input, added to the next step's input so
 * the rounding does not accumulate over steps (EF-SGD). The residual belongs to one communicator: when a
 * view change replaced it (a joiner, a leaver, a failed step run again), or the buffer's length changed,
 * the residual starts again from zero, so every rank of the new view starts alike and a step run again is
 * not fed the residual of its failed attempt.
 *
 * Error bound of a compressed sum or average, per element, against the exact f32 one of the same inputs:
 * (world_size + 1) * 2^-8 * sum over ranks of |input| (bf16's unit roundoff once for the input and once
 * per partial sum; FTL_ALLREDUCE_BF16, ftl/comm.h). With error feedback the input rounding of step t
 * is carried into step t+1 instead of lost, so over T steps the sum of what went on the wire differs from
 * the sum of the gradients by one residual, not T of them. */
#ifndef FTL_GRADIENT_H
#define FTL_GRADIENT_H

#include <stddef.h>

#include "ftl/export.h"

#include "ftl/comm.h"
#include "ftl/execute.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ftl_grad_bucket ftl_grad_bucket;

/* A bucket for one gradient buffer. compress: FTL_COMPRESS_DEFAULT for the job's FTL_COMM_COMPRESS, or a
 * mode of its own. NULL with the reason in ftl_last_error: compression under the nccl backend (the
 * compressed allreduce is host memory, tcp only) or in reproducible mode (FTL_REPRODUCIBLE=1 promises
 * exact sums), out of memory. Call after ftl_set_training. */
FTL_API ftl_grad_bucket *ftl_grad_bucket_new(ftl_agent *a, ftl_compress compress);
/* Frees it; NULL is fine. Only once no request made with it is outstanding. */
FTL_API void ftl_grad_bucket_delete(ftl_grad_bucket *b);
/* The mode the bucket uses (never FTL_COMPRESS_DEFAULT). */
FTL_API ftl_compress ftl_grad_bucket_compress(const ftl_grad_bucket *b);

/* A gradient allreduce is ftl_allreduce (ftl/execute.h) with opts->bucket set to the buffer's bucket: f32,
 * op FTL_SUM or FTL_AVG, on the current view's communicator inside a step, compressed as the bucket says
 * (with FTL_COMPRESS_OFF it is a plain f32 allreduce). Use one bucket per buffer, every step. With a req it
 * starts at once (ftl_allreduce's asynchronous rules), and ftl_wait or ftl_test, consuming the request,
 * widens the result into recvbuf; one request per bucket at a time. */

#ifdef __cplusplus
}
#endif

#endif
