/* test_comm_async: asynchronous allreduce on the tcp backend, as real processes on loopback:
 *   order N   requests_complete_in_order_with_correct_results: a batch of outstanding requests of every
 *             algorithm's size (doubling, halving, ring), dtypes and ops, in place and not, with blocking
 *             calls made while they are outstanding (queued behind them); every result against the f64
 *             reference; once request k is done, every earlier one tests done; wait and test refuse a
 *             consumed or foreign request; destroy with requests outstanding neither hangs nor leaks
 *   kill N    all_outstanding_fail_together_when_a_peer_is_killed: kill -9 of one rank while every rank
 *             keeps a window of requests outstanding: on each survivor the first failed request says peer
 *             lost within 2 s, and every later outstanding request is already done with the same error
 *   stop N    the same with SIGSTOP: the running request times out at its deadline, the rest with it
 *   abort     abort_from_another_thread_fails_every_outstanding_request: within 100 ms, all ABORTED;
 *             the next call is refused at once with the same error
 * Figures are printed as JSON lines. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "refdata.h"

enum { REP_LOOPING = 1, REP_FAILED, REP_ABORT_US };

#define WINDOW 6 /* requests a failure test keeps outstanding */


/* --- order --- */

struct order_case {
	ftl_dtype dtype;
	ftl_reduce_op op;
	size_t count;
	int is_in_place;
};

static const struct order_case order_cases[] = {
	{FTL_F32, FTL_SUM, 1000, 0},        /* 4 KB: doubling */
	{FTL_F64, FTL_MAX, 8192, 1},        /* 64 KB: doubling */
	{FTL_I32, FTL_SUM, 0, 0},           /* nothing: still completes in order */
	{FTL_F32, FTL_AVG, 1u << 18, 0},    /* 1 MB: halving */
	{FTL_BF16, FTL_SUM, 77777, 1},      /* odd count, in place */
	{FTL_F32, FTL_SUM, 3u << 20, 0},    /* 12 MB: ring */
	{FTL_I64, FTL_MIN, 12345, 0},
	{FTL_F32, FTL_SUM, 1, 1},
};
#define N_ORDER (sizeof(order_cases) / sizeof(order_cases[0]))

