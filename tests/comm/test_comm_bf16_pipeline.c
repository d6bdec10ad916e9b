/* test_comm_bf16_pipeline: the chunked path of the bf16-compressed allreduce on tcp (comm_bf16_pipeline.c),
 * as real processes on loopback.
 *   same N   chunked_is_bit_identical_to_one_pass: every op, in place and not, with and without error
 *            feedback, at counts just under, at and over the chunk boundaries: the result and the residual
 *            have the same bits in chunks as in one pass, under every algorithm that adds an element's
 *            operands in an order that does not depend on where the element sits (the ring at 2 ranks;
 *            doubling and halving at any world size)
 *   kill N   a_killed_peer_fails_the_chunked_call_within_the_bound: kill -9 of one rank while every rank
 *            loops over chunked calls with error feedback: each survivor's call fails with peer lost
 *            within 2 s, leaves no request outstanding, and the next call is refused with the same error
 *   stop N   the same with SIGSTOP: the call times out once, at the deadline of the chunk that was
 *            running, not once per chunk
 * The comm test harness gives every rank its own process and the whole test a time limit. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/comm_tcp.h"
#include "harness.h"

enum { CHUNK = 1000, REP_LOOPING = 1, REP_FAILED };

/* Rank r's element i: not exact in bf16, signed, over several binades. */
static float input(int rank, size_t i)
{
	return (float)(cos((double)i * 0.377 + rank) * (double)(1 + i % 13) * 1.1);
}

static const size_t counts[] = {2 * CHUNK - 1, 2 * CHUNK, 2 * CHUNK + 1, 3 * CHUNK - 1, 3 * CHUNK + 1,
				7 * CHUNK + 13, 100003};
#define N_COUNTS (sizeof(counts) / sizeof(counts[0]))

/* One compressed allreduce of this rank's input with the given chunk; out and residual are count floats
 * (the residual starts at a small value of its own, so feedback changes the input). */
static ftl_err run_once(ftl_comm *comm, int rank, size_t count, ftl_reduce_op op, int is_in_place, int has_residual,
			size_t chunk, float *out, float *residual)
{
	float *send = is_in_place ? out : harness_xmalloc(count * 4);
	for (size_t i = 0; i < count; i++) {
		send[i] = input(rank, i);
		residual[i] = input(rank + 7, i) * 0x1p-10f;
	}
	ftl_comm_bf16_set_chunk(comm, chunk);
	ftl_err e = harness_allreduce_bf16(comm, send, out, count, op, has_residual ? residual : NULL);
	if (!is_in_place)
		free(send);
	return e;
}

static int same_bits_under(ftl_comm *comm, struct harness_child *c, enum ftl_comm_tcp_algo algo)
{
	int rc = 0;
	size_t max = counts[N_COUNTS - 1];
	float *one = harness_xmalloc(max * 4), *chunked = harness_xmalloc(max * 4);
	float *one_res = harness_xmalloc(max * 4), *chunked_res = harness_xmalloc(max * 4);
	ftl_comm_tcp_force_algo(comm, algo);
	for (size_t s = 0; s < N_COUNTS; s++)
		for (int op = FTL_SUM; op <= FTL_MAX; op++)
			for (int variant = 0; variant < 4; variant++) {
				int is_in_place = variant & 1, has_residual = variant >> 1 && op <= FTL_AVG;
				size_t n = counts[s];
				ftl_err e1 = run_once(comm, c->rank, n, (ftl_reduce_op)op, is_in_place, has_residual, 0, one,
						      one_res);
				ftl_err e2 = run_once(comm, c->rank, n, (ftl_reduce_op)op, is_in_place, has_residual, CHUNK,
						      chunked, chunked_res);
				int differ = memcmp(one, chunked, n * 4) != 0 || memcmp(one_res, chunked_res, n * 4) != 0;
				if (e1 != FTL_OK || e2 != FTL_OK || differ) {
					fprintf(stderr, "rank %d: %s count %zu %s in place %d feedback %d: %s / %s, %s\n",
						c->rank, ftl_comm_tcp_algo_strs[algo], n, ftl_reduce_op_strs[op], is_in_place,
						has_residual, ftl_strerror(e1), ftl_strerror(e2),
						differ ? "the bits differ" : "same bits");
					rc = 1;
				}
			}
	free(one);
	free(chunked);
	free(one_res);
	free(chunked_res);
	return rc;
}

