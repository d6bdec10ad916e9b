/* test_comm_p2p: point-to-point batches and the all-to-all on the tcp backend, as real processes.
 *
 *   exchange N   every pattern against reference data: a ring shift in one batch (both ways round, every
 *                dtype, sizes from 0 bytes to past the socket buffers), several messages to one peer in
 *                order, one rank to each of the others in batches of one, the all-to-all with equal and
 *                uneven counts; and an allreduce between them, whose order the messages must not disturb
 *   mismatch 2   a receive of another size than the send: the receiver fails with FTL_ERR_INVALID and the
 *                reason, the sender at its next call, and neither hangs
 *   kill N       kill -9 of a rank while the others exchange 64 MiB with it in a batch: every survivor fails
 *                with FTL_ERR_PEER_LOST within HARNESS_PEER_LOST_MS
 *   nolistener 2 a communicator made without a listener it keeps: the higher rank's p2p is refused at once
 *                (FTL_ERR_UNSUPPORTED, the communicator still usable) and the lower one's times out
 *   abort 2      ftl_comm_abort from another thread wakes a batch that waits for a message
 *   split 3      ftl_comm_split: ranks 0 and 2 apart, rank 1 alone, the parent still right; bad lists refused
 * Ranks report through the harness; the parent checks and prints one JSON line per figure. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "refdata.h"

enum { REP_READY = 1, REP_FAILED };

static int complain(int rank, const char *what, const char *why)
{
	fprintf(stderr, "rank %d: %s: %s\n", rank, what, why);
	return 1;
}

/* A batch and its result, with the communicator's reason when it failed. */
static int batch(ftl_comm *comm, const ftl_p2p_op *ops, int n, const char *what)
{
	ftl_err e = ftl_comm_p2p(comm, ops, n);
	return e == FTL_OK ? 0 : complain(ftl_comm_rank(comm), what, ftl_comm_error(comm));
}

/* A ring shift by `by` (1: send to rank + 1, receive from rank - 1) of count elements of dtype. */
static int shift(ftl_comm *comm, int by, ftl_dtype dt, size_t count, uint64_t seed)
{
	int r = ftl_comm_rank(comm), n = ftl_comm_world_size(comm);
	size_t bytes = count * ftl_dtype_size(dt);
	char *send = harness_xmalloc(bytes + 1), *recv = harness_xmalloc(bytes + 1), why[160];
	ref_fill(send, dt, seed, r, count);
	int to = (r + by + n) % n, from = (r - by + n) % n;
	ftl_p2p_op ops[2] = {{.is_recv = 1, .peer = from, .buf = recv, .count = count, .dtype = dt},
			     {.is_recv = 0, .peer = to, .buf = send, .count = count, .dtype = dt}};
	int rc = batch(comm, ops, 2, "shift");
	if (rc == 0 && ref_check_block(recv, dt, seed, from, count, why, sizeof(why)) != 0)
		rc = complain(r, "shift", why);
	free(send);
	free(recv);
	return rc;
}

/* Three messages to next in one batch, of three sizes: they arrive in order, each where it belongs. */
static int in_order(ftl_comm *comm, uint64_t seed)
{
	int r = ftl_comm_rank(comm), n = ftl_comm_world_size(comm);
	const size_t counts[3] = {5, 70000, 0};
	int64_t *out[3], *in[3];
	ftl_p2p_op ops[6];
	for (int k = 0; k < 3; k++) {
		out[k] = harness_xmalloc(counts[k] * 8 + 8);
		in[k] = harness_xmalloc(counts[k] * 8 + 8);
		ref_fill(out[k], FTL_I64, seed + (uint64_t)k, r, counts[k]);
		ops[k] = (ftl_p2p_op){.is_recv = 0, .peer = (r + 1) % n, .buf = out[k], .count = counts[k], .dtype = FTL_I64};
		ops[3 + k] = (ftl_p2p_op){.is_recv = 1, .peer = (r + n - 1) % n, .buf = in[k], .count = counts[k],
					  .dtype = FTL_I64};
	}
	int rc = batch(comm, ops, 6, "in order");
	char why[160];
	for (int k = 0; k < 3; k++) {
		if (rc == 0 && ref_check_block(in[k], FTL_I64, seed + (uint64_t)k, (r + n - 1) % n, counts[k], why,
					       sizeof(why)) != 0)
			rc = complain(r, "in order", why);
		free(out[k]);
		free(in[k]);
	}
	return rc;
}