static int order_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	int rc = 0, n = c->n;
	char why[256];
	for (int round = 0; round < 3; round++) {
		ftl_comm_request *req[N_ORDER];
		char *send[N_ORDER], *recv[N_ORDER];
		for (size_t i = 0; i < N_ORDER; i++) {
			const struct order_case *k = &order_cases[i];
			size_t bytes = k->count * ftl_dtype_size(k->dtype);
			send[i] = harness_xmalloc(bytes);
			recv[i] = k->is_in_place ? send[i] : harness_xmalloc(bytes);
			ref_fill(send[i], k->dtype, 100 + i + (size_t)round, c->rank, k->count);
			ftl_err e = ftl_comm_allreduce(comm, send[i], recv[i], k->count, k->dtype, k->op, NULL, &req[i]);
			if (e != FTL_OK || req[i] == NULL) {
				fprintf(stderr, "rank %d: submit %zu: %s\n", c->rank, i, ftl_comm_error(comm));
				return 1;
			}
			if (i == 3) { /* a blocking call while requests are outstanding runs after them */
				int64_t one = 1, sum = 0;
				ftl_err b = ftl_comm_allreduce(comm, &one, &sum, 1, FTL_I64, FTL_SUM, NULL, NULL);
				if (b != FTL_OK || sum != n) {
					fprintf(stderr, "rank %d: blocking call among requests: %s, %lld\n", c->rank,
						ftl_strerror(b), (long long)sum);
					rc = 1;
				}
				/* ... so everything before it is done already. */
				for (size_t j = 0; j <= i; j++) {
					int done = 0;
					if (ftl_comm_test(comm, &req[j], &done) != FTL_OK || done != 1 || req[j] != NULL) {
						fprintf(stderr, "rank %d: request %zu not done after a later blocking call\n",
							c->rank, j);
						rc = 1;
					}
				}
			}
		}
		/* Round 0 waits the last one first: all earlier must then test done. Others wait in order. */
		size_t last = N_ORDER - 1;
		if (round == 0 && ftl_comm_wait(comm, &req[last]) != FTL_OK) {
			fprintf(stderr, "rank %d: wait last: %s\n", c->rank, ftl_comm_error(comm));
			rc = 1;
		}
		for (size_t i = 4; i < N_ORDER; i++) {
			if (req[i] == NULL)
				continue;
			ftl_err e;
			if (round == 0) {
				int done = 0;
				e = ftl_comm_test(comm, &req[i], &done);
				if (done != 1) {
					fprintf(stderr, "rank %d: request %zu not done after a later one\n", c->rank, i);
					rc = 1;
					e = ftl_comm_wait(comm, &req[i]);
				}
			} else if (round == 1) { /* poll */
				int done = 0;
				while ((e = ftl_comm_test(comm, &req[i], &done)) == FTL_OK && !done)
					harness_sleep_ms(1);
			} else {
				e = ftl_comm_wait(comm, &req[i]);
			}
			if (e != FTL_OK || req[i] != NULL) {
				fprintf(stderr, "rank %d: request %zu: %s\n", c->rank, i, ftl_comm_error(comm));
				rc = 1;
			}
		}
		for (size_t i = 0; i < N_ORDER; i++) {
			const struct order_case *k = &order_cases[i];
			if (ref_check_allreduce(recv[i], k->dtype, k->op, 100 + i + (size_t)round, n, k->count, why,
						sizeof(why)) != 0) {
				fprintf(stderr, "rank %d round %d: request %zu (%s %s count %zu): %s\n", c->rank, round, i,
					ftl_dtype_strs[k->dtype], ftl_reduce_op_strs[k->op], k->count, why);
				rc = 1;
			}
			if (!k->is_in_place)
				free(recv[i]);
			free(send[i]);
		}
	}
	/* A consumed request and a NULL one are refused, not crashed on. */
	ftl_comm_request *gone = NULL;
	rc |= ftl_comm_wait(comm, &gone) != FTL_ERR_INVALID;
	int done = 7;
	rc |= ftl_comm_test(comm, &gone, &done) != FTL_ERR_INVALID || done != 0;
	/* Destroy with requests outstanding: aborts them, frees them, returns. (A faster rank may have destroyed
	 * its communicator already, so ours may be broken and refuse the later ones: not checked.) */
	static float big[1u << 20];
	ftl_comm_request *left[3];
	for (int i = 0; i < 3; i++)
		(void)ftl_comm_allreduce(comm, big, big, 1u << 20, FTL_F32, FTL_SUM, NULL, &left[i]);
	ftl_comm_delete(comm);
	return rc;
}

/* --- kill / stop --- */

struct scenario {
	int victim;
	int timeout_ms;
	size_t count;
};

