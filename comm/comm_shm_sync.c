/* comm_shm_sync: the one synchronisation of the shared-memory collectives, and everything that makes it
 * end: a round completes when every rank's counter has reached it, or fails at once when a peer is gone,
 * at the call's deadline, on ftl_comm_abort, or when another rank published a failure.
 *
 * Waiting: spin a little (a round of a small collective takes microseconds), then yield, then sleep in
 * poll() on an eventfd doorbell. A rank that arrives rings the doorbells of the ranks whose is_sleeping
 * flag is set; the flag is set before the sleeper re-checks the counters and the counter is stored before
 * the arriver reads the flag, both sequentially consistent, so no wake-up is lost (the futex protocol,
 * with an eventfd so that the same poll() also watches what follows).
 *
 * Why the liveness channel is the sockets, not a robust futex or a pidfd: the same poll() that sleeps on
 * the doorbell watches the connections to peers (tcp next and prev, the unix socket to rank 0 or, on rank
 * 0, to every rank); the kernel closes them when a process dies, whatever killed it, so the death shows
 * as an event on an fd we already sleep on, with no timer. A robust futex only helps a waiter on a lock
 * the dead process held, and we wait on counters, not locks. A pidfd needs the peer's pid in our pid
 * namespace, which containers of one pod (shared network namespace, separate pid namespaces) do not
 * have. The connections exist anyway (setup and the tcp fallback need them) and cost nothing while idle.
 * Each death is seen by its ring neighbours and by rank 0 (or by everyone, when rank 0 dies); the first
 * to see it publishes it in the segment's failure word and rings every doorbell, so every rank that
 * waits fails at once, and one that arrives later fails at its next round. A stopped (SIGSTOP) peer
 * closes nothing: the waiters fail at the deadline, and the first publishes the timeout. An abort does
 * the same from our side (its eventfd is in the poll), so the peers fail at once too. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm_shm.h"

/* Measured on the 2-core host under load (bench_comm_tcp, FTL_COMM_SHM=auto, 2 and 4 ranks, 3 runs each):
 * 20000 spins before yielding was 5-10x slower than 400 at every size (a spinning rank holds the core its
 * peer needs), and 100 spins then up to 1000 yields was the best at 2 ranks (up to 2x over 400/64). A
 * yield costs a system call when the core is free (then it is spinning) and hands the core over when it
 * is not. About a millisecond of that, then sleep: a wake-up costs tens of microseconds. */
#define SPIN_CHECKS 100   /* counter checks before yielding */
#define YIELD_CHECKS 1000 /* sched_yield()s before sleeping */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static uint64_t failure_word(ftl_err err, int origin, int subject)
{
	return (uint64_t)err << 48 | (uint64_t)(uint32_t)origin << 24 | (uint64_t)(uint32_t)subject;
}

/* Writes our failure into the segment unless one is there already, and wakes every sleeper. */
static void publish(struct ftl_comm_shm *s, ftl_err err, int subject)
{
	uint64_t none = 0;
	atomic_compare_exchange_strong(&s->hdr->failed, &none, failure_word(err, s->comm->rank, subject));
	uint64_t one = 1;
	for (int j = 0; j < s->comm->world_size; j++)
		if (j != s->comm->rank)
			(void)!write(s->doorbell[j], &one, sizeof(one));
}

/* Another rank's failure, as our own error. */
static ftl_err published(struct ftl_comm_shm *s, const struct ftl_comm_shm_op *op, uint64_t word)
{
	ftl_err err = (ftl_err)(word >> 48);
	int origin = (int)((word >> 24) & 0xffffff), subject = (int)(word & 0xffffff), n = s->comm->world_size;
	if (origin >= n || subject >= n)
		return ftl_comm_fail(s->comm, FTL_ERR_INVALID, true, "%s: the shared segment's failure word is garbage",
				     op->what);
	switch (err) {
	case FTL_ERR_PEER_LOST:
		return ftl_comm_fail(s->comm, err, true, "peer rank %d (%s) lost during %s (seen by rank %d)", subject,
				     s->addrs[subject], op->what, origin);
	case FTL_ERR_TIMEOUT:
		return ftl_comm_fail(s->comm, err, true, "%s timed out on rank %d, which waited for rank %d (%s)",
				     op->what, origin, subject, s->addrs[subject]);
	case FTL_ERR_ABORTED:
		return ftl_comm_fail(s->comm, FTL_ERR_PEER_LOST, true, "rank %d (%s) aborted during %s", origin,
				     s->addrs[origin], op->what);
	default:
		return ftl_comm_fail(s->comm, FTL_ERR_INVALID, true, "rank %d (%s) failed %s: mismatched collectives",
				     origin, s->addrs[origin], op->what);
	}
}

