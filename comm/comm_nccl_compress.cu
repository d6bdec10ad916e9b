/* comm_nccl_compress: the CUDA kernels of the nccl backend's compressed allreduce. They call the very
 * rounding functions the host path uses (comm_reduce.h, compiled here as device functions), element by
 * element in the same order of operations (no fused multiply-add can form: there is no product), so a
 * one-rank allreduce on the GPU gives the host's bits and the error-feedback residual is the host's. */
#include "comm_nccl_compress.h"

#include "comm_reduce.h"

enum { THREADS = 256, BLOCKS_MAX = 4096 }; /* a grid-stride loop beyond that */

static unsigned blocks_for(size_t n)
{
	size_t b = (n + THREADS - 1) / THREADS;
	return (unsigned)(b < BLOCKS_MAX ? b : BLOCKS_MAX);
}

__global__ static void compress_kernel(const float *in, float *residual, uint16_t *out, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
		float y = residual != NULL ? in[i] + residual[i] : in[i];
		uint16_t h = ftl_comm_bf16_round(y);
		out[i] = h;
		if (residual != NULL)
			residual[i] = y - ftl_comm_bf16_widen(h);
	}
}

__global__ static void expand_kernel(const uint16_t *in, float *out, size_t n, int divisor)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
		float v = ftl_comm_bf16_widen(in[i]);
		out[i] = divisor > 1 ? v / (float)divisor : v;
	}
}

extern "C" cudaError_t ftl_comm_cuda_compress_bf16(const float *in, float *residual, void *out, size_t n,
						   cudaStream_t stream)
{
	compress_kernel<<<blocks_for(n), THREADS, 0, stream>>>(in, residual, (uint16_t *)out, n);
	return cudaGetLastError();
}

extern "C" cudaError_t ftl_comm_cuda_expand_bf16(const void *in, float *out, size_t n, int divisor,
						 cudaStream_t stream)
{
	expand_kernel<<<blocks_for(n), THREADS, 0, stream>>>((const uint16_t *)in, out, n, divisor);
	return cudaGetLastError();
}