static int loop_child(struct harness_child *c)
{
	const struct scenario *sc = c->arg;
	ftl_comm *comm = harness_comm_all(c, 1, sc->timeout_ms);
	if (comm == NULL)
		return 1;
	float *send[WINDOW], *recv[WINDOW];
	ftl_comm_request *req[WINDOW] = {0};
	for (int i = 0; i < WINDOW; i++) {
		send[i] = harness_xmalloc(sc->count * 4);
		recv[i] = harness_xmalloc(sc->count * 4);
		ref_fill(send[i], FTL_F32, 5, c->rank, sc->count);
	}
	ftl_err e = FTL_OK;
	int rc = 0;
	long made = 0, waited = 0;
	/* Keep WINDOW outstanding: wait the oldest, make a new one in its slot. */
	for (; made < WINDOW; made++)
		rc |= ftl_comm_allreduce(comm, send[made], recv[made], sc->count, FTL_F32, FTL_SUM, NULL, &req[made]);
	int64_t started = harness_now_ns();
	for (; e == FTL_OK && waited < 200000; waited++) {
		int slot = (int)(waited % WINDOW);
		if (waited == WINDOW)
			harness_report(c, REP_LOOPING, 0, 0);
		started = harness_now_ns();
		e = ftl_comm_wait(comm, &req[slot]);
		/* The break may come between this wait and the next request: then the request is refused at
		 * once with the sticky error, which is this rank's failure like any other. */
		if (e == FTL_OK)
			e = ftl_comm_allreduce(comm, send[slot], recv[slot], sc->count, FTL_F32, FTL_SUM, NULL, &req[slot]);
	}
	int64_t op_ms = (harness_now_ns() - started) / 1000000;
	/* The rest fail with the same error, the sticky one: done already, or, for the one request the progress
	 * thread is running when a new request was refused (the break came between a wait and the next
	 * request: the refusal reads the sticky error the running call has just set, before that call returns
	 * and fails the queue), as soon as that call returns. Never one by one through a deadline. */
	int together = 0, outstanding = 0;
	for (int k = 0; k < WINDOW; k++) {
		int slot = (int)((waited + k) % WINDOW);
		if (req[slot] == NULL)
			continue;
		outstanding++;
		int done = 0;
		ftl_err r = ftl_comm_test(comm, &req[slot], &done);
		if (!done)
			r = ftl_comm_wait(comm, &req[slot]);
		if (r == e)
			together++;
		else
			fprintf(stderr, "rank %d: outstanding request: done %d, %s (first failed with %s)\n", c->rank, done,
				ftl_strerror(r), ftl_strerror(e));
	}
	fprintf(stderr, "rank %d: %s after %lld ms, %d of %d outstanding failed with it: %s\n", c->rank,
		ftl_strerror(e), (long long)op_ms, together, outstanding, ftl_comm_error(comm));
	harness_report(c, REP_FAILED, e, op_ms * 1000 + (together == outstanding ? outstanding : 999));
	/* Refused at once from now on. */
	ftl_comm_request *more = NULL;
	rc |= ftl_comm_allreduce(comm, send[0], recv[0], sc->count, FTL_F32, FTL_SUM, NULL, &more) != e || more != NULL;
	for (int i = 0; i < WINDOW; i++) {
		free(send[i]);
		free(recv[i]);
	}
	if (e == FTL_ERR_TIMEOUT)
		harness_sleep_ms(500); /* neighbours still waiting for their own deadline */
	ftl_comm_delete(comm);
	return rc;
}

static int failure_test(int n, int sig, ftl_err want)
{
	struct scenario sc = {.victim = n / 2, .timeout_ms = sig == SIGSTOP ? 1500 : 20000, .count = 1u << 18};
	struct harness h;
	if (harness_start(&h, n, 90, loop_child, &sc) != 0)
		return 1;
	int looping = 0, failed = 0, bad = 0;
	int64_t t_sig = 0;
	struct harness_report rep;
	const char *name = sig == SIGSTOP ? "async_sigstop" : "async_kill9";
	while (failed < n - 1 && harness_read(&h, &rep) == 0) {
		if (rep.kind == REP_LOOPING && ++looping == n) {
			harness_sleep_ms(150);
			t_sig = harness_now_ns();
			harness_signal(&h, sc.victim, sig);
		} else if (rep.kind == REP_FAILED) {
			int64_t ms = (rep.t_ns - t_sig) / 1000000, call_ms = rep.value / 1000, together = rep.value % 1000;
			printf("{\"test\":\"%s\",\"world\":%d,\"rank\":%d,\"error\":\"%s\",\"ms_after_signal\":%lld,"
			       "\"failed_wait_ms\":%lld,\"outstanding_failed_with_it\":%lld}\n", name, n, rep.rank,
			       ftl_strerror(rep.err), (long long)ms, (long long)call_ms, (long long)together);
			if (rep.rank == sc.victim || t_sig == 0 || rep.err != (int)want || together == 999) {
				fprintf(stderr, "rank %d: wanted %s for all, got %s\n", rep.rank, ftl_strerror(want),
					ftl_strerror(rep.err));
				bad++;
			}
			if (ms > (sig == SIGSTOP ? sc.timeout_ms + 3000 : HARNESS_PEER_LOST_MS)) {
				fprintf(stderr, "rank %d: failure took %lld ms after the signal\n", rep.rank, (long long)ms);
				bad++;
			}
			failed++;
		}
	}
	harness_signal(&h, sc.victim, SIGKILL);
	bad += failed != n - 1;
	bad += harness_wait(&h, 1u << sc.victim);
	return bad != 0;
}

/* --- abort --- */

