/* comm_tcp_spin: how long the stream engine spins on non-blocking calls before it sleeps in poll().
 *
 * Why spin: a small collective is a few round trips of a few microseconds of work each, and a rank that
 * sleeps in poll() between them pays a wake-up on every one (on a virtual machine, a halted vCPU woken
 * by an interrupt: tens of microseconds, more than the work). Open MPI busy-polls for the same reason.
 *
 * Why bounded and adaptive: ranks can outnumber cores (4 ranks on 2), and then a spinning rank could burn
 * the very CPU its peer needs to send what it waits for. So the engine spins with sched_yield() between
 * its calls, which hands the CPU to a peer (or another program) that wants it, and a communicator with
 * more ranks on this host than cores for this process starts at the minimum budget instead of the
 * maximum. (It used to never spin; once a yield that ran the peer and brought our data counted as a
 * catch, spinning made 4 ranks on 2 cores 10-40 % faster at 1-64 KiB, and 8 ranks no slower.) This policy
 * watches what the spins achieve:
 * - CAUGHT: the data came while spinning, or during a yield: spin as long next time, or longer (up to the
 *   maximum);
 * - EXPIRED: the budget ran out and the engine went to sleep (a peer late by more than a spin, as in a
 *   training step whose ranks finish their compute apart): halve the budget, down to the minimum;
 * - CROWDED: a sched_yield() took long, so another task wanted this CPU and got it: stop spinning
 *   altogether, for this wait and the next ones. Every FTL_COMM_TCP_SPIN_PROBE-th wait still spins,
 *   with the minimum budget, to notice when the CPU is free again; the first catch or expiry brings the
 *   minimum budget back, and catches double it from there.
 * Pure: the engine measures and reports; nothing here reads a clock. */
#include "comm_tcp.h"

void ftl_comm_tcp_spin_init(struct ftl_comm_tcp_spin *s, int n_ranks_here, int n_cpus)
{
	s->budget_ns = n_ranks_here > n_cpus ? FTL_COMM_TCP_SPIN_MIN_NS : FTL_COMM_TCP_SPIN_MAX_NS;
	s->n_slept = 0;
}

int64_t ftl_comm_tcp_spin_budget(struct ftl_comm_tcp_spin *s)
{
	if (s->budget_ns > 0)
		return s->budget_ns;
	if (++s->n_slept < FTL_COMM_TCP_SPIN_PROBE)
		return 0;
	s->n_slept = 0;
	return FTL_COMM_TCP_SPIN_MIN_NS;
}

void ftl_comm_tcp_spin_record(struct ftl_comm_tcp_spin *s, enum ftl_comm_tcp_spin_outcome outcome)
{
	int64_t b = s->budget_ns;
	switch (outcome) {
	case FTL_COMM_TCP_SPIN_CAUGHT:
		b = b < FTL_COMM_TCP_SPIN_MIN_NS ? FTL_COMM_TCP_SPIN_MIN_NS : 2 * b;
		break;
	case FTL_COMM_TCP_SPIN_EXPIRED:
		b = b / 2 < FTL_COMM_TCP_SPIN_MIN_NS ? FTL_COMM_TCP_SPIN_MIN_NS : b / 2;
		break;
	default: /* crowded */
		b = 0;
		break;
	}
	s->budget_ns = b > FTL_COMM_TCP_SPIN_MAX_NS ? FTL_COMM_TCP_SPIN_MAX_NS : b;
	if (b > 0)
		s->n_slept = 0;
}