/* Rank 0 sends each other rank its own message, one batch of one op at a time; the others receive. */
static int fan_out(ftl_comm *comm, uint64_t seed)
{
	int r = ftl_comm_rank(comm), n = ftl_comm_world_size(comm), rc = 0;
	size_t count = 3000;
	float *buf = harness_xmalloc(count * 4);
	char why[160];
	for (int q = 1; q < n && rc == 0; q++) {
		if (r == 0) {
			ref_fill(buf, FTL_F32, seed + (uint64_t)q, 0, count);
			ftl_p2p_op op = {.is_recv = 0, .peer = q, .buf = buf, .count = count, .dtype = FTL_F32};
			rc = batch(comm, &op, 1, "fan out (send)");
		} else if (r == q) {
			ftl_p2p_op op = {.is_recv = 1, .peer = 0, .buf = buf, .count = count, .dtype = FTL_F32};
			rc = batch(comm, &op, 1, "fan out (recv)");
			if (rc == 0 && ref_check_block(buf, FTL_F32, seed + (uint64_t)q, 0, count, why, sizeof(why)) != 0)
				rc = complain(r, "fan out", why);
		}
	}
	free(buf);
	return rc;
}

/* The all-to-all: block q of rank r is ref data of (seed, r * n + q); counts uneven when is_uneven. */
static int all_to_all(ftl_comm *comm, bool is_uneven, uint64_t seed)
{
	int r = ftl_comm_rank(comm), n = ftl_comm_world_size(comm), rc = 0;
	size_t send_counts[HARNESS_MAX], recv_counts[HARNESS_MAX], total_send = 0, total_recv = 0, each = 1000;
	for (int q = 0; q < n; q++) {
		send_counts[q] = is_uneven ? (size_t)(r * 7 + q * 3 + (q == 1) * 40000) : each;
		recv_counts[q] = is_uneven ? (size_t)(q * 7 + r * 3 + (r == 1) * 40000) : each;
		total_send += send_counts[q];
		total_recv += recv_counts[q];
	}
	int32_t *send = harness_xmalloc(total_send * 4 + 4), *recv = harness_xmalloc(total_recv * 4 + 4);
	for (int q = 0, at = 0; q < n; at += (int)send_counts[q], q++)
		ref_fill(send + at, FTL_I32, seed, r * n + q, send_counts[q]);
	ftl_err e = ftl_comm_alltoall(comm, send, is_uneven ? send_counts : NULL, recv, is_uneven ? recv_counts : NULL,
				      each, FTL_I32);
	if (e != FTL_OK)
		rc = complain(r, "alltoall", ftl_comm_error(comm));
	char why[160];
	for (int q = 0, at = 0; q < n && rc == 0; at += (int)recv_counts[q], q++)
		if (ref_check_block(recv + at, FTL_I32, seed, q * n + r, recv_counts[q], why, sizeof(why)) != 0)
			rc = complain(r, is_uneven ? "alltoall (uneven)" : "alltoall", why);
	free(send);
	free(recv);
	return rc;
}

