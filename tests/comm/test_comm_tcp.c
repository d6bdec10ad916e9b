/* test_comm_tcp: the tcp backend as real processes on loopback, one ctest entry per scenario:
 *   correct N   every op x dtype, sizes 0, 1, odd, not divisible by N, across segments; in place and
 *               not; broadcast from several roots; allgather; barrier: all against the f64 reference
 *   large N     64 MB allreduces (f32 out of place, bf16 in place)
 *   algos N     every allreduce algorithm forced (ring, doubling, halving) and the automatic choice, on the
 *               same input, at every size boundary (each crossover, the doubling stage, the ring segment;
 *               one element below, at, above): every result is checked against the f64 reference, and
 *               the algorithms must agree bit for bit wherever the reduction order cannot matter: integers,
 *               min and max, and f32/f64 sums of the reference data (small multiples of a power of two, so
 *               every partial sum is exact). f16/bf16 sums round at every partial sum, in an order that
 *               differs by algorithm: those are held to the reference's tolerance, (n+1) roundings.
 *   kill N      kill -9 of one rank in the middle of a large allreduce: every survivor returns peer lost
 *               within 2 s, then a new communicator over the survivors gives correct results
 *   killsmall N the same with 16 KB allreduces (recursive doubling over the mesh links)
 *   stopsmall N the stop scenario with 16 KB allreduces (stop N itself runs 1 MB ones: halving)
 *   stop N      SIGSTOP of one rank: every survivor returns timed out at its deadline; then rebuild
 *   abort       ftl_comm_abort from another thread returns a blocked allreduce within 100 ms; the peer
 *               learns at once (peer lost); both rebuild
 *   mismatch    ranks calling different collectives get "mismatched collectives", not garbage
 *   hangup N    rank 0 hangs up (ftl_comm_hang_up) and stays alive: the others' allreduce fails with peer
 *               lost, not with a timeout at its deadline (rank 0 outlives that deadline, so only the hang-up
 *               can tell them)
 * Measured latencies are printed as JSON lines. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm_tcp.h"
#include "harness.h"
#include "refdata.h"

enum { REP_LOOPING = 1, REP_FAILED, REP_REBUILT, REP_HINT, REP_ABORT_MS, REP_PEER_SAW };

struct scenario {
	int victim;     /* rank killed or stopped */
	int timeout_ms; /* per call */
	size_t count;   /* f32 elements per allreduce */
	int stall_hint_ms; /* the communicators' (0: none) */
};


/* --- the correctness suite, also used to check rebuilt communicators --- */

static int fail_case(int rank, const char *what, ftl_dtype dt, int op, size_t count, int is_in_place, const char *why)
{
	fprintf(stderr, "rank %d: %s %s %s count %zu%s: %s\n", rank, what, ftl_dtype_strs[dt],
		op >= 0 ? ftl_reduce_op_strs[op] : "", count, is_in_place ? " in place" : "", why);
	return 1;
}

static int check_allreduce(ftl_comm *comm, ftl_dtype dt, ftl_reduce_op op, size_t count, int is_in_place, uint64_t seed)
{
	int rank = ftl_comm_rank(comm), n = ftl_comm_world_size(comm);
	size_t bytes = count * ftl_dtype_size(dt);
	char *send = harness_xmalloc(bytes), *recv = is_in_place ? send : harness_xmalloc(bytes);
	char why[256];
	ref_fill(send, dt, seed, rank, count);
	ftl_err e = ftl_comm_allreduce(comm, send, recv, count, dt, op, NULL, NULL);
	int rc = 0;
	if (e != FTL_OK)
		rc = fail_case(rank, "allreduce", dt, op, count, is_in_place, ftl_comm_error(comm));
	else if (ref_check_allreduce(recv, dt, op, seed, n, count, why, sizeof(why)) != 0)
		rc = fail_case(rank, "allreduce", dt, op, count, is_in_place, why);
	if (!is_in_place)
		free(recv);
	free(send);
	return rc;
}

static int check_broadcast(ftl_comm *comm, ftl_dtype dt, size_t count, int root, uint64_t seed)
{
	int rank = ftl_comm_rank(comm);
	size_t bytes = count * ftl_dtype_size(dt);
	char *buf = harness_xmalloc(bytes), why[256];
	if (rank == root)
		ref_fill(buf, dt, seed, root, count);
	else
		memset(buf, 0xa5, bytes);
	ftl_err e = ftl_comm_broadcast(comm, buf, count, dt, root);
	int rc = 0;
	if (e != FTL_OK)
		rc = fail_case(rank, "broadcast", dt, -1, count, 0, ftl_comm_error(comm));
	else if (ref_check_block(buf, dt, seed, root, count, why, sizeof(why)) != 0)
		rc = fail_case(rank, "broadcast", dt, -1, count, 0, why);
	free(buf);
	return rc;
}

