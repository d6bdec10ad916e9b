/* comm_tcp: the host backend's private types, shared by its files:
 *   comm_tcp.c             lifecycle: create, abort, destroy, the ops table
 *   comm_tcp_connect.c     bootstrap text, sockets and the ring handshake
 *   comm_tcp_engine.c      the pipelined stream engine: moves a plan of steps around the ring
 *   comm_tcp_spin.c        how long the engine spins before it sleeps in poll() (small-message latency)
 *   comm_tcp_collectives.c allreduce, broadcast, allgather and barrier as ring plans; the allreduce choice
 *   comm_tcp_doubling.c    allreduce by recursive doubling / halving over the mesh links (small, medium)
 * and below it, chosen here when every rank is local and lent what it needs:
 *   comm_shm*.c            the same collectives through shared memory (comm_shm.h)
 *
 * Topology: a ring. Rank r sends to next = r+1 and receives from prev = r-1 over two persistent TCP
 * connections. Data flows one way only; the other direction of each connection carries failure notices
 * upstream, so one rank that sees a failure tells the whole ring within a few hops.
 *
 * Beside the ring, a few mesh links: one two-way connection to each recursive-doubling partner (r xor 2^k
 * among the largest power of two of ranks, plus the fold partner of a non-power-of-two world), about
 * log2(n) per rank. They carry the latency-bound allreduces: log2(n) rounds instead of the ring's
 * 2(n-1) steps. Failure notices always travel on the ring, whatever algorithm is running. */
#ifndef FTL_COMM_TCP_H
#define FTL_COMM_TCP_H

#include <stdbool.h>
#include <stdint.h>

#include "comm.h"
#include "comm_reduce.h"
#include "comm_shm.h"

#define FTL_COMM_TCP_SEGMENT (256u << 10) /* bytes reduced at a time; a multiple of every dtype size */
#define FTL_COMM_TCP_STAGE (256u << 10)   /* the largest allreduce recursive doubling may carry */

/* One step of a plan: send a span to next and/or receive a span from prev. Sends go out in step order,
 * receives come in step order, and the two sides run concurrently, which is the pipeline. */
struct ftl_comm_tcp_step {
	const char *send;     /* span to send, or NULL */
	size_t send_len;
	int send_gate;        /* -1: send freely; else only the bytes of step send_gate's receive that have
	                       * landed (and been reduced): forwarding what just arrived */
	char *recv;           /* span to receive into, or NULL */
	size_t recv_len;
	const char *own;      /* NULL: receive straight into recv; else recv = own op incoming */
	bool is_incoming_first; /* reduce as incoming op own: the lower rank's operand goes first */
	bool is_final_reduce; /* FTL_AVG: divide what this step reduced by the world size */
};

/* The allreduce algorithms. comm_tcp_collectives.c picks one by size and world size (measured crossovers
 * there); tests and benchmarks may force one. */
enum ftl_comm_tcp_algo {
	FTL_COMM_TCP_ALGO_AUTO,
	FTL_COMM_TCP_ALGO_RING,     /* pipelined ring: bandwidth-optimal, 2(n-1) steps */
	FTL_COMM_TCP_ALGO_DOUBLING, /* recursive doubling: whole buffer each round, log2(n) rounds */
	FTL_COMM_TCP_ALGO_HALVING,  /* Rabenseifner: halving reduce-scatter + doubling all-gather */
	FTL_COMM_TCP_ALGO_MAX
};

extern const char *const ftl_comm_tcp_algo_strs[FTL_COMM_TCP_ALGO_MAX];

#define FTL_COMM_TCP_LINKS_MAX 17 /* log2(FTL_COMM_WORLD_MAX) doubling partners + a fold partner */

/* Who a rank talks to in recursive doubling/halving. The world folds onto p = the largest power of two
 * <= n: of the first 2(n-p) ranks, each even one hands its data to the odd one after it and sits out
 * until the result comes back. The p that remain are renumbered v = 0..p-1 and pair v with v xor 2^k. */