static ftl_err peer_gone(struct ftl_comm_shm *s, const struct ftl_comm_shm_op *op, int peer)
{
	ftl_comm_fail(s->comm, FTL_ERR_PEER_LOST, true,
		      "peer rank %d (%s) lost during %s: its connection closed (the process died or gave up)", peer,
		      s->addrs[peer], op->what);
	if (s->comm->peer_reset_cb != NULL)
		s->comm->peer_reset_cb(s->comm->peer_reset_arg, peer, s->addrs[peer]);
	publish(s, FTL_ERR_PEER_LOST, peer);
	return FTL_ERR_PEER_LOST;
}

/* A lookup: the first rank that has not arrived at round g, or -1 when all have. */
static int first_behind(const struct ftl_comm_shm *s, int n, uint64_t g)
{
	for (int j = 0; j < n; j++)
		if (atomic_load(&s->hdr->ctl[j].arrived) < g)
			return j;
	return -1;
}

/* The call has waited past its stall time: the rank it waits on is hinted to the peer_reset hook, once (as
 * the tcp engine does: a stopped process sends nothing, and membership's probe is what ends the wait). */
static void hint_stall(struct ftl_comm_shm *s, struct ftl_comm_shm_op *op, uint64_t g, int64_t now)
{
	if (now < op->stall_at)
		return;
	op->stall_at = INT64_MAX;
	int behind = first_behind(s, s->comm->world_size, g);
	if (behind >= 0 && s->comm->peer_reset_cb != NULL)
		s->comm->peer_reset_cb(s->comm->peer_reset_arg, behind, s->addrs[behind]);
}

/* Sleeps until a doorbell, an abort, a connection event, the stall time or the deadline; FTL_OK to look
 * again. */
static ftl_err sleep_once(struct ftl_comm_shm *s, struct ftl_comm_shm_op *op, uint64_t g)
{
	struct ftl_comm_shm_ctl *me = &s->hdr->ctl[s->comm->rank];
	int64_t now = ftl_comm_now_ms(), left = op->deadline - now;
	if (left <= 0)
		return FTL_ERR_TIMEOUT;
	hint_stall(s, op, g, now);
	if (op->stall_at - now < left)
		left = op->stall_at - now;
	struct pollfd fds[2 + FTL_COMM_SHM_WORLD_MAX + 2];
	fds[0] = (struct pollfd){.fd = s->doorbell[s->comm->rank], .events = POLLIN};
	fds[1] = (struct pollfd){.fd = s->wake_fd, .events = POLLIN};
	for (int i = 0; i < s->n_live; i++)
		fds[2 + i] = (struct pollfd){.fd = s->live_fd[i], .events = POLLIN};
	atomic_store(&me->is_sleeping, 1);
	int rc = 0;
	if (first_behind(s, s->comm->world_size, g) >= 0 && atomic_load(&s->hdr->failed) == 0)
		rc = poll(fds, (nfds_t)(2 + s->n_live), left > 1000000 ? 1000000 : (int)left);
	atomic_store(&me->is_sleeping, 0);
	if (rc < 0 && errno != EINTR)
		return ftl_comm_fail(s->comm, FTL_ERR_SYSTEM, true, "%s: poll: %s", op->what, strerror(errno));
	if (rc <= 0)
		return FTL_OK;
	uint64_t drained;
	if (fds[0].revents != 0)
		(void)!read(fds[0].fd, &drained, sizeof(drained));
	if (fds[1].revents != 0)
		atomic_store(&s->comm->is_aborted, 1);
	if (first_behind(s, s->comm->world_size, g) < 0)
		return FTL_OK; /* done: a peer that closed after finishing its part is none of our business */
	for (int i = 0; i < s->n_live; i++)
		if (fds[2 + i].revents != 0)
			return peer_gone(s, op, s->live_rank[i]);
	return FTL_OK;
}