static int check_allgather(ftl_comm *comm, ftl_dtype dt, size_t count, int is_in_place, uint64_t seed)
{
	int rank = ftl_comm_rank(comm), n = ftl_comm_world_size(comm);
	size_t bytes = count * ftl_dtype_size(dt);
	char *recv = harness_xmalloc(bytes * (size_t)n), *send = is_in_place ? recv + (size_t)rank * bytes : harness_xmalloc(bytes);
	char why[256];
	memset(recv, 0x5a, bytes * (size_t)n);
	ref_fill(send, dt, seed, rank, count);
	ftl_err e = ftl_comm_allgather(comm, send, recv, count, dt);
	int rc = 0;
	if (e != FTL_OK)
		rc = fail_case(rank, "allgather", dt, -1, count, is_in_place, ftl_comm_error(comm));
	for (int q = 0; q < n && rc == 0; q++)
		if (ref_check_block(recv + (size_t)q * bytes, dt, seed, q, count, why, sizeof(why)) != 0)
			rc = fail_case(rank, "allgather", dt, -1, count, is_in_place, why);
	if (!is_in_place)
		free(send);
	free(recv);
	return rc;
}

/* Every op and dtype over sizes that hit the edges of the chunking; quick: a representative subset. */
static int run_suite(ftl_comm *comm, bool is_quick)
{
	int n = ftl_comm_world_size(comm);
	size_t sizes[] = {1, 2, 3, (size_t)n + 1, 7 * (size_t)n + 3, 1000 + (size_t)n, 65537};
	size_t n_sizes = is_quick ? 4 : sizeof(sizes) / sizeof(sizes[0]);
	uint64_t seed = 1;
	int rc = 0;
	for (size_t s = is_quick ? 3 : 0; s < n_sizes; s++)
		for (int dt = 0; dt < FTL_DTYPE_MAX; dt++) {
			for (int op = 0; op < FTL_REDUCE_OP_MAX; op++)
				for (int ip = 0; ip < 2 && ftl_reduce_op_accepts((ftl_reduce_op)op, (ftl_dtype)dt); ip++)
					rc |= check_allreduce(comm, (ftl_dtype)dt, (ftl_reduce_op)op, sizes[s], ip, seed++);
			int roots[3] = {0, n - 1, n / 2};
			for (int k = 0; k < 3; k++)
				rc |= check_broadcast(comm, (ftl_dtype)dt, sizes[s], roots[k], seed++);
			for (int ip = 0; ip < 2; ip++)
				rc |= check_allgather(comm, (ftl_dtype)dt, sizes[s], ip, seed++);
			if (rc)
				return rc;
		}
	/* Size 0 moves nothing and must not fail, even with NULL buffers. */
	if (ftl_comm_allreduce(comm, NULL, NULL, 0, FTL_F32, FTL_SUM, NULL, NULL) != FTL_OK ||
	    ftl_comm_broadcast(comm, NULL, 0, FTL_F64, 0) != FTL_OK ||
	    ftl_comm_allgather(comm, NULL, NULL, 0, FTL_I32) != FTL_OK)
		return fail_case(ftl_comm_rank(comm), "size 0", FTL_F32, -1, 0, 0, ftl_comm_error(comm));
	for (int i = 0; i < 3; i++)
		if (ftl_comm_barrier(comm) != FTL_OK)
			return fail_case(ftl_comm_rank(comm), "barrier", FTL_F32, -1, 0, 0, ftl_comm_error(comm));
	return 0;
}

static int correct_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 60000);
	if (comm == NULL)
		return 1;
	int rc = run_suite(comm, false);
	ftl_comm_delete(comm);
	return rc;
}

static int large_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 120000);
	if (comm == NULL)
		return 1;
	size_t bytes = 64u << 20;
	int rc = check_allreduce(comm, FTL_F32, FTL_SUM, bytes / 4, 0, 77);
	if (rc == 0)
		rc = check_allreduce(comm, FTL_BF16, FTL_AVG, bytes / 2, 1, 78);
	if (rc == 0)
		rc = check_broadcast(comm, FTL_F64, bytes / 8 + 1, c->n - 1, 79);
	ftl_comm_delete(comm);
	return rc;
}