struct ftl_comm_tcp_doubling {
	int fold_peer;         /* -1, or the rank we fold with */
	bool is_folded_out;    /* we hand our data to fold_peer and wait for the result */
	int p;                 /* ranks taking part in the rounds */
	int n_rounds;          /* log2(p) */
	int partner[FTL_COMM_TCP_LINKS_MAX]; /* real rank of the partner in round k (distance 2^k) */
};

/* Pure: the schedule of rank r in a world of n. */
void ftl_comm_tcp_doubling_schedule(int n, int r, struct ftl_comm_tcp_doubling *out);

/* The collectives, as named in headers and messages. */
enum ftl_comm_tcp_kind {
	FTL_COMM_TCP_ALLREDUCE,
	FTL_COMM_TCP_BROADCAST,
	FTL_COMM_TCP_ALLGATHER,
	FTL_COMM_TCP_BARRIER,
	FTL_COMM_TCP_P2P,    /* one message of a point-to-point batch (comm_tcp_p2p.c) */
	FTL_COMM_TCP_KIND_MAX
};

extern const char *const ftl_comm_tcp_kind_strs[FTL_COMM_TCP_KIND_MAX];

/* Sent by each rank to next before a collective's data; prev's must equal ours, or the ranks are calling
 * different collectives and the streams would be garbage. */
struct ftl_comm_tcp_hdr {
	uint32_t magic;
	uint32_t seq;   /* collectives since creation */
	uint32_t kind;  /* which collective */
	uint32_t dtype;
	uint32_t op;
	int32_t root;
	uint64_t count;
};

struct ftl_comm_tcp_plan {
	struct ftl_comm_tcp_hdr hdr; /* kind, dtype, op, root, count, seq; the engine adds magic */
	int out_fd, out_rank;        /* where the steps send: next, or a mesh link */
	int in_fd, in_rank;          /* where they receive from: prev, or the same mesh link */
	const struct ftl_comm_tcp_step *steps;
	int n_steps;
	ftl_comm_reduce_fn reduce;  /* for steps with own != NULL */
	ftl_dtype dtype;
	size_t elem_size;
	int divisor;                /* > 1: FTL_AVG on is_final_reduce steps */
};

/* comm_tcp_spin.c: the engine's spin before poll(). */
#define FTL_COMM_TCP_SPIN_MAX_NS 100000 /* longest spin: a few round trips of a small collective */
#define FTL_COMM_TCP_SPIN_MIN_NS 10000  /* shortest, once spinning; also what a probe spins */
#define FTL_COMM_TCP_SPIN_PROBE 16      /* after a crowded spin, every 16th wait spins again */
#define FTL_COMM_TCP_YIELD_TAKEN_NS 10000 /* a sched_yield() that took longer ran another task */
/* Collectives up to this size spin; bigger ones stream for long enough that a wake-up is small change. */
#define FTL_COMM_TCP_SPIN_BYTES_MAX FTL_COMM_TCP_STAGE

enum ftl_comm_tcp_spin_outcome {
	FTL_COMM_TCP_SPIN_CAUGHT,  /* the awaited I/O came while spinning */
	FTL_COMM_TCP_SPIN_EXPIRED, /* the budget ran out: the engine sleeps in poll() */
	FTL_COMM_TCP_SPIN_CROWDED, /* another task took the CPU at a yield: the engine sleeps in poll() */
	FTL_COMM_TCP_SPIN_OUTCOME_MAX
};

struct ftl_comm_tcp_spin {
	int64_t budget_ns; /* how long the next wait spins; 0: sleep at once (crowded) */
	int n_slept;       /* waits that slept at once since the last spin: one in FTL_COMM_TCP_SPIN_PROBE probes */
};

