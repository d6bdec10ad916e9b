/* Registered buffers and CUDA, the one file that asks the runtime: copies between a registered buffer and
 * host memory, for checkpoints (memcpy for host buffers, cudaMemcpy for device buffers when the build has
 * CUDA, the nccl backend), and what kind of memory a pointer is, for registration. A build without CUDA
 * cannot have device state (ftl_set_training refuses FTL_COMM=nccl there), so a device buffer is an error
 * then. */
#include "state_registry.h"

#include <stdio.h>
#include <string.h>

#ifdef FTL_HAVE_NCCL
#include <cuda_runtime.h>
#endif

static int copy(void *dst, const void *src, const ftl_buffer_reg *b, bool is_to_host, char *why, size_t why_len)
{
	if (!b->is_device) {
		memcpy(dst, src, b->bytes);
		return 0;
	}
#ifdef FTL_HAVE_NCCL
	cudaError_t e = cudaMemcpy(dst, src, b->bytes, is_to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		return 0;
	snprintf(why, why_len, "cudaMemcpy of device buffer '%s' (%zu bytes) failed: %s", b->name, b->bytes,
		 cudaGetErrorString(e));
#else
	snprintf(why, why_len, "buffer '%s' is registered as device memory but this build has no CUDA", b->name);
#endif
	return -1;
}

int ftl_buffer_copy_out(const ftl_buffer_reg *b, void *dst, char *why, size_t why_len)
{
	return copy(dst, b->ptr, b, true, why, why_len);
}

int ftl_buffer_copy_in(const ftl_buffer_reg *b, const void *src, char *why, size_t why_len)
{
	return copy(b->ptr, src, b, false, why, why_len);
}

int ftl_buffer_is_device_memory(const void *ptr)
{
#ifdef FTL_HAVE_NCCL
	struct cudaPointerAttributes attr;
	if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
		cudaGetLastError(); /* no driver or no device: clear the sticky error, and take the caller's word */
		return -1;
	}
	return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
#else
	return -1;
#endif
}