/* --- every algorithm at every size boundary --- */

static int check_algos_at(ftl_comm *comm, ftl_dtype dt, ftl_reduce_op op, size_t count, uint64_t seed)
{
	static const enum ftl_comm_tcp_algo algos[] = {FTL_COMM_TCP_ALGO_RING, FTL_COMM_TCP_ALGO_DOUBLING,
						       FTL_COMM_TCP_ALGO_HALVING, FTL_COMM_TCP_ALGO_AUTO};
	int rank = ftl_comm_rank(comm), n = ftl_comm_world_size(comm), rc = 0;
	size_t bytes = count * ftl_dtype_size(dt);
	char *send = harness_xmalloc(bytes), *first = harness_xmalloc(bytes), *recv = harness_xmalloc(bytes), why[256];
	ref_fill(send, dt, seed, rank, count);
	for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]) && rc == 0; a++) {
		ftl_comm_tcp_force_algo(comm, algos[a]);
		memset(recv, 0xa5, bytes);
		ftl_err e = ftl_comm_allreduce(comm, send, recv, count, dt, op, NULL, NULL);
		const char *algo = ftl_comm_tcp_algo_strs[algos[a]];
		if (e != FTL_OK)
			rc = fail_case(rank, algo, dt, op, count, 0, ftl_comm_error(comm));
		else if (ref_check_allreduce(recv, dt, op, seed, n, count, why, sizeof(why)) != 0)
			rc = fail_case(rank, algo, dt, op, count, 0, why);
		else if (a == 0)
			memcpy(first, recv, bytes);
		else if (ref_is_order_free(dt, op) && memcmp(first, recv, bytes) != 0)
			rc = fail_case(rank, algo, dt, op, count, 0, "differs from the ring bit for bit");
	}
	ftl_comm_tcp_force_algo(comm, FTL_COMM_TCP_ALGO_AUTO);
	free(send);
	free(first);
	free(recv);
	return rc;
}

static int algos_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 60000);
	if (comm == NULL)
		return 1;
	/* The boundaries: where the automatic choice changes, the doubling stage and the ring segment. */
	size_t bounds[24];
	int n_bounds = 0;
	bounds[n_bounds++] = FTL_COMM_TCP_STAGE;
	bounds[n_bounds++] = FTL_COMM_TCP_SEGMENT * (size_t)c->n;
	for (size_t b = 1u << 8; b <= (64u << 20) && n_bounds < 24; b *= 2)
		if (ftl_comm_tcp_choose(c->n, b) != ftl_comm_tcp_choose(c->n, b + 1))
			bounds[n_bounds++] = b;
	uint64_t seed = 100;
	int rc = 0;
	for (int i = 0; i < n_bounds && rc == 0; i++)
		for (int dt = 0; dt < FTL_DTYPE_MAX && rc == 0; dt++) {
			size_t at = bounds[i] / ftl_dtype_size((ftl_dtype)dt);
			/* Every dtype and op below 1 MB; above, where only the element size changes how a buffer is
			 * staged and segmented, one dtype of each size (f32, f64, f16, u8) and the ops that exercise
			 * the two kinds of agreement. The dtypes' arithmetic is checked below 1 MB; this keeps the
			 * 8-rank sweep within a minute on two cores. */
			if (bounds[i] > (1u << 20) && dt != FTL_F32 && dt != FTL_F64 && dt != FTL_F16 && dt != FTL_U8)
				continue;
			for (int op = 0; op < FTL_REDUCE_OP_MAX && rc == 0; op++) {
				if ((bounds[i] > (1u << 20) && op != FTL_SUM && op != FTL_MAX) ||
				    !ref_is_swept((ftl_dtype)dt, (ftl_reduce_op)op))
					continue;
				for (size_t count = at - 1; count <= at + 1 && rc == 0; count++)
					rc |= check_algos_at(comm, (ftl_dtype)dt, (ftl_reduce_op)op, count, seed++);
			}
		}
	if (c->rank == 0)
		printf("{\"test\":\"algos\",\"world\":%d,\"boundaries\":%d}\n", c->n, n_bounds);
	ftl_comm_delete(comm);
	return rc;
}

/* --- failures --- */

