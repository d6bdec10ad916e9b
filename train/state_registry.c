/* Registration into the state registry and the sampler position (the why is in state_registry.h). */
#include "state_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "global_batch.h"

/* Which memory the backend moves: nccl broadcasts device memory in place, tcp reads host memory. CUDA is
 * asked about the pointer only in a job that uses it (nccl): under tcp that would make a CUDA context on
 * every GPU machine for nothing, and there the flag alone decides. */
static ftl_err check_memory_kind(const ftl_state_registry *r, const char *name, const void *ptr, bool is_device)
{
	int asked = ptr && r->backend == FTL_COMM_NCCL ? ftl_buffer_is_device_memory(ptr) : -1;
	bool is_on_device = asked < 0 ? is_device : asked == 1;
	if (asked >= 0 && is_on_device != is_device)
		return ftl_diag_set(FTL_ERR_INVALID,
				"ftl_register_buffer '%s': registered with is_device=%s but the pointer is %s memory "
				"(CUDA says so); pass is_device=%s", name, is_device ? "true" : "false",
				is_on_device ? "device" : "host", is_on_device ? "true" : "false");
	if (r->backend == FTL_COMM_NCCL && !is_on_device)
		return ftl_diag_set(FTL_ERR_INVALID,
				"ftl_register_buffer '%s': a host buffer under FTL_COMM=nccl; NCCL broadcasts device "
				"memory only: register the device copy (is_device=true), or use FTL_COMM=tcp", name);
	if (r->backend == FTL_COMM_TCP && is_on_device)
		return ftl_diag_set(FTL_ERR_INVALID,
				"ftl_register_buffer '%s': a device buffer under FTL_COMM=tcp; the tcp comm reads host "
				"memory only: use FTL_COMM=nccl for device state, or register a host copy", name);
	return FTL_OK;
}

/* Backs every page of a host buffer with memory now, its contents kept. A buffer that was allocated and
 * never written (calloc'd state, a spare's model before its first sync) would otherwise take its page faults
 * inside the state sync that fills it, on the critical path of every rank of the view: 100 MB on this 2-core
 * host took the sync from ~35 to ~80 ms. Best effort: a kernel before 5.14 has no MADV_POPULATE_WRITE, and
 * the faults then happen where they did. */
static void make_resident(void *ptr, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
	long page = sysconf(_SC_PAGESIZE);
	if (!ptr || !bytes || page <= 0)
		return;
	uintptr_t start = (uintptr_t)ptr & ~((uintptr_t)page - 1);
	(void)madvise((void *)start, (uintptr_t)ptr + bytes - start, MADV_POPULATE_WRITE);
#else
	(void)ptr;
	(void)bytes;
#endif
}

ftl_err ftl_state_register_buffer(ftl_state_registry *r, const char *name, void *ptr, size_t bytes, bool is_device)
{
	if (!name || !name[0])
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_register_buffer: the name is empty");
	if (!ptr && bytes)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_register_buffer '%s': NULL pointer for %zu bytes", name, bytes);
	if (r->n_buffers == FTL_MAX_BUFFERS)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_register_buffer '%s': already %d buffers registered, the most there "
				"can be (FTL_MAX_BUFFERS); register fewer, larger ones", name, FTL_MAX_BUFFERS);
	if (strlen(name) >= sizeof(r->buffers[0].name))
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_register_buffer '%s': the name is longer than %zu bytes", name,
				sizeof(r->buffers[0].name) - 1);
	ftl_err err = check_memory_kind(r, name, ptr, is_device);
	if (err)
		return err;
	if (is_device && bytes % 2)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_register_buffer '%s': a device buffer of %zu bytes; device buffers "
				"are broadcast in 2-, 4- or 8-byte words, so their size must be even", name, bytes);
	ftl_buffer_reg *b = &r->buffers[r->n_buffers++];
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->ptr = ptr;
	b->bytes = bytes;
	b->is_device = is_device;
	if (!is_device)
		make_resident(ptr, bytes);
	return FTL_OK;
}

ftl_err ftl_state_set_sampler(ftl_state_registry *r, uint64_t dataset_size, uint32_t batch_per_rank, uint64_t seed)
{
	if (dataset_size == 0 || batch_per_rank == 0)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_set_sampler: dataset_size (%llu) and batch_per_rank (%u) must be "
				"at least 1", (unsigned long long)dataset_size, batch_per_rank);
	uint64_t *idx = realloc(r->indices, batch_per_rank * sizeof(*idx));
	if (!idx)
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_set_sampler: out of memory for %u indices", batch_per_rank);
	r->indices = idx;
	r->indices_cap = batch_per_rank;
	r->dataset_size = dataset_size;
	r->batch_per_rank = batch_per_rank;
	r->sampler_seed = seed;
	return FTL_OK;
}

void ftl_state_advance(ftl_state_registry *r, int world)
{
	r->step++;
	r->has_state = true;
	ftl_batch_move(r, world, &r->data_epoch, &r->sample_pos);
}

uint64_t ftl_state_buffer_bytes(const ftl_state_registry *r)
{
	uint64_t bytes = 0;
	for (int i = 0; i < r->n_buffers; i++)
		bytes += r->buffers[i].bytes;
	return bytes;
}

void ftl_state_free(ftl_state_registry *r)
{
	free(r->indices);
	r->indices = NULL;
	r->indices_cap = 0;
	free(r->shares.w);
	r->shares = (ftl_batch_weights){0};
}
