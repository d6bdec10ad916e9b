/* test_comm_nccl: the nccl backend on one GPU, one rank: non-blocking init, allreduce (every op and
 * dtype family), broadcast, allgather, barrier, abort from another thread, re-init with a fresh unique
 * id while the old communicator is still being torn down, and a shrink by nobody refused by name. Prints
 * init/abort timings as JSON lines. Without a CUDA device it prints why and exits 77 (ctest SKIP). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_one_rank.h"

static ftl_comm *make_comm(double *init_s)
{
	unsigned char id[FTL_COMM_NCCL_ID_LEN];
	struct ftl_comm_config cfg = nccl_one_rank_config(id, 0);
	cfg.timeout_ms = 20000;
	ftl_comm *comm;
	int64_t t0 = ftl_comm_now_ms();
	ftl_err e = ftl_comm_new(&cfg, &comm);
	*init_s = (double)(ftl_comm_now_ms() - t0) / 1000.0;
	if (e != FTL_OK) {
		fprintf(stderr, "create: %s: %s\n", ftl_strerror(e), ftl_diag_message());
		return NULL;
	}
	return comm;
}

static void check_collectives(ftl_comm *comm)
{
	enum { N = 1 << 20 };
	static float host[N];
	float *dev, *dev2;
	CHECK(cudaMalloc((void **)&dev, N * sizeof(float)) == cudaSuccess);
	CHECK(cudaMalloc((void **)&dev2, N * sizeof(float)) == cudaSuccess);
	for (int i = 0; i < N; i++)
		host[i] = (float)(i % 1000) - 500.0f;
	nccl_one_rank_upload(dev, host, sizeof(host));
	for (int op = 0; op < FTL_REDUCE_OP_MAX; op++) {
		if (!ftl_reduce_op_accepts((ftl_reduce_op)op, FTL_F32)) {
			CHECK(ftl_comm_allreduce(comm, dev, dev2, N, FTL_F32, (ftl_reduce_op)op, NULL, NULL) == FTL_ERR_INVALID);
			continue;
		}
		CHECK(ftl_comm_allreduce(comm, dev, dev2, N, FTL_F32, (ftl_reduce_op)op, NULL, NULL) == FTL_OK);
		static float back[N];
		cudaMemcpy(back, dev2, sizeof(back), cudaMemcpyDeviceToHost);
		CHECK(memcmp(back, host, sizeof(back)) == 0); /* one rank: every op is the identity */
	}
	for (int dt = 0; dt < FTL_DTYPE_MAX; dt++)
		CHECK(ftl_comm_allreduce(comm, dev, dev, 1000, (ftl_dtype)dt, FTL_SUM, NULL, NULL) == FTL_OK);
	/* nccl has no bitwise reduction: refused before anything is enqueued, and the comm stays usable */
	CHECK(ftl_comm_allreduce(comm, dev, dev, 1000, FTL_I32, FTL_BXOR, NULL, NULL) == FTL_ERR_UNSUPPORTED);
	CHECK(ftl_comm_broadcast(comm, dev, N, FTL_F32, 0) == FTL_OK);
	CHECK(ftl_comm_allgather(comm, dev, dev2, N, FTL_F32) == FTL_OK);
	CHECK(ftl_comm_barrier(comm) == FTL_OK);
	if (nccl_one_rank_failures)
		fprintf(stderr, "last error: %s\n", ftl_comm_error(comm));
	cudaFree(dev);
	cudaFree(dev2);
}

static _Atomic int64_t abort_at_ms;

static void *abort_soon(void *p)
{
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
	abort_at_ms = ftl_comm_now_ms();
	ftl_comm_abort(p);
	return NULL;
}

int main(void)
{
	nccl_one_rank_require_gpu("the nccl backend test");
	int version = 0;
	ncclGetVersion(&version);
	printf("{\"nccl_runtime_version\":%d,\"nccl_header_version\":%d}\n", version, NCCL_VERSION_CODE);

	double init_s;
	ftl_comm *comm = make_comm(&init_s);
	CHECK(comm != NULL);
	if (comm == NULL)
		return 1;
	printf("{\"figure\":\"nccl_init_s\",\"value\":%.3f}\n", init_s);
	check_collectives(comm);

	/* Abort from another thread: a long stream of collectives ends with "aborted" promptly. */
	enum { BIG = 64 << 20 };
	float *big;
	CHECK(cudaMalloc((void **)&big, BIG) == cudaSuccess);
	pthread_t th;
	pthread_create(&th, NULL, abort_soon, comm);
	ftl_err e = FTL_OK;
	for (int i = 0; i < 100000 && e == FTL_OK; i++)
		e = ftl_comm_allreduce(comm, big, big, BIG / 4, FTL_F32, FTL_SUM, NULL, NULL);
	int64_t t_ret = ftl_comm_now_ms();
	pthread_join(th, NULL);
	CHECK(e == FTL_ERR_ABORTED);
	CHECK(ftl_comm_barrier(comm) == FTL_ERR_ABORTED);
	printf("{\"figure\":\"nccl_abort_return_ms\",\"value\":%lld,\"error\":\"%s\"}\n",
	       (long long)(t_ret - abort_at_ms), ftl_strerror(e));
	CHECK(t_ret - abort_at_ms < 100);

	/* Destroy hands ncclCommAbort to a detached thread: destroy itself is immediate. */
	int64_t t0 = ftl_comm_now_ms();
	ftl_comm_delete(comm);
	printf("{\"figure\":\"nccl_destroy_call_ms\",\"value\":%lld}\n", (long long)(ftl_comm_now_ms() - t0));

	/* A fresh communicator while the old one is still being torn down. */
	comm = make_comm(&init_s);
	CHECK(comm != NULL);
	if (comm != NULL) {
		printf("{\"figure\":\"nccl_reinit_s\",\"value\":%.3f,\"teardowns_pending\":%d}\n", init_s,
		       ftl_comm_nccl_pending_teardowns());
		check_collectives(comm);
		/* One rank can drop nobody, and NCCL refuses a shrink by nobody (ncclInvalidArgument): refused
		 * before NCCL is asked, by name, leaving the communicator whole. A real shrink needs two GPUs. */
		ftl_comm *small = NULL;
		e = ftl_comm_shrink(comm, NULL, 0, &small);
		printf("{\"figure\":\"nccl_shrink_by_nobody\",\"error\":\"%s\",\"reason\":\"%s\"}\n",
		       ftl_strerror(e), ftl_comm_error(comm));
		CHECK(e == FTL_ERR_INVALID && small == NULL);
		check_collectives(comm);
		ftl_comm_delete(comm);
	}
	cudaFree(big);
	printf("{\"figure\":\"nccl_teardowns_done_ms\",\"value\":%lld}\n", (long long)nccl_one_rank_drain_teardowns(30000));
	CHECK(ftl_comm_nccl_pending_teardowns() == 0);
	printf("test_comm_nccl: %s\n", nccl_one_rank_failures ? "FAILED" : "ok");
	return nccl_one_rank_failures != 0;
}