static int same_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	/* Proof the chunks ran: only the pipeline makes requests, so only it starts the progress thread. */
	float a[2 * CHUNK], r[2 * CHUNK];
	int rc = run_once(comm, c->rank, 2 * CHUNK, FTL_SUM, 1, 0, 0, a, r) != FTL_OK || comm->async != NULL;
	rc |= run_once(comm, c->rank, 2 * CHUNK, FTL_SUM, 1, 0, CHUNK, a, r) != FTL_OK || comm->async == NULL;
	if (rc)
		fprintf(stderr, "rank %d: the one pass made requests, or the chunked call made none\n", c->rank);
	rc |= same_bits_under(comm, c, FTL_COMM_TCP_ALGO_DOUBLING);
	rc |= same_bits_under(comm, c, FTL_COMM_TCP_ALGO_HALVING);
	if (c->n == 2)
		rc |= same_bits_under(comm, c, FTL_COMM_TCP_ALGO_RING);
	if (c->rank == 0)
		printf("{\"test\":\"bf16_chunked_same_bits\",\"world\":%d,\"chunk\":%d,\"counts\":%zu,\"ok\":%s}\n", c->n,
		       CHUNK, N_COUNTS, rc ? "false" : "true");
	ftl_comm_delete(comm);
	return rc;
}

/* How a failure test stops one rank, and what the others must see. */
struct stop_case {
	int sig;
	int timeout_ms;
	ftl_err want;
	int64_t within_ms; /* of the signal */
	const char *name;
};

static int loop_child(struct harness_child *c)
{
	const struct stop_case *sc = c->arg;
	ftl_comm *comm = harness_comm_all(c, 1, sc->timeout_ms);
	if (comm == NULL)
		return 1;
	size_t count = 64 * CHUNK;
	float *x = harness_xmalloc(count * 4), *out = harness_xmalloc(count * 4), *residual = calloc(count, 4);
	for (size_t i = 0; i < count; i++)
		x[i] = input(c->rank, i);
	ftl_comm_bf16_set_chunk(comm, CHUNK);
	ftl_err e = FTL_OK;
	int64_t started = 0;
	for (long k = 0; e == FTL_OK && k < 1000000; k++) {
		if (k == 1)
			harness_report(c, REP_LOOPING, 0, 0);
		started = harness_now_ns();
		e = harness_allreduce_bf16(comm, x, out, count, FTL_SUM, residual);
	}
	int64_t call_ms = (harness_now_ns() - started) / 1000000;
	int pending = ftl_comm_async_pending(comm);
	ftl_err again = harness_allreduce_bf16(comm, x, out, count, FTL_SUM, residual);
	fprintf(stderr, "rank %d: %s after %lld ms, %d requests left, then %s: %s\n", c->rank, ftl_strerror(e),
		(long long)call_ms, pending, ftl_strerror(again), ftl_comm_error(comm));
	harness_report(c, REP_FAILED, e, pending == 0 && again == e ? call_ms : -1);
	free(x);
	free(out);
	free(residual);
	if (e == FTL_ERR_TIMEOUT)
		harness_sleep_ms(500); /* neighbours still waiting for their own deadline */
	ftl_comm_delete(comm);
	return 0;
}

static int failure_test(int n, const struct stop_case *sc)
{
	int victim = n / 2, looping = 0, failed = 0, bad = 0;
	struct harness h;
	if (harness_start(&h, n, 90, loop_child, (void *)sc) != 0)
		return 1;
	int64_t t_signal = 0;
	struct harness_report rep;
	while (failed < n - 1 && harness_read(&h, &rep) == 0) {
		if (rep.kind == REP_LOOPING && ++looping == n) {
			harness_sleep_ms(150);
			t_signal = harness_now_ns();
			harness_signal(&h, victim, sc->sig);
			continue;
		}
		if (rep.kind != REP_FAILED)
			continue;
		int64_t ms = (rep.t_ns - t_signal) / 1000000;
		printf("{\"test\":\"%s\",\"world\":%d,\"rank\":%d,\"error\":\"%s\",\"ms_after_signal\":%lld,"
		       "\"failed_call_ms\":%lld}\n", sc->name, n, rep.rank, ftl_strerror(rep.err), (long long)ms,
		       (long long)rep.value);
		if (t_signal == 0 || rep.err != (int)sc->want || rep.value < 0 || ms > sc->within_ms) {
			fprintf(stderr, "rank %d: wanted %s within %lld ms, no request left, refused after\n", rep.rank,
				ftl_strerror(sc->want), (long long)sc->within_ms);
			bad++;
		}
		failed++;
	}
	harness_signal(&h, victim, SIGKILL);
	bad += failed != n - 1;
	return (bad + harness_wait(&h, 1u << victim)) != 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(what, "same") == 0) {
		struct harness h;
		if (harness_start(&h, n, 150, same_child, NULL) != 0)
			return 1;
		return harness_wait(&h, 0) != 0;
	}
	static const struct stop_case killed = {SIGKILL, 20000, FTL_ERR_PEER_LOST, HARNESS_PEER_LOST_MS, "bf16_chunked_kill9"};
	static const struct stop_case stopped = {SIGSTOP, 1500, FTL_ERR_TIMEOUT, 1500 + 3000, "bf16_chunked_sigstop"};
	if (strcmp(what, "kill") == 0)
		return failure_test(n, &killed);
	if (strcmp(what, "stop") == 0)
		return failure_test(n, &stopped);
	fprintf(stderr, "usage: %s same|kill|stop [world size]\n", argv[0]);
	return 2;
}
