/* comm_nccl_compress: the nccl backend's compressed allreduce kernels (comm_nccl_compress.cu): what
 * comm_compress.h does in host memory, on device memory, queued on a stream. Same results bit for bit. */
#ifndef FTL_COMM_NCCL_COMPRESS_H
#define FTL_COMM_NCCL_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = bf16(in[i] + residual[i]); residual[i] = what that rounding dropped (residual may be NULL).
 * Device pointers; queued on stream. The launch's error (the kernel's own come with the stream's). */
cudaError_t ftl_comm_cuda_compress_bf16(const float *in, float *residual, void *out, size_t n, cudaStream_t stream);

/* out[i] = f32(in[i]) / divisor (divisor > 1: avg). Device pointers; queued on stream. */
cudaError_t ftl_comm_cuda_expand_bf16(const void *in, float *out, size_t n, int divisor, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* FTL_COMM_NCCL_COMPRESS_H */