static void *abort_later(void *p)
{
	harness_sleep_ms(300);
	int64_t *t = malloc(sizeof(*t));
	*t = harness_now_ns();
	ftl_comm_abort(p);
	return t;
}

/* Reads the diagnostic over and over while the progress thread fails the requests and writes it: ftl_comm_error
 * is for any thread (a TSan build reports the race if it reads without the lock the writer holds). */
struct error_reader {
	ftl_comm *comm;
	atomic_int is_done;
	unsigned long reads;
};

static void *read_errors(void *p)
{
	struct error_reader *r = p;
	while (!atomic_load(&r->is_done)) {
		r->reads += strlen(ftl_comm_error(r->comm)) > 0;
		sched_yield();
	}
	return NULL;
}

static int abort_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	size_t count = 1u << 18;
	float *buf = harness_xmalloc(count * 4 * WINDOW);
	ref_fill(buf, FTL_F32, 9, c->rank, count * WINDOW);
	int rc = 0;
	if (c->rank == 0) { /* rank 1 is not there yet: the first request blocks; another thread aborts */
		ftl_comm_request *req[WINDOW];
		for (int i = 0; i < WINDOW; i++)
			rc |= ftl_comm_allreduce(comm, buf + i * count, buf + i * count, count, FTL_F32, FTL_SUM, NULL,
						       &req[i]) != FTL_OK;
		pthread_t th, reader;
		struct error_reader errors = {.comm = comm};
		pthread_create(&reader, NULL, read_errors, &errors);
		pthread_create(&th, NULL, abort_later, comm);
		ftl_err e = ftl_comm_wait(comm, &req[WINDOW - 1]); /* the last: done when the first fails */
		int64_t t_ret = harness_now_ns();
		void *t_abort;
		pthread_join(th, &t_abort);
		atomic_store(&errors.is_done, 1);
		pthread_join(reader, NULL);
		int64_t us = (t_ret - *(int64_t *)t_abort) / 1000;
		free(t_abort);
		for (int i = 0; i < WINDOW - 1; i++) {
			int done = 0;
			ftl_err r = ftl_comm_test(comm, &req[i], &done);
			rc |= !done || r != FTL_ERR_ABORTED;
		}
		fprintf(stderr, "rank 0: %s %lld us after abort: %s\n", ftl_strerror(e), (long long)us, ftl_comm_error(comm));
		harness_report(c, REP_ABORT_US, e, us);
		rc |= e != FTL_ERR_ABORTED;
		ftl_comm_request *more = NULL;
		rc |= ftl_comm_allreduce(comm, buf, buf, count, FTL_F32, FTL_SUM, NULL, &more) != FTL_ERR_ABORTED;
		rc |= ftl_comm_barrier(comm) != FTL_ERR_ABORTED;
	} else {
		harness_sleep_ms(800);
		ftl_err e = ftl_comm_allreduce(comm, buf, buf, count, FTL_F32, FTL_SUM, NULL, NULL);
		fprintf(stderr, "rank 1: %s: %s\n", ftl_strerror(e), ftl_comm_error(comm));
		rc |= e != FTL_ERR_PEER_LOST;
	}
	free(buf);
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
	if (harness_read(&h, &rep) == 0) {
		printf("{\"test\":\"async_abort\",\"error\":\"%s\",\"last_request_us_after_abort\":%lld}\n",
		       ftl_strerror(rep.err), (long long)rep.value);
		bad += rep.value > 100000;
	} else {
		bad++;
	}
	return (bad + harness_wait(&h, 0)) != 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(what, "order") == 0) {
		struct harness h;
		if (harness_start(&h, n, 150, order_child, NULL) != 0)
			return 1;
		return harness_wait(&h, 0) != 0;
	}
	if (strcmp(what, "kill") == 0)
		return failure_test(n, SIGKILL, FTL_ERR_PEER_LOST);
	if (strcmp(what, "stop") == 0)
		return failure_test(n, SIGSTOP, FTL_ERR_TIMEOUT);
	if (strcmp(what, "abort") == 0)
		return abort_test();
	fprintf(stderr, "usage: %s order|kill|stop|abort [world size]\n", argv[0]);
	return 2;
}
