/* test_comm_nccl_async: asynchronous requests on the nccl backend, one GPU, one rank (every allreduce is
 * then a device copy, so each result is known exactly). The promises of ftl_comm_allreduce with a request:
 * - a chain of requests, each reading what the one before wrote, gives the input back: they ran in order;
 *   testing the last one done means every earlier one tests done at once, and a blocking call made
 *   among them returns after them;
 * - a stream held up (a host function that blocks it, standing in for a peer that stopped) makes the oldest
 *   request time out at its deadline and every other outstanding one fail with it, and the communicator
 *   stays broken;
 * - ftl_comm_abort from another thread does the same with "aborted", promptly.
 * Without a CUDA device it prints why and exits 77 (ctest SKIP). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "nccl_one_rank.h"

enum { N = 1 << 18, CHAIN = 8 };

static ftl_comm *make_comm(cudaStream_t stream, int timeout_ms)
{
	unsigned char id[FTL_COMM_NCCL_ID_LEN];
	struct ftl_comm_config cfg = nccl_one_rank_config(id, 0);
	cfg.timeout_ms = timeout_ms;
	cfg.cuda_stream = stream;
	ftl_comm *comm;
	if (ftl_comm_new(&cfg, &comm) != FTL_OK) {
		fprintf(stderr, "create: %s\n", ftl_error_message());
		exit(1);
	}
	return comm;
}

static void fill(float *host, float seed)
{
	for (int i = 0; i < N; i++)
		host[i] = seed + (float)(i % 977) * 0.25f;
}

/* buf[k + 1] = allreduce(buf[k]) for every k, all outstanding at once, plus a blocking call in the middle. */
static void check_order(void)
{
	ftl_comm *comm = make_comm(NULL, 20000);
	static float in[N], out[N];
	float *buf[CHAIN + 1];
	for (int k = 0; k <= CHAIN; k++) {
		CHECK(cudaMalloc((void **)&buf[k], N * sizeof(float)) == cudaSuccess);
		CHECK(cudaMemset(buf[k], 0, N * sizeof(float)) == cudaSuccess);
	}
	fill(in, 3.0f);
	nccl_one_rank_upload(buf[0], in, sizeof(in));
	ftl_comm_request *req[CHAIN];
	for (int k = 0; k < CHAIN; k++) {
		CHECK(ftl_comm_allreduce(comm, buf[k], buf[k + 1], N, FTL_F32, FTL_SUM, NULL, &req[k]) == FTL_OK);
		if (k == CHAIN / 2) /* a blocking call queues behind the requests made so far */
			CHECK(ftl_comm_barrier(comm) == FTL_OK);
	}
	int done = 0;
	int64_t t0 = ftl_comm_now_ms();
	while (!done && nccl_one_rank_failures == 0 && ftl_comm_now_ms() - t0 < 20000)
		CHECK(ftl_comm_test(comm, &req[CHAIN - 1], &done) == FTL_OK);
	CHECK(done == 1 && req[CHAIN - 1] == NULL);
	for (int k = 0; k < CHAIN - 1; k++) { /* in order: the earlier ones completed with the last */
		done = 0;
		CHECK(ftl_comm_test(comm, &req[k], &done) == FTL_OK);
		CHECK(done == 1 && req[k] == NULL);
	}
	CHECK(cudaMemcpy(out, buf[CHAIN], sizeof(out), cudaMemcpyDeviceToHost) == cudaSuccess);
	CHECK(memcmp(in, out, sizeof(in)) == 0);
	/* wait on each in turn, and a zero-count request, which only marks its place */
	for (int k = 0; k < CHAIN; k++)
		CHECK(ftl_comm_allreduce(comm, buf[k], buf[k + 1], k == 3 ? 0 : N, FTL_F32, FTL_MAX, NULL, &req[k]) == FTL_OK);
	for (int k = 0; k < CHAIN; k++)
		CHECK(ftl_comm_wait(comm, &req[k]) == FTL_OK && req[k] == NULL);
	if (nccl_one_rank_failures)
		fprintf(stderr, "order: last error: %s\n", ftl_comm_error(comm));
	ftl_comm_delete(comm);
	for (int k = 0; k <= CHAIN; k++)
		cudaFree(buf[k]);
}