static void on_peer_reset(void *arg, int peer_rank, const char *peer_addr)
{
	(void)peer_addr;
	harness_report(arg, REP_HINT, 0, peer_rank);
}

/* Rebuilds over every rank but the victim and checks the new communicator; reports REP_REBUILT. */
static int rebuild_without(struct harness_child *c, int victim)
{
	int members[HARNESS_MAX], m = 0;
	for (int i = 0; i < c->n; i++)
		if (i != victim)
			members[m++] = i;
	ftl_comm *comm = harness_comm(c, members, m, 2, 30000);
	int rc = comm == NULL ? 1 : run_suite(comm, true);
	ftl_comm_delete(comm);
	harness_report(c, REP_REBUILT, rc, 0);
	return rc;
}

/* Loops large allreduces until one fails, reporting when the loop runs and how the failure looked. */
static int loop_child(struct harness_child *c)
{
	const struct scenario *sc = c->arg;
	c->peer_reset_cb = on_peer_reset;
	c->peer_reset_arg = c;
	c->stall_hint_ms = sc->stall_hint_ms;
	ftl_comm *comm = harness_comm_all(c, 1, sc->timeout_ms);
	if (comm == NULL)
		return 1;
	float *send = harness_xmalloc(sc->count * 4), *recv = harness_xmalloc(sc->count * 4);
	ref_fill(send, FTL_F32, 5, c->rank, sc->count);
	ftl_err e = FTL_OK;
	int64_t started = 0;
	for (int i = 0; i < 100000 && e == FTL_OK; i++) {
		if (i == 1)
			harness_report(c, REP_LOOPING, 0, 0);
		started = harness_now_ns();
		e = ftl_comm_allreduce(comm, send, recv, sc->count, FTL_F32, FTL_SUM, NULL, NULL);
	}
	int64_t op_ms = (harness_now_ns() - started) / 1000000;
	fprintf(stderr, "rank %d: %s after %lld ms: %s\n", c->rank, ftl_strerror(e), (long long)op_ms,
		ftl_comm_error(comm));
	harness_report(c, REP_FAILED, e, op_ms);
	free(send);
	free(recv);
	/* After a timeout, stay a moment before leaving: the ranks started the call a few ms apart, and a
	 * neighbour still waiting for its own deadline would see our close as "peer lost". */
	if (e == FTL_ERR_TIMEOUT)
		harness_sleep_ms(500);
	ftl_comm_delete(comm);
	return rebuild_without(c, sc->victim);
}

/* Runs loop_child on n ranks, hits the victim with sig once all loop, and checks what survivors saw. */
static int failure_test(int n, int sig, ftl_err want, size_t count)
{
	/* A stopped peer sends no reset: the stall hint is what names it to membership, well before the deadline. */
	struct scenario sc = {.victim = n / 2, .timeout_ms = sig == SIGSTOP ? 1500 : 20000, .count = count,
			      .stall_hint_ms = sig == SIGSTOP ? 100 : 0};
	struct harness h;
	if (harness_start(&h, n, 90, loop_child, &sc) != 0)
		return 1;
	int looping = 0, failed = 0, rebuilt = 0, bad = 0, hints_victim = 0, hints_other = 0;
	int64_t t_sig = 0, worst_ms = 0;
	struct harness_report rep;
	while (rebuilt < n - 1 && harness_read(&h, &rep) == 0) {
		switch (rep.kind) {
		case REP_LOOPING:
			if (++looping == n) {
				harness_sleep_ms(150);
				t_sig = harness_now_ns();
				harness_signal(&h, sc.victim, sig);
			}
			break;
		case REP_FAILED: {
			int64_t ms = (rep.t_ns - t_sig) / 1000000;
			printf("{\"test\":\"%s\",\"world\":%d,\"rank\":%d,\"error\":\"%s\",\"ms_after_signal\":%lld,"
			       "\"failed_call_ms\":%lld}\n", sig == SIGSTOP ? "sigstop" : "kill9", n, rep.rank,
			       ftl_strerror(rep.err), (long long)ms, (long long)rep.value);
			if (rep.rank == sc.victim || t_sig == 0 || rep.err != (int)want) {
				fprintf(stderr, "rank %d: wanted %s, got %s\n", rep.rank, ftl_strerror(want), ftl_strerror(rep.err));
				bad++;
			}
			if (sig == SIGKILL && ms > HARNESS_PEER_LOST_MS) {
				fprintf(stderr, "rank %d: peer lost took %lld ms (bound %d)\n", rep.rank, (long long)ms,
					HARNESS_PEER_LOST_MS);
				bad++;
			}
			/* Stopped peer: the call lasts its whole deadline, give or take the ring's skew. */
			if (sig == SIGSTOP && (rep.value < sc.timeout_ms - 300 || rep.value > sc.timeout_ms + 2000)) {
				fprintf(stderr, "rank %d: timed out after %lld ms, deadline %d\n", rep.rank, (long long)rep.value,
					sc.timeout_ms);
				bad++;
			}
			worst_ms = ms > worst_ms ? ms : worst_ms;
			if (++failed == n - 1 && sig == SIGSTOP)
				harness_signal(&h, sc.victim, SIGKILL);
			break;
		}
		case REP_HINT:
			if (rep.value == sc.victim)
				hints_victim++;
			else
				hints_other++;
			break;
		case REP_REBUILT:
			rebuilt++;
			bad += rep.err != 0;
			break;
		}
	}
	if (sig == SIGSTOP)
		harness_signal(&h, sc.victim, SIGKILL);
	printf("{\"test\":\"%s\",\"world\":%d,\"survivors_failed\":%d,\"worst_ms_after_signal\":%lld,"
	       "\"hints_naming_victim\":%d,\"hints_naming_others\":%d,\"rebuilt\":%d}\n",
	       sig == SIGSTOP ? "sigstop" : "kill9", n, failed, (long long)worst_ms, hints_victim, hints_other, rebuilt);
	if (hints_victim == 0) {
		fprintf(stderr, "nobody reported the %s rank to the peer_reset hook\n", sig == SIGSTOP ? "silent" : "dead");
		bad++;
	}
	bad += failed != n - 1 || rebuilt != n - 1;
	bad += harness_wait(&h, 1u << sc.victim);
	return bad != 0;
}