/* n_ranks_here: the communicator's ranks on this host; n_cpus: the cores this process may run on. */
void ftl_comm_tcp_spin_init(struct ftl_comm_tcp_spin *s, int n_ranks_here, int n_cpus);
/* The spin for the next wait, in ns (0: sleep at once); counts the waits between probes. */
int64_t ftl_comm_tcp_spin_budget(struct ftl_comm_tcp_spin *s);
/* What the spin that ftl_comm_tcp_spin_budget allowed achieved. */
void ftl_comm_tcp_spin_record(struct ftl_comm_tcp_spin *s, enum ftl_comm_tcp_spin_outcome outcome);

/* A pair link of point-to-point (comm_tcp_p2p.c): one two-way connection to a peer, made on first use. */
struct ftl_comm_tcp_pair {
	int fd;            /* -1 until the pair first exchanges */
	uint32_t send_seq; /* messages sent to the peer so far */
	uint32_t recv_seq; /* messages received from it so far */
	bool is_fork_listed; /* fd is in base/fork_fds.h's list (a forked child closes it) */
};

struct ftl_comm_tcp {
	struct ftl_comm base;
	int next_fd;                   /* data out, notices in; -1 when alone */
	int prev_fd;                   /* data in, notices out; -1 when alone */
	int wake_fd;                   /* eventfd that ftl_comm_abort writes */
	uint32_t seq;                  /* next collective's sequence number */
	char (*addrs)[FTL_COMM_ADDR_MAX]; /* every rank's address, for diagnostics */
	struct ftl_comm_tcp_doubling dbl; /* our recursive-doubling schedule */
	int link_rank[FTL_COMM_TCP_LINKS_MAX]; /* mesh links: the peer's rank ... */
	int link_fd[FTL_COMM_TCP_LINKS_MAX];   /* ... and the two-way connection to it */
	int n_links;
	enum ftl_comm_tcp_algo forced;   /* AUTO unless a test or benchmark forces an algorithm */
	char *stage;                     /* FTL_COMM_TCP_STAGE bytes: what a doubling round sends */
	struct ftl_comm_tcp_step *steps; /* room for a plan: 2 * world_size steps */
	char *scratch;                 /* one segment: incoming data waiting to be reduced */
	struct ftl_comm_tcp_spin spin; /* the engine's spin before poll() */
	unsigned char notice_in[16];   /* a notice from next, possibly partial */
	size_t notice_in_len;
	struct ftl_comm_shm *shm;      /* every rank is local: the collectives go through shared memory
	                                * (comm_shm.h) and the sockets only tell who is alive; else NULL */
	struct ftl_comm_shm_outcome shm_outcome; /* what choosing it found (why not, ranks on this host) */
	int listen_fd;                 /* the caller's listener (cfg.listen_fd, not ours to close), or -1: where
	                                * pair links from lower ranks come in after creation */
	int user_timeout_ms;           /* TCP_USER_TIMEOUT of every connection */
	struct ftl_comm_tcp_pair *pairs; /* world_size pair links, NULL until the first one */
};

static inline int ftl_comm_tcp_next(const struct ftl_comm_tcp *t)
{
	return (t->base.rank + 1) % t->base.world_size;
}

static inline int ftl_comm_tcp_prev(const struct ftl_comm_tcp *t)
{
	return (t->base.rank + t->base.world_size - 1) % t->base.world_size;
}

/* Whether the collectives of this tcp communicator go through shared memory (for tests and benchmarks). */
bool ftl_comm_tcp_is_shm(const struct ftl_comm *comm);

/* Why a tcp communicator of several ranks is not on shared memory, for its builder to log ("rank 2 is on
 * another host", "rank 0 has FTL_COMM_SHM off", "rank 1 could not attach the segment: mmap: ..."); the same
 * text on every rank. NULL when it is on shared memory, has one rank, or is not a tcp communicator.
 * *is_failure (may be NULL): every rank was local and wanted it, but the setup failed. */
const char *ftl_comm_tcp_shm_why(const struct ftl_comm *comm, bool *is_failure);