/* A host function that holds the stream until the gate opens (or 30 s pass, so that a test gone wrong
 * ends rather than hangs: nothing can abort a host function). */
static atomic_int gate_open;

static void CUDART_CB hold_stream(void *arg)
{
	(void)arg;
	for (int ms = 0; !atomic_load(&gate_open) && ms < 30000; ms++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static _Atomic int64_t abort_at_ms;

static void *abort_soon(void *p)
{
	struct timespec ts = {0, 100 * 1000 * 1000};
	nanosleep(&ts, NULL);
	abort_at_ms = ftl_comm_now_ms();
	ftl_comm_abort(p);
	return NULL;
}

/* Three requests behind a held stream: the oldest fails (timeout or abort), all fail with it, at once. */
static void check_fail_together(bool is_abort)
{
	enum { TIMEOUT_MS = 400, OUTSTANDING = 3 };
	const char *name = is_abort ? "abort" : "timeout";
	cudaStream_t stream;
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
	ftl_comm *comm = make_comm(stream, is_abort ? 20000 : TIMEOUT_MS);
	float *buf;
	CHECK(cudaMalloc((void **)&buf, N * sizeof(float)) == cudaSuccess);
	/* Nothing else may wait on the whole device while the stream is held: NCCL's init and the teardown of
	 * an earlier communicator do (a cudaFree does), and a held stream would block them, and NCCL calls
	 * here behind them, until it moves. So the communicator is made ready and old teardowns finish first. */
	CHECK(ftl_comm_barrier(comm) == FTL_OK);
	CHECK(nccl_one_rank_drain_teardowns(30000) >= 0);
	atomic_store(&gate_open, 0);
	CHECK(cudaLaunchHostFunc(stream, hold_stream, NULL) == cudaSuccess);
	ftl_comm_request *req[OUTSTANDING];
	int64_t t0 = ftl_comm_now_ms();
	for (int k = 0; k < OUTSTANDING; k++)
		CHECK(ftl_comm_allreduce(comm, buf, buf, N, FTL_F32, FTL_SUM, NULL, &req[k]) == FTL_OK);
	int done = 1;
	CHECK(ftl_comm_test(comm, &req[0], &done) == FTL_OK && done == 0 && req[0] != NULL);
	pthread_t th;
	if (is_abort)
		pthread_create(&th, NULL, abort_soon, comm);
	ftl_err want = is_abort ? FTL_ERR_ABORTED : FTL_ERR_TIMEOUT;
	ftl_err e = ftl_comm_wait(comm, &req[OUTSTANDING - 1]); /* the newest: it fails with the oldest */
	int64_t t_ret = ftl_comm_now_ms();
	if (is_abort)
		pthread_join(th, NULL);
	CHECK(e == want);
	for (int k = 0; k < OUTSTANDING - 1; k++) {
		done = 0;
		CHECK(ftl_comm_test(comm, &req[k], &done) == want && done == 1 && req[k] == NULL);
	}
	CHECK(ftl_comm_allreduce(comm, buf, buf, N, FTL_F32, FTL_SUM, NULL, NULL) == want); /* broken for good */
	int64_t took = is_abort ? t_ret - abort_at_ms : t_ret - t0;
	printf("{\"figure\":\"nccl_async_%s_ms\",\"value\":%lld,\"error\":\"%s\",\"reason\":\"%s\"}\n", name,
	       (long long)took, ftl_strerror(e), ftl_comm_error(comm));
	if (is_abort)
		CHECK(took < 1000); /* generous: the wait loop naps 200 us at most */
	else
		CHECK(took >= TIMEOUT_MS && took < TIMEOUT_MS + 5000);
	atomic_store(&gate_open, 1);
	ftl_comm_delete(comm);
	CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
	cudaStreamDestroy(stream);
	cudaFree(buf);
}

int main(void)
{
	nccl_one_rank_require_gpu("the nccl asynchronous requests test");
	check_order();
	check_fail_together(false);
	check_fail_together(true);
	printf("{\"figure\":\"nccl_async_teardowns_done_ms\",\"value\":%lld}\n",
	       (long long)nccl_one_rank_drain_teardowns(30000));
	printf("test_comm_nccl_async: %s\n", nccl_one_rank_failures ? "FAILED" : "ok");
	return nccl_one_rank_failures != 0;
}