struct abort_arg {
	ftl_comm *comm;
};

static void *abort_later(void *p)
{
	struct abort_arg *a = p;
	harness_sleep_ms(300);
	int64_t *t = malloc(sizeof(*t));
	*t = harness_now_ns();
	ftl_comm_abort(a->comm);
	return t;
}

static int abort_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	size_t count = 1u << 20;
	float *send = harness_xmalloc(count * 4), *recv = harness_xmalloc(count * 4);
	ref_fill(send, FTL_F32, 9, c->rank, count);
	int rc = 0;
	if (c->rank == 0) { /* blocks: rank 1 is not there yet; another thread aborts */
		struct abort_arg a = {comm};
		pthread_t th;
		pthread_create(&th, NULL, abort_later, &a);
		ftl_err e = ftl_comm_allreduce(comm, send, recv, count, FTL_F32, FTL_SUM, NULL, NULL);
		int64_t t_ret = harness_now_ns();
		void *t_abort;
		pthread_join(th, &t_abort);
		int64_t us = (t_ret - *(int64_t *)t_abort) / 1000;
		free(t_abort);
		fprintf(stderr, "rank 0: %s %lld us after abort: %s\n", ftl_strerror(e), (long long)us, ftl_comm_error(comm));
		harness_report(c, REP_ABORT_MS, e, us);
		rc |= e != FTL_ERR_ABORTED;
		/* Broken for good: the next call says so at once. */
		rc |= ftl_comm_barrier(comm) != FTL_ERR_ABORTED;
	} else {
		harness_sleep_ms(800);
		int64_t t0 = harness_now_ns();
		ftl_err e = ftl_comm_allreduce(comm, send, recv, count, FTL_F32, FTL_SUM, NULL, NULL);
		int64_t us = (harness_now_ns() - t0) / 1000;
		fprintf(stderr, "rank 1: %s after %lld us: %s\n", ftl_strerror(e), (long long)us, ftl_comm_error(comm));
		harness_report(c, REP_PEER_SAW, e, us);
		rc |= e != FTL_ERR_PEER_LOST;
	}
	free(send);
	free(recv);
	ftl_comm_delete(comm);
	/* A fresh communicator over the same two ranks works. */
	comm = harness_comm_all(c, 2, 20000);
	rc |= comm == NULL || run_suite(comm, true) != 0;
	ftl_comm_delete(comm);
	return rc;
}

