/* State sync: after a view change or a failed step, every member takes rank 0's state (state_sync.c). */
#ifndef FTL_TRAIN_STATE_SYNC_H
#define FTL_TRAIN_STATE_SYNC_H

#include <stdint.h>

#include "state_registry.h"

/* A view's communicators: `data` moves the registered buffers and the step's collectives (nccl: device
 * memory; tcp: host memory); `ctrl` is a host path for control data (headers, sizes, callback bytes, the
 * sampler position, the job id). Under tcp they are one communicator; under nccl ctrl is a tcp comm built
 * beside it over the members' data addresses. */
typedef struct ftl_comm_pair {
	ftl_comm *data;
	ftl_comm *ctrl;
} ftl_comm_pair;

/* Brings the registry to rank 0's state over c; `lineage` is the lineage this worker's state belongs to (the
 * last view it synced in; 0: none). When every rank already holds rank 0's state (the same step, position
 * and lineage) nothing more moves. On FTL_OK *moved holds the bytes taken (buffers and
 * callback bytes; 0 when none had to move); on an error the diag says what (a communicator's diagnostic). FTL_ERR_REFUSED (never on
 * rank 0): this worker's state or settings differ from rank 0's (state_shape.h); it has sent nothing since
 * the header and must leave the view, so that the others lose it as a peer and go on without it. */
ftl_err ftl_state_sync(ftl_state_registry *r, const ftl_comm_pair *c, int rank, uint64_t lineage, uint64_t *moved);

#endif
