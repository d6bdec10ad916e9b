/* test_comm_fork: a rank that forked (a DataLoader worker, any fork without exec) still dies visibly.
 *
 * The victim rank forks a child that sleeps on, holding whatever descriptors it inherited; then the victim
 * is killed with kill -9 while the other ranks sit in an allreduce with it. Without the fork handler
 * (base/fork_fds.h) the child's copies keep the victim's sockets open: the survivors see no EOF and wait
 * for the collective's whole timeout (30 s here). With it, the child closed them at birth, and every
 * survivor returns peer lost within HARNESS_PEER_LOST_MS (2 s), as with no fork at all. The child also
 * reports how many registered descriptors it kept (none) against the victim's count (some).
 * ctest runs it over tcp and, with FTL_COMM_SHM=auto, over shared memory (whose liveness is the same
 * sockets plus unix connections). Usage: test_comm_fork [world size]. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fork_fds.h"
#include "harness.h"

enum { REP_FORKED = 1, REP_CHILD_KEPT, REP_CALLING, REP_FAILED };
enum { TIMEOUT_MS = 30000, COUNT = 1 << 16 };

/* The forked child: what it kept, then sleep (killed by the test, or by the alarm at worst). */
static void child_main(struct harness_child *c)
{
	alarm(60);
	harness_report(c, REP_CHILD_KEPT, 0, ftl_fork_fds_count());
	for (;;)
		pause();
}

static int rank_main(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, TIMEOUT_MS);
	if (comm == NULL)
		return 1;
	float *buf = harness_xmalloc(COUNT * sizeof(float));
	memset(buf, 0, COUNT * sizeof(float));
	ftl_err e = ftl_comm_allreduce(comm, buf, buf, COUNT, FTL_F32, FTL_SUM, NULL, NULL); /* everyone is up */
	if (e != FTL_OK) {
		fprintf(stderr, "rank %d: first allreduce: %s\n", c->rank, ftl_comm_error(comm));
		return 1;
	}
	if (c->rank == c->n - 1) { /* the victim: fork, then wait for the kill outside any call */
		pid_t pid = fork();
		if (pid == 0)
			child_main(c);
		harness_report(c, REP_FORKED, pid < 0, ftl_fork_fds_count());
		harness_report(c, REP_CALLING, 0, pid);
		for (;;)
			harness_sleep_ms(1000);
	}
	harness_report(c, REP_CALLING, 0, 0);
	int64_t t0 = harness_now_ns();
	e = ftl_comm_allreduce(comm, buf, buf, COUNT, FTL_F32, FTL_SUM, NULL, NULL);
	harness_report(c, REP_FAILED, e, (harness_now_ns() - t0) / 1000000);
	fprintf(stderr, "rank %d: %s: %s\n", c->rank, ftl_strerror(e), ftl_comm_error(comm));
	ftl_comm_delete(comm);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	int n = argc > 1 ? atoi(argv[1]) : 2;
	if (n < 2 || n > HARNESS_MAX) {
		fprintf(stderr, "usage: %s [world size 2..%d]\n", argv[0], HARNESS_MAX);
		return 2;
	}
	int victim = n - 1;
	struct harness h;
	if (harness_start(&h, n, 90, rank_main, NULL) != 0)
		return 1;
	int calling = 0, failed = 0, bad = 0;
	int64_t t_kill = 0, worst_ms = 0, victim_fds = -1, child_fds = -1;
	pid_t child = 0;
	struct harness_report rep;
	while ((failed < n - 1 || child_fds < 0) && harness_read(&h, &rep) == 0) {
		switch (rep.kind) {
		case REP_FORKED:
			victim_fds = rep.value;
			bad += rep.err != 0;
			break;
		case REP_CHILD_KEPT:
			child_fds = rep.value;
			break;
		case REP_CALLING:
			if (rep.rank == victim)
				child = (pid_t)rep.value;
			if (++calling == n) {
				harness_sleep_ms(300); /* the survivors are inside the allreduce */
				t_kill = harness_now_ns();
				harness_signal(&h, victim, SIGKILL);
			}
			break;
		case REP_FAILED: {
			int64_t ms = (rep.t_ns - t_kill) / 1000000;
			worst_ms = ms > worst_ms ? ms : worst_ms;
			failed++;
			if (rep.err != FTL_ERR_PEER_LOST || t_kill == 0 || ms > HARNESS_PEER_LOST_MS) {
				fprintf(stderr, "rank %d: %s %lld ms after the kill; wanted peer lost within %d ms "
					"(the collective's timeout is %d ms)\n", rep.rank, ftl_strerror(rep.err),
					(long long)ms, HARNESS_PEER_LOST_MS, TIMEOUT_MS);
				bad++;
			}
			break;
		}
		}
	}
	if (child > 0)
		kill(child, SIGKILL);
	printf("{\"test\":\"kill9_after_fork\",\"world\":%d,\"shm\":\"%s\",\"survivors_failed\":%d,"
	       "\"worst_ms_after_kill\":%lld,\"victim_registered_fds\":%lld,\"child_kept_registered\":%lld}\n", n,
	       getenv("FTL_COMM_SHM") ? getenv("FTL_COMM_SHM") : "off", failed, (long long)worst_ms,
	       (long long)victim_fds, (long long)child_fds);
	bad += failed != n - 1;
	if (victim_fds <= 0 || child_fds != 0) {
		fprintf(stderr, "the victim registered %lld descriptors and its child kept %lld of them\n",
			(long long)victim_fds, (long long)child_fds);
		bad++;
	}
	bad += harness_wait(&h, 1u << victim);
	printf("%s %d: %s\n", argv[0], n, bad ? "FAILED" : "ok");
	return bad != 0;
}