/* An allreduce between the messages: the collectives' own order is not disturbed by them. */
static int allreduce_still_right(ftl_comm *comm, uint64_t seed)
{
	size_t count = 4099;
	float *buf = harness_xmalloc(count * 4);
	char why[160];
	ref_fill(buf, FTL_F32, seed, ftl_comm_rank(comm), count);
	int rc = ftl_comm_allreduce(comm, buf, buf, count, FTL_F32, FTL_SUM, NULL, NULL) != FTL_OK
			 ? complain(ftl_comm_rank(comm), "allreduce", ftl_comm_error(comm))
			 : ref_check_allreduce(buf, FTL_F32, FTL_SUM, seed, ftl_comm_world_size(comm), count, why,
					       sizeof(why)) != 0 ? complain(ftl_comm_rank(comm), "allreduce", why) : 0;
	free(buf);
	return rc;
}

static int exchange_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 30000);
	if (comm == NULL)
		return 1;
	const size_t sizes[] = {0, 1, 3, 1000, 65537, (size_t)3 << 20}; /* the last is past the socket buffers */
	uint64_t seed = 1;
	int rc = allreduce_still_right(comm, seed++);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && rc == 0; s++)
		for (int dt = 0; dt < FTL_DTYPE_MAX && rc == 0; dt++) {
			size_t count = sizes[s] / (s + 1 == sizeof(sizes) / sizeof(sizes[0]) ? ftl_dtype_size((ftl_dtype)dt) : 1);
			rc = shift(comm, 1, (ftl_dtype)dt, count, seed);
			rc |= shift(comm, -1, (ftl_dtype)dt, count, seed + 1);
			seed += 2;
		}
	rc = rc ? rc : in_order(comm, seed++);
	rc = rc ? rc : allreduce_still_right(comm, seed++);
	rc = rc ? rc : fan_out(comm, seed++);
	rc = rc ? rc : all_to_all(comm, false, seed++);
	rc = rc ? rc : all_to_all(comm, true, seed++);
	rc = rc ? rc : allreduce_still_right(comm, seed++);
	if (rc == 0 && ftl_comm_barrier(comm) != FTL_OK)
		rc = complain(c->rank, "barrier", ftl_comm_error(comm));
	ftl_comm_delete(comm);
	return rc;
}

/* --- mismatch --- */

static int mismatch_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 10000);
	if (comm == NULL)
		return 1;
	float buf[100] = {0};
	ftl_p2p_op op = {.is_recv = c->rank == 1, .peer = 1 - c->rank, .buf = buf, .count = c->rank == 1 ? 50 : 100,
			 .dtype = FTL_F32};
	ftl_err e = ftl_comm_p2p(comm, &op, 1);
	int rc = 0;
	if (c->rank == 1) {
		rc |= e != FTL_ERR_INVALID || strstr(ftl_comm_error(comm), "mismatched point-to-point") == NULL;
		fprintf(stderr, "rank 1: %s: %s\n", ftl_strerror(e), ftl_comm_error(comm));
	} else {
		ftl_err later = e == FTL_OK ? ftl_comm_barrier(comm) : e; /* its send went out; the next call learns */
		rc |= later == FTL_OK;
		fprintf(stderr, "rank 0: send %s, then %s: %s\n", ftl_strerror(e), ftl_strerror(later), ftl_comm_error(comm));
	}
	ftl_comm_delete(comm);
	return rc;
}

/* --- kill -9 --- */

