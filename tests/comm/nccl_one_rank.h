/* nccl_one_rank: what the one-GPU NCCL programs share (test_comm_nccl_cycles, bench/nccl): the skip when no
 * GPU is there, the host (tcp) communicator of a world of one that the rebuild's vote runs over, and the
 * device communicator's config with a fresh unique id, as the training layer builds them for a view. */
#ifndef FTL_TESTS_COMM_NCCL_ONE_RANK_H
#define FTL_TESTS_COMM_NCCL_ONE_RANK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "comm/comm.h"

#define NCCL_ONE_RANK_SKIP 77

/* A failed check: counted, printed with its place; the program goes on and exits 1 at the end. */
extern int nccl_one_rank_failures;
#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			nccl_one_rank_failures++;                                                \
		}                                                                                \
	} while (0)

/* Returns when NCCL and a CUDA device are usable; else prints why ("SKIP: ...") and exits 77. */
void nccl_one_rank_require_gpu(const char *program);

/* A tcp communicator of one rank (its calls copy locally), for ftl_comm_rebuild's vote. Exits 1 on failure. */
struct ftl_comm *nccl_one_rank_host(void);

/* The config of a one-rank nccl communicator named comm_id, its unique id fresh in id. Exits 1 on failure. */
struct ftl_comm_config nccl_one_rank_config(unsigned char id[FTL_COMM_NCCL_ID_LEN], uint64_t comm_id);

/* Waits (up to limit_ms) until every detached NCCL teardown has finished; the milliseconds it took, or -1. */
int64_t nccl_one_rank_drain_teardowns(int64_t limit_ms);

/* host's bytes copied to dev, and finished. A cudaMemcpy from pageable memory may return before its DMA has
 * written the device, and the communicator's stream (non-blocking) does not wait for the default stream: a
 * collective called next could read the buffer half written. The calls' contract (comm.h): the caller orders
 * what produced a buffer before the call. */
void nccl_one_rank_upload(void *dev, const void *host, size_t bytes);

/* Milliseconds since t0_ns on CLOCK_MONOTONIC, and that clock in ns. */
int64_t nccl_one_rank_now_ns(void);
double nccl_one_rank_ms_since(int64_t t0_ns);

#endif
