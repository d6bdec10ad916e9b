/* comm_shm: the collectives through shared memory, when every rank is on this host: a transport below the
 * tcp backend, which finds the ranks, chooses it and lends it what it needs (struct ftl_comm_shm_lender), then
 * sends its calls here. This file knows the communicator's core (comm.h), never the tcp backend.
 *   comm_shm_setup.c       who is local (host identity), the segment, the doorbells, attach and detach
 *   comm_shm_sync.c        the one synchronisation: arrive at a round and wait for everyone, or fail
 *   comm_shm_collectives.c allreduce, broadcast, allgather and barrier as rounds over the segment
 *
 * Scope: all or nothing. A communicator uses shared memory only when every rank is local; otherwise it is
 * the plain tcp backend (no hierarchical mix). The tcp connections are built first either way: they carry
 * the identity exchange and the setup (the lender's collectives), and then stay open as the liveness
 * channel (the lender's ring connections; see comm_shm_sync.c).
 *
 * The segment: a header (a sticky failure word), one control block per rank (its round counter, whether
 * it sleeps, the descriptor of its current call), then 2 x (n + 1) slots of slot_bytes: for each round
 * parity, one slot per rank (its contribution) and one result slot. Round g uses parity g & 1. The rule
 * that makes one barrier per round enough: data of round g is written after the wait of round g-1 and
 * read between the wait of round g and the arrival at round g+1, so nobody overwrites what someone may
 * still read. */
#ifndef FTL_COMM_SHM_H
#define FTL_COMM_SHM_H

#include <stdbool.h>
#include <stdint.h>

#include "comm.h"

#define FTL_COMM_SHM_WHY_MAX 160             /* why a communicator is not on shared memory, with its NUL */
#define FTL_COMM_SHM_WORLD_MAX 64            /* ranks on one host we share a segment with (fd passing) */
#define FTL_COMM_SHM_SLOT_DEFAULT (1u << 20)
/* Allreduce: every rank reduces the whole buffer up to here, beyond it each reduces 1/n (comm_shm_collectives.c).
 * Measured on the loaded 2-core host, bench_comm_tcp with FTL_COMM_SHM=auto and each way forced, median busbw
 * of 3 runs, GB/s (direct / sliced):
 *             16 KiB       64 KiB       256 KiB      1 MiB        4 MiB
 *   2 ranks   0.68 0.38    2.58 0.84    2.45 1.33    1.80 2.15    0.83 0.95
 *   4 ranks   0.32 0.06    0.75 0.42    0.93 0.13    0.45 0.60    0.43 0.52 */
#define FTL_COMM_SHM_DIRECT_MAX (256u << 10)

/* Why a rank will not share memory, whoever it shares a host with. */
enum ftl_comm_shm_refusal {
	FTL_COMM_SHM_WANTED,        /* it will */
	FTL_COMM_SHM_REFUSED_OFF,   /* FTL_COMM_SHM=off */
	FTL_COMM_SHM_REFUSED_NO_ID, /* it cannot read its identity, so nobody can know who is local */
	FTL_COMM_SHM_REFUSED_WORLD, /* more ranks than FTL_COMM_SHM_WORLD_MAX */
	FTL_COMM_SHM_REFUSAL_MAX
};

extern const char *const ftl_comm_shm_refusal_strs[FTL_COMM_SHM_REFUSAL_MAX];

/* What each rank tells the others at creation, over tcp, to decide whether all are local. */
struct ftl_comm_shm_identity {
	uint32_t magic;
	uint32_t refusal;    /* enum ftl_comm_shm_refusal: FTL_COMM_SHM_WANTED, or why not */
	uint64_t netns_ino;  /* /proc/self/ns/net: one network namespace = one host, one pod */
	uint64_t netns_dev;
	char boot_id[40];    /* /proc/sys/kernel/random/boot_id: tells hosts apart whose namespace inodes collide */
};

/* Pure: every rank wants shared memory and all have the same boot id and network namespace. When not, why
 * names the first rank that differs from rank 0 and how ("rank 2 is on another host"). */
bool ftl_comm_shm_is_all_local(const struct ftl_comm_shm_identity *ids, int n, char *why, size_t why_len);

/* The descriptor of a call, compared across ranks in its first round (mismatched collectives). */
struct ftl_comm_shm_call {
	uint32_t seq;
	uint32_t kind;
	uint32_t dtype;
	uint32_t op;
	int32_t root;
	uint32_t pad;
	uint64_t count;
};

struct ftl_comm_shm_ctl {
	_Atomic uint64_t arrived;            /* the last round this rank arrived at */
	_Atomic uint32_t is_sleeping;        /* it waits in poll(): ring its doorbell when arriving */
	uint32_t pad;
	struct ftl_comm_shm_call call[2];    /* by the parity of the call's first round */
} __attribute__((aligned(128)));

struct ftl_comm_shm_header {
	uint32_t magic;
	uint32_t world_size;
	uint64_t slot_bytes;
	_Atomic uint64_t failed; /* 0, or (ftl_err << 48 | origin << 24 | subject): set once, never cleared */
	char pad[104];
	struct ftl_comm_shm_ctl ctl[];
};

