/* A comm double for the training layer's tests: a communicator (comm.h's seam) that moves no bytes and
 * records what it is handed. Pointers into fake_device_memory count as device memory, every other pointer
 * as host memory, so a test registers "device" buffers there and checks which comm saw which kind. A test
 * may script the next call to fail. Broadcasts can go through a tape: the root's comms record what they
 * send, another rank's comms play it back into their buffers, as if rank 0 had sent it. */
#ifndef FTL_TESTS_TRAIN_FAKE_COMM_H
#define FTL_TESTS_TRAIN_FAKE_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

#define FAKE_DEVICE_BYTES 4096
extern unsigned char fake_device_memory[FAKE_DEVICE_BYTES];

#define FAKE_TAPE_MAX 64

typedef struct fake_tape {
	unsigned char *bytes[FAKE_TAPE_MAX];
	size_t len[FAKE_TAPE_MAX];
	int n, played;
} fake_tape;

typedef struct fake_comm {
	struct ftl_comm base;
	bool is_device;              /* a device comm (nccl's place): it must only see device pointers */
	int calls;                   /* collectives it ran */
	int host_pointers;           /* buffers it was handed, by kind */
	int device_pointers;
	ftl_err fail_next;           /* FTL_OK, or the error the next call returns (then it is broken) */
	int *destroyed;              /* incremented on destroy, when set */
	fake_tape *tape;             /* broadcasts: recorded on the root, played back on the others */
	int64_t peers_i64;           /* what the other ranks bring to an i64 MIN allreduce (state sync's "do you
				      * hold rank 0's state?"); 0, the default, is a joiner's no */
} fake_comm;

bool fake_is_device_pointer(const void *p);
/* A fake comm of `backend` (nccl: a device comm) for rank of world. */
fake_comm *fake_comm_new(ftl_comm_backend backend, int rank, int world);
void fake_tape_free(fake_tape *t);

#endif
