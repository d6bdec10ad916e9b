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

static ftl_err copy(void *dst, const void *src, const ftl_buffer_reg *b, bool is_to_host)
{
	if (!b->is_device) {
		memcpy(dst, src, b->bytes);
		return FTL_OK;
	}
#ifdef FTL_HAVE_NCCL
	cudaError_t e = cudaMemcpy(dst, src, b->bytes, is_to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		return FTL_OK;
	return ftl_diag_set(FTL_ERR_BACKEND, "cudaMemcpy of device buffer '%s' (%zu bytes) failed: %s", b->name,
			    b->bytes, cudaGetErrorString(e));
#else
	return ftl_diag_set(FTL_ERR_UNSUPPORTED,
			    "buffer '%s' is registered as device memory but this build has no CUDA", b->name);
#endif
}

ftl_err ftl_buffer_copy_out(const ftl_buffer_reg *b, void *dst)
{
	return copy(dst, b->ptr, b, true);
}

ftl_err ftl_buffer_copy_in(const ftl_buffer_reg *b, const void *src)
{
	return copy(b->ptr, src, b, false);
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