static int kill_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	int victim = c->n / 2;
	size_t count = (size_t)16 << 20; /* 64 MiB of f32 each way: still moving when the victim dies */
	float *out = harness_xmalloc(count * 4), *in = harness_xmalloc(count * 4);
	memset(out, 0, count * 4);
	harness_report(c, REP_READY, 0, 0);
	ftl_err e = FTL_OK;
	for (int round = 0; round < 1000 && e == FTL_OK; round++) {
		if (c->rank == victim) {
			ftl_p2p_op ops[2 * HARNESS_MAX];
			int k = 0;
			for (int q = 0; q < c->n; q++)
				if (q != victim) {
					ops[k++] = (ftl_p2p_op){.is_recv = 1, .peer = q, .buf = in, .count = count, .dtype = FTL_F32};
					ops[k++] = (ftl_p2p_op){.is_recv = 0, .peer = q, .buf = out, .count = count, .dtype = FTL_F32};
				}
			e = ftl_comm_p2p(comm, ops, k);
		} else {
			ftl_p2p_op ops[2] = {{.is_recv = 0, .peer = victim, .buf = out, .count = count, .dtype = FTL_F32},
					     {.is_recv = 1, .peer = victim, .buf = in, .count = count, .dtype = FTL_F32}};
			e = ftl_comm_p2p(comm, ops, 2);
		}
	}
	fprintf(stderr, "rank %d: %s: %s\n", c->rank, ftl_strerror(e), ftl_comm_error(comm));
	harness_report(c, REP_FAILED, e, 0);
	free(out);
	free(in);
	ftl_comm_delete(comm);
	return 0;
}

static int kill_test(int n)
{
	struct harness h;
	if (harness_start(&h, n, 120, kill_child, NULL) != 0)
		return 1;
	int victim = n / 2, ready = 0, failed = 0, bad = 0;
	int64_t t_kill = 0;
	struct harness_report rep;
	while (failed < n - 1 && harness_read(&h, &rep) == 0) {
		if (rep.kind == REP_READY && ++ready == n) {
			harness_sleep_ms(300);
			t_kill = harness_now_ns();
			harness_signal(&h, victim, SIGKILL);
		} else if (rep.kind == REP_FAILED) {
			int64_t ms = (rep.t_ns - t_kill) / 1000000;
			printf("{\"test\":\"p2p_kill9\",\"world\":%d,\"rank\":%d,\"error\":\"%s\",\"ms_after_kill\":%lld}\n", n,
			       rep.rank, ftl_strerror(rep.err), (long long)ms);
			bad += t_kill == 0 || rep.err != FTL_ERR_PEER_LOST || ms > HARNESS_PEER_LOST_MS;
			failed++;
		}
	}
	bad += failed != n - 1;
	bad += harness_wait(&h, 1u << victim);
	return bad != 0;
}

/* --- split --- */

/* Ranks 2 and 0 split off a communicator of their own (in that order: 2 is its rank 0), rank 1 one alone;
 * their collectives and the parent's go on side by side; a list without this rank, or with a rank twice,
 * is refused with a reason. */
static int split_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	int rc = 0;
	const int pair[2] = {2, 0}, alone[1] = {1}, twice[2] = {0, 0};
	ftl_comm *sub = NULL;
	rc |= ftl_comm_split(comm, twice, 2, NULL, &sub) != FTL_ERR_INVALID || sub != NULL;
	rc |= strstr(ftl_error_message(), "twice") == NULL;
	if (c->rank == 1)
		rc |= ftl_comm_split(comm, pair, 2, NULL, &sub) != FTL_ERR_INVALID; /* not in it */
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.listen_fd = c->listen_fd;
	cfg.timeout_ms = 20000;
	ftl_err e = c->rank == 1 ? ftl_comm_split(comm, alone, 1, &cfg, &sub) : ftl_comm_split(comm, pair, 2, &cfg, &sub);
	if (e != FTL_OK)
		return complain(c->rank, "split", ftl_error_message());
	float x = (float)(c->rank + 1);
	rc |= ftl_comm_allreduce(sub, &x, &x, 1, FTL_F32, FTL_SUM, NULL, NULL) != FTL_OK;
	rc |= x != (c->rank == 1 ? 2.0f : 4.0f); /* 1 + 3 for ranks 0 and 2 */
	rc |= ftl_comm_rank(sub) != (c->rank == 0 ? 1 : 0);
	rc |= allreduce_still_right(comm, 77); /* the parent, after its split */
	if (rc)
		fprintf(stderr, "rank %d: split: sum %g, %s / %s\n", c->rank, (double)x, ftl_comm_error(sub), ftl_comm_error(comm));
	ftl_comm_delete(sub);
	ftl_comm_delete(comm);
	return rc;
}