void ftl_comm_shm_begin(struct ftl_comm_shm *s, struct ftl_comm_shm_op *op, enum ftl_comm_call_kind kind,
			size_t count, ftl_dtype dtype, ftl_reduce_op rop, int root)
{
	*op = (struct ftl_comm_shm_op){
		.what = ftl_comm_call_kind_strs[kind],
		.deadline = ftl_comm_now_ms() + s->comm->timeout_ms,
		.stall_at = s->comm->stall_hint_ms > 0 ? ftl_comm_now_ms() + s->comm->stall_hint_ms : INT64_MAX,
		.call = {.seq = s->seq++, .kind = kind, .dtype = (uint32_t)dtype, .op = (uint32_t)rop, .root = root,
			 .count = count},
	};
	s->hdr->ctl[s->comm->rank].call[(s->round + 1) & 1] = op->call;
}

/* After the first round: every rank must be making the same call. */
static ftl_err check_calls(struct ftl_comm_shm *s, struct ftl_comm_shm_op *op)
{
	op->is_checked = true;
	for (int j = 0; j < s->comm->world_size; j++) {
		const struct ftl_comm_shm_call *a = &s->hdr->ctl[j].call[s->round & 1], *b = &op->call;
		if (memcmp(a, b, sizeof(*a)) == 0)
			continue;
		ftl_comm_fail(s->comm, FTL_ERR_INVALID, true,
			      "mismatched collectives: rank %d called %s(count %llu, %s, root %d) as call #%u, "
			      "rank %d called %s(count %llu, %s, root %d) as call #%u",
			      j, a->kind < FTL_COMM_CALL_KIND_MAX ? ftl_comm_call_kind_strs[a->kind] : "?",
			      (unsigned long long)a->count, a->dtype < FTL_DTYPE_MAX ? ftl_dtype_strs[a->dtype] : "?",
			      a->root, a->seq, s->comm->rank, ftl_comm_call_kind_strs[b->kind], (unsigned long long)b->count,
			      ftl_dtype_strs[b->dtype], b->root, b->seq);
		publish(s, FTL_ERR_INVALID, j);
		return FTL_ERR_INVALID;
	}
	return FTL_OK;
}

static void arrive(struct ftl_comm_shm *s, int rank, int n)
{
	atomic_store(&s->hdr->ctl[rank].arrived, ++s->round);
	uint64_t one = 1;
	for (int j = 0; j < n; j++)
		if (j != rank && atomic_load(&s->hdr->ctl[j].is_sleeping))
			(void)!write(s->doorbell[j], &one, sizeof(one));
}

ftl_err ftl_comm_shm_sync(struct ftl_comm_shm *s, struct ftl_comm_shm_op *op)
{
	int n = s->comm->world_size, rank = s->comm->rank;
	arrive(s, rank, n);
	uint64_t g = s->round;
	for (unsigned tries = 0;; tries++) {
		int behind = first_behind(s, n, g);
		if (behind < 0)
			return op->is_checked ? FTL_OK : check_calls(s, op);
		uint64_t word = atomic_load(&s->hdr->failed);
		if (word != 0)
			return published(s, op, word);
		if (atomic_load(&s->comm->is_aborted)) {
			ftl_comm_fail(s->comm, FTL_ERR_ABORTED, true, "%s aborted", op->what);
			publish(s, FTL_ERR_ABORTED, rank);
			return FTL_ERR_ABORTED;
		}
		if (tries < SPIN_CHECKS) {
			cpu_relax();
			continue;
		}
		if (tries < SPIN_CHECKS + YIELD_CHECKS) {
			sched_yield();
			continue;
		}
		ftl_err err = sleep_once(s, op, g);
		if (err == FTL_ERR_TIMEOUT) {
			ftl_comm_fail(s->comm, err, true, "%s timed out after %d ms waiting for rank %d (%s)", op->what,
				      s->comm->timeout_ms, behind, s->addrs[behind]);
			publish(s, err, behind);
		}
		if (err != FTL_OK)
			return err;
	}
}