/* Connections that rank 0 of a tcp communicator dropped while setting up shared memory (comm_shm_setup.c):
 * another user's, or ones that did not prove they belong to this communicator. 0 on other ranks. */
int ftl_comm_tcp_shm_strangers(const struct ftl_comm *comm);

/* comm_tcp_connect.c: parses cfg->bootstrap into t->addrs and connects the ring (next_fd, prev_fd),
 * within cfg->connect_timeout_ms. */
ftl_err ftl_comm_tcp_connect(struct ftl_comm_tcp *t, const struct ftl_comm_config *cfg);

/* comm_tcp_connect.c: the pair links to the n_peers peers that have none yet, within the deadline: dials
 * the higher ranks and accepts the lower ones on t->listen_fd (filing any other lower rank's pair link that
 * comes in meanwhile). FTL_ERR_UNSUPPORTED without a listener, when a lower rank is among them. */
ftl_err ftl_comm_tcp_connect_pairs(struct ftl_comm_tcp *t, const int *peers, int n_peers, int64_t deadline_ms);

/* comm_tcp_connect.c: t->pairs, allocated on first use; NULL when out of memory. */
struct ftl_comm_tcp_pair *ftl_comm_tcp_pairs(struct ftl_comm_tcp *t);

/* comm_tcp_p2p.c: the p2p op (ftl_comm_p2p's batch) of the tcp backend. */
ftl_err ftl_comm_tcp_p2p(struct ftl_comm *comm, const ftl_p2p_op *ops, int n_ops);

/* comm_tcp_engine.c: tells the ring of a failure seen here (a notice upstream) and, unless it is a timeout,
 * shuts every sending side (ring, mesh and pair links), so whoever waits on this rank learns at once. */
void ftl_comm_tcp_tell(struct ftl_comm_tcp *t, ftl_err err, int origin, int subject);

/* comm_tcp_engine.c: runs a plan to completion or to the first failure (reported by ftl_comm_fail and
 * passed on to the rest of the ring and the mesh links). */
ftl_err ftl_comm_tcp_run(struct ftl_comm_tcp *t, const struct ftl_comm_tcp_plan *plan);

/* comm_tcp_engine.c: a plan over the ring for one collective (a fresh sequence number), which the
 * collectives and the doubling rounds fill in with their steps. */
struct ftl_comm_tcp_plan ftl_comm_tcp_plan_init(struct ftl_comm_tcp *t, enum ftl_comm_tcp_kind kind, size_t count,
						ftl_dtype dtype);

/* comm_tcp_doubling.c: allreduce by recursive doubling (whole buffer per round; bytes <= FTL_COMM_TCP_STAGE)
 * or by halving/doubling, over the mesh links. */
ftl_err ftl_comm_tcp_allreduce_doubling(struct ftl_comm_tcp *t, const void *sendbuf, void *recvbuf, size_t count,
					ftl_dtype dtype, ftl_reduce_op op, bool is_halving);

/* A lookup: the mesh link to rank peer, or -1 when there is none. */
int ftl_comm_tcp_link_fd(const struct ftl_comm_tcp *t, int peer);

/* The allreduce algorithm for bytes in a world of n (the measured crossovers). */
enum ftl_comm_tcp_algo ftl_comm_tcp_choose(int n, size_t bytes);

/* Forces an allreduce algorithm (AUTO: choose by size); for tests and benchmarks. */
void ftl_comm_tcp_force_algo(struct ftl_comm *comm, enum ftl_comm_tcp_algo algo);

/* comm_tcp_collectives.c */
ftl_err ftl_comm_tcp_allreduce(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype, ftl_reduce_op op);
ftl_err ftl_comm_tcp_broadcast(struct ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root,
			       bool held);
ftl_err ftl_comm_tcp_allgather(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype);
ftl_err ftl_comm_tcp_barrier(struct ftl_comm *comm);

#endif /* FTL_COMM_TCP_H */