struct ftl_comm_shm {
	struct ftl_comm *comm; /* the communicator it carries: rank, world, deadline, failure, abort flag */
	const char (*addrs)[FTL_COMM_ADDR_MAX]; /* every rank's address, for messages (the lender's) */
	int wake_fd;           /* what ftl_comm_abort writes (the lender's) */
	struct ftl_comm_shm_header *hdr;
	size_t map_len;
	char *slots;           /* 2 * (n + 1) slots of slot_bytes */
	size_t slot_bytes;
	uint64_t round;        /* the last round we arrived at */
	uint32_t seq;          /* calls so far */
	int *doorbell;         /* every rank's eventfd; ours wakes us from poll() */
	int n_live;
	int live_fd[FTL_COMM_SHM_WORLD_MAX + 2]; /* connections whose end means a peer is gone ... */
	int live_rank[FTL_COMM_SHM_WORLD_MAX + 2]; /* ... and that peer; [0] and [1] are the lender's */
};

/* What the transport that found the ranks (tcp) lends shared memory: the communicator, the ranks'
 * addresses and the abort eventfd (kept, not owned), two connections whose end means a peer is gone
 * (kept, not owned), and two collectives over its connections for the setup's exchanges. */
struct ftl_comm_shm_lender {
	struct ftl_comm *comm;
	const char (*addrs)[FTL_COMM_ADDR_MAX];
	int wake_fd;
	int ring_fd[2], ring_rank[2];
	ftl_err (*broadcast)(struct ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root, bool held);
	ftl_err (*allgather)(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			     ftl_dtype dtype);
};

/* What the setup found, attached or not: for the lender's messages, its spin and its counters. */
struct ftl_comm_shm_outcome {
	char why[FTL_COMM_SHM_WHY_MAX]; /* not attached with more than one rank: why, the same on every rank */
	bool is_failed;                 /* ... because its setup failed, though every rank was local and wanted it */
	int n_host_ranks;               /* ranks on this host (same boot id), us included */
	int strangers;                  /* rank 0: connections to the setup's unix socket it dropped (another
	                                 * user, no proof, garbage, silence) */
};

/* Slot of rank (or n: the result) for round g. */
static inline char *ftl_comm_shm_slot(const struct ftl_comm_shm *s, int n, uint64_t g, int rank)
{
	return s->slots + ((size_t)(g & 1) * (size_t)(n + 1) + (size_t)rank) * s->slot_bytes;
}

/* comm_shm_setup.c: exchanges identities through the lender's collectives; when all ranks are local, builds
 * the segment and sets *out. Leaves *out NULL (outcome->why says why, the same on every rank) when any rank
 * cannot; fails only when the lender's exchange itself fails. */
ftl_err ftl_comm_shm_attach(const struct ftl_comm_shm_lender *lender, const struct ftl_comm_config *cfg,
			    struct ftl_comm_shm **out, struct ftl_comm_shm_outcome *outcome);
/* Unmaps and closes what the setup made (not what the lender lent); s may be NULL. */
void ftl_comm_shm_detach(struct ftl_comm_shm *s);
/* Every descriptor the setup made, to fn (what a forked child must close). */
void ftl_comm_shm_each_fd(const struct ftl_comm_shm *s, void (*fn)(int fd));

/* comm_shm_sync.c: one collective in progress. */
struct ftl_comm_shm_op {
	const char *what;
	int64_t deadline;
	struct ftl_comm_shm_call call;
	bool is_checked;  /* the descriptors were compared (after the first round) */
	int64_t stall_at; /* when the rank we wait on is hinted to the peer_reset hook (comm.h); INT64_MAX: never */
};

/* Starts a call: the deadline, and our descriptor where the others will read it. */
void ftl_comm_shm_begin(struct ftl_comm_shm *s, struct ftl_comm_shm_op *op, enum ftl_comm_call_kind kind,
			size_t count, ftl_dtype dtype, ftl_reduce_op rop, int root);

/* Arrives at the next round and waits until every rank has, or fails (peer gone, deadline, abort, another
 * rank's failure, mismatched calls). The failure is recorded, published to the other ranks, and sticky. */
ftl_err ftl_comm_shm_sync(struct ftl_comm_shm *s, struct ftl_comm_shm_op *op);

/* comm_shm_collectives.c: what the lender calls once shared memory is attached. */
ftl_err ftl_comm_shm_allreduce(struct ftl_comm_shm *s, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype, ftl_reduce_op op);
ftl_err ftl_comm_shm_broadcast(struct ftl_comm_shm *s, void *buf, size_t count, ftl_dtype dtype, int root,
			       bool held);
ftl_err ftl_comm_shm_allgather(struct ftl_comm_shm *s, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype);
ftl_err ftl_comm_shm_barrier(struct ftl_comm_shm *s);

#endif /* FTL_COMM_SHM_H */