static int abort_test(void)
{
	struct harness h;
	if (harness_start(&h, 2, 60, abort_child, NULL) != 0)
		return 1;
	int bad = 0;
	struct harness_report rep;
	for (int got = 0; got < 2 && harness_read(&h, &rep) == 0; got++) {
		if (rep.kind == REP_ABORT_MS) {
			printf("{\"test\":\"abort\",\"error\":\"%s\",\"return_us_after_abort\":%lld}\n", ftl_strerror(rep.err),
			       (long long)rep.value);
			bad += rep.value > 100000;
		} else {
			printf("{\"test\":\"abort_peer\",\"error\":\"%s\",\"call_us\":%lld}\n", ftl_strerror(rep.err),
			       (long long)rep.value);
		}
	}
	return (bad + harness_wait(&h, 0)) != 0;
}

static int mismatch_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 10000);
	if (comm == NULL)
		return 1;
	float buf[16] = {0};
	ftl_err e = c->rank == 0 ? ftl_comm_allreduce(comm, buf, buf, 16, FTL_F32, FTL_SUM, NULL, NULL)
				 : ftl_comm_broadcast(comm, buf, 16, FTL_F32, 0);
	fprintf(stderr, "rank %d: %s: %s\n", c->rank, ftl_strerror(e), ftl_comm_error(comm));
	int rc = e != FTL_ERR_INVALID && e != FTL_ERR_PEER_LOST;
	rc |= strstr(ftl_comm_error(comm), "mismatched collectives") == NULL;
	ftl_comm_delete(comm);
	return rc;
}

enum { HANGUP_DEADLINE_MS = 5000 };

static int hangup_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, HANGUP_DEADLINE_MS);
	if (comm == NULL)
		return 1;
	float buf[4096] = {0};
	int rc = ftl_comm_allreduce(comm, buf, buf, 4096, FTL_F32, FTL_SUM, NULL, NULL) != FTL_OK;
	if (c->rank == 0) {
		ftl_comm_hang_up(comm); /* and no call after it: a failed call would close the links itself */
		harness_sleep_ms(HANGUP_DEADLINE_MS + 2000);
		rc |= !ftl_comm_is_aborted(comm);
	} else {
		ftl_err e = ftl_comm_allreduce(comm, buf, buf, 4096, FTL_F32, FTL_SUM, NULL, NULL);
		fprintf(stderr, "rank %d after the hang-up: %s: %s\n", c->rank, ftl_strerror(e), ftl_comm_error(comm));
		rc |= e != FTL_ERR_PEER_LOST;
	}
	ftl_comm_delete(comm);
	return rc;
}

static int run_plain(int n, harness_child_fn fn, int limit_s)
{
	struct harness h;
	if (harness_start(&h, n, limit_s, fn, NULL) != 0)
		return 1;
	return harness_wait(&h, 0) != 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *what = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 2;
	if (n < 1 || n > HARNESS_MAX) {
		fprintf(stderr, "world size %d is not in 1..%d\n", n, HARNESS_MAX);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	int rc;
	if (strcmp(what, "correct") == 0)
		rc = run_plain(n, correct_child, 150);
	else if (strcmp(what, "large") == 0)
		rc = run_plain(n, large_child, 200);
	else if (strcmp(what, "algos") == 0)
		rc = run_plain(n, algos_child, 280);
	else if (strcmp(what, "kill") == 0)
		rc = failure_test(n, SIGKILL, FTL_ERR_PEER_LOST, 8u << 20); /* the ring */
	else if (strcmp(what, "killsmall") == 0)
		rc = failure_test(n, SIGKILL, FTL_ERR_PEER_LOST, 4u << 10); /* recursive doubling on the mesh */
	else if (strcmp(what, "stop") == 0)
		rc = failure_test(n, SIGSTOP, FTL_ERR_TIMEOUT, 1u << 18); /* halving on the mesh */
	else if (strcmp(what, "stopsmall") == 0)
		rc = failure_test(n, SIGSTOP, FTL_ERR_TIMEOUT, 4u << 10);
	else if (strcmp(what, "abort") == 0)
		rc = abort_test();
	else if (strcmp(what, "mismatch") == 0)
		rc = run_plain(2, mismatch_child, 30);
	else if (strcmp(what, "hangup") == 0)
		rc = run_plain(n, hangup_child, 60);
	else {
		fprintf(stderr, "usage: %s correct|large|algos|kill|killsmall|stopsmall|stop|abort|mismatch|hangup [world size]\n", argv[0]);
		return 2;
	}
	printf("%s %s %d: %s\n", argv[0], what, n, rc ? "FAILED" : "ok");
	return rc;
}