/* --- no listener --- */

static int nolistener_child(struct harness_child *c)
{
	int members[2] = {0, 1};
	struct ftl_comm_config cfg;
	char boot[HARNESS_BOOT_MAX];
	harness_comm_config(c, members, 2, 1, 1500, &cfg, boot, sizeof(boot));
	close(c->listen_fd); /* the communicator binds its address for the handshake only */
	cfg.listen_fd = -1;
	harness_sleep_ms(300); /* until the parent has closed its copy of the listener (after the last fork) */
	ftl_comm *comm;
	if (ftl_comm_new(&cfg, &comm) != FTL_OK)
		return complain(c->rank, "create", ftl_error_message());
	float x[4] = {0};
	ftl_p2p_op op = {.is_recv = c->rank == 1, .peer = 1 - c->rank, .buf = x, .count = 4, .dtype = FTL_F32};
	ftl_err e = ftl_comm_p2p(comm, &op, 1);
	fprintf(stderr, "rank %d: %s: %s\n", c->rank, ftl_strerror(e), ftl_comm_error(comm));
	int rc = c->rank == 1 ? e != FTL_ERR_UNSUPPORTED || strstr(ftl_comm_error(comm), "listen") == NULL
			      : e != FTL_ERR_TIMEOUT;
	if (c->rank == 1) { /* refused, not broken: the allreduce with rank 0 fails only when rank 0 has given up */
		harness_sleep_ms(2500);
		rc |= ftl_comm_barrier(comm) == FTL_OK;
	}
	ftl_comm_delete(comm);
	return rc;
}

/* --- abort --- */

static void *abort_later(void *comm)
{
	harness_sleep_ms(300);
	ftl_comm_abort(comm);
	return NULL;
}

static int abort_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	float x[4];
	int rc = 0;
	if (c->rank == 0) { /* waits for a message that rank 1 never sends */
		ftl_p2p_op op = {.is_recv = 1, .peer = 1, .buf = x, .count = 4, .dtype = FTL_F32};
		pthread_t th;
		pthread_create(&th, NULL, abort_later, comm);
		int64_t t0 = harness_now_ns();
		ftl_err e = ftl_comm_p2p(comm, &op, 1);
		int64_t ms = (harness_now_ns() - t0) / 1000000;
		pthread_join(th, NULL);
		fprintf(stderr, "rank 0: %s after %lld ms: %s\n", ftl_strerror(e), (long long)ms, ftl_comm_error(comm));
		rc = e != FTL_ERR_ABORTED || ms > 5000;
	} else {
		harness_sleep_ms(1000);
		rc = ftl_comm_barrier(comm) != FTL_ERR_PEER_LOST; /* rank 0 aborted: its sockets shut */
	}
	ftl_comm_delete(comm);
	return rc;
}

static int run_all(int n, harness_child_fn fn, int limit_s)
{
	struct harness h;
	if (harness_start(&h, n, limit_s, fn, NULL) != 0)
		return 1;
	return harness_wait(&h, 0) != 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (n < 2 || n > HARNESS_MAX) {
		fprintf(stderr, "world size %d: 2..%d\n", n, HARNESS_MAX);
		return 2;
	}
	if (strcmp(what, "exchange") == 0)
		return run_all(n, exchange_child, 150);
	if (strcmp(what, "mismatch") == 0)
		return run_all(2, mismatch_child, 60);
	if (strcmp(what, "kill") == 0)
		return kill_test(n);
	if (strcmp(what, "split") == 0)
		return run_all(3, split_child, 60);
	if (strcmp(what, "nolistener") == 0)
		return run_all(2, nolistener_child, 60);
	if (strcmp(what, "abort") == 0)
		return run_all(2, abort_child, 60);
	fprintf(stderr, "usage: test_comm_p2p exchange|mismatch|kill|nolistener|abort|split [world size]\n");
	return 2;
}
