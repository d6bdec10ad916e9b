/* harness: runs one comm test as N real processes on loopback, libuv-runner style: each rank is a forked
 * child with its own listening socket (bound to 127.0.0.1:0 by the parent before the fork, so ports never
 * collide), a hard time limit (alarm in the child, SIGKILL from the parent) and PR_SET_PDEATHSIG, so no
 * child outlives a failed or killed test. Children report to the parent through one pipe of fixed-size
 * records; the parent can kill -9 or SIGSTOP any rank. Shared by the tests and the benchmark. */
#ifndef FTL_TESTS_COMM_HARNESS_H
#define FTL_TESTS_COMM_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ftl/ftl.h"

#define HARNESS_MAX 16

/* How soon after a kill -9 every survivor must have seen its peer lost: 2 s. ThreadSanitizer's build allows
 * three times as long: its instrumentation slows every rank several times over (8 ranks on CI's 2 cores),
 * and that build is there to find races; the plain and ASan builds hold the 2 s promise. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HARNESS_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(HARNESS_UNDER_TSAN)
#define HARNESS_PEER_LOST_MS 6000
#else
#define HARNESS_PEER_LOST_MS 2000
#endif

/* What a child gets. */
struct harness_child {
	int rank;
	int n;
	int listen_fd;          /* this rank's listening socket, for every communicator it builds */
	char addrs[HARNESS_MAX][64]; /* every rank's address */
	int report_fd;          /* write struct harness_report here */
	void *arg;
	ftl_comm_peer_reset_cb peer_reset_cb; /* handed to every communicator harness_comm builds */
	void *peer_reset_arg;
	int stall_hint_ms;      /* ... and this (0: no stall hints) */
};

/* One record from a child: what happened, when (CLOCK_MONOTONIC ns, comparable across processes). */
struct harness_report {
	int rank;
	int kind;  /* test-defined */
	int err;   /* ftl_err or test-defined */
	int64_t t_ns;
	int64_t value;
};

typedef int (*harness_child_fn)(struct harness_child *child);

struct harness {
	int n;
	pid_t pids[HARNESS_MAX];
	int status[HARNESS_MAX]; /* waitpid status once reaped */
	bool is_reaped[HARNESS_MAX];
	int report_fd;           /* read end */
	int64_t deadline_ns;
};

int64_t harness_now_ns(void);

/* Forks n children running fn; the whole test must end within limit_s. 0, or -1 with a message. */
int harness_start(struct harness *h, int n, int limit_s, harness_child_fn fn, void *arg);

/* Reads one report; 0, or -1 when the time limit passes first or every child has gone. */
int harness_read(struct harness *h, struct harness_report *rep);

void harness_signal(struct harness *h, int rank, int sig);

/* Waits for every child (killing all at the time limit). Returns the number of children that did not exit
 * with status 0, not counting those in `killed` (a bitmask of ranks the test killed on purpose). */
int harness_wait(struct harness *h, uint32_t killed);

/* In a child: sends a report. */
void harness_report(struct harness_child *c, int kind, int err, int64_t value);

/* In a child: the config of the tcp communicator harness_comm builds (below); boot receives its bootstrap
 * text and must outlive the config (HARNESS_BOOT_MAX bytes are enough). */
#define HARNESS_BOOT_MAX (HARNESS_MAX * 64)
void harness_comm_config(struct harness_child *c, const int *members, int n_members, uint64_t comm_id, int timeout_ms,
			 struct ftl_comm_config *cfg, char *boot, size_t boot_len);

/* In a child: a tcp communicator over the ranks in members (old rank numbers, in order), built with this
 * child's listening socket. Returns NULL (and prints why) on failure. Plain tcp unless the environment
 * says FTL_COMM_SHM=auto (the tests of the tcp path stay on it; ctest runs them again with shared memory),
 * with FTL_COMM_SHM_SLOT_KB as the slot size when set. */
ftl_comm *harness_comm(struct harness_child *c, const int *members, int n_members, uint64_t comm_id,
		       int timeout_ms);

/* The same with the shared-memory settings given; with FTL_COMM_SHM_AUTO (and more than one member) it
 * fails unless the communicator really uses shared memory. */
ftl_comm *harness_comm_with(struct harness_child *c, const int *members, int n_members, uint64_t comm_id,
			     int timeout_ms, ftl_comm_shm_mode shm, size_t slot_bytes);

/* In a child: the communicator over all ranks. */
ftl_comm *harness_comm_all(struct harness_child *c, uint64_t comm_id, int timeout_ms);

/* Small helpers of the test programs: sleep, and malloc that exits 3 when memory runs out. */
void harness_sleep_ms(int ms);
void *harness_xmalloc(size_t n);

/* The blocking allreduce of one kind of the family (ftl_comm_allreduce): bf16 on the wire with residual (may
 * be NULL) as error feedback; the exact sum of n_rows rows of count floats, total_rows over the world. */
ftl_err harness_allreduce_bf16(ftl_comm *comm, const float *sendbuf, float *recvbuf, size_t count, ftl_reduce_op op,
			       float *residual);
ftl_err harness_allreduce_exact(ftl_comm *comm, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
				float *out);

#endif
