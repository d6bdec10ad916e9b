/* test_comm_nccl_compress: the bf16 allreduce (FTL_ALLREDUCE_BF16) on the nccl backend, one GPU, one rank,
 * against the host reference (comm_compress.c, what the tcp backend runs). With one rank the allreduce adds nothing, so the
 * GPU's rounding kernel, the bf16 allreduce and the widening kernel must give the host's bits exactly, for
 * sum, avg and max, on values that take every rounding path (ties to even, carries into the exponent,
 * subnormals, overflow to infinity, NaN); with error feedback the residual must be the host's, call after
 * call, and the input rounding must not accumulate: over the calls, what went on the wire plus the last
 * residual is the sum of the inputs. Without a CUDA device it prints why and exits 77 (ctest SKIP). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "comm/comm_compress.h"
#include "harness.h"
#include "nccl_one_rank.h"

enum { N = (1 << 20) + 13, CALLS = 5 }; /* not a multiple of any launch size */

/* Inputs that exercise the rounding: a spread of magnitudes and the special values at fixed places. */
static void fill(float *x, unsigned seed)
{
	srand(seed);
	for (int i = 0; i < N; i++) {
		float m = (float)rand() / (float)RAND_MAX - 0.5f;
		x[i] = ldexpf(m, (i % 40) - 20);
	}
	static const float special[] = {1.00390625f, 1.01171875f, 3.3895313892515355e38f, -3.4e38f, 1e-40f,
					-1e-42f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN};
	for (size_t k = 0; k < sizeof(special) / sizeof(special[0]); k++)
		x[k * 1013] = special[k];
}

static float *to_device(const float *host)
{
	float *dev = NULL;
	CHECK(cudaMalloc((void **)&dev, N * sizeof(float)) == cudaSuccess);
	nccl_one_rank_upload(dev, host, N * sizeof(float));
	return dev;
}

static void from_device(float *host, const float *dev)
{
	CHECK(cudaMemcpy(host, dev, N * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
}

/* The host reference of one call: compress (with residual) and widen. */
static void host_reference(const float *in, float *residual, float *out, uint16_t *wire)
{
	ftl_comm_compress_bf16(in, residual, wire, N);
	ftl_comm_expand_bf16(wire, out, N, 1);
}

static int first_difference(const float *a, const float *b)
{
	for (int i = 0; i < N; i++)
		if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
			return i;
	return -1;
}

static void check_plain(ftl_comm *comm)
{
	static float in[N], want[N], got[N];
	static uint16_t wire[N];
	fill(in, 7);
	host_reference(in, NULL, want, wire);
	float *d_in = to_device(in), *d_out = to_device(in);
	static const ftl_reduce_op ops[] = {FTL_SUM, FTL_AVG, FTL_MAX, FTL_MIN};
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		CHECK(cudaMemset(d_out, 0xff, N * sizeof(float)) == cudaSuccess);
		CHECK(harness_allreduce_bf16(comm, d_in, d_out, N, ops[k], NULL) == FTL_OK);
		from_device(got, d_out);
		int at = first_difference(want, got);
		if (at >= 0)
			fprintf(stderr, "%s: element %d is %a on the GPU, %a on the host (input %a)\n",
				ftl_reduce_op_strs[ops[k]], at, (double)got[at], (double)want[at], (double)in[at]);
		CHECK(at < 0);
	}
	/* in place, a smaller count after a larger one (the wire buffer is reused) */
	CHECK(harness_allreduce_bf16(comm, d_in, d_in, 1000, FTL_SUM, NULL) == FTL_OK);
	from_device(got, d_in);
	CHECK(memcmp(got, want, 1000 * sizeof(float)) == 0 && memcmp(got + 1000, in + 1000, sizeof(float)) == 0);
	cudaFree(d_in);
	cudaFree(d_out);
}

static void check_feedback(ftl_comm *comm)
{
	static float in[N], want[N], got[N], residual[N], got_residual[N];
	static double sent[N], total[N], magnitude[N];
	static uint16_t wire[N];
	memset(residual, 0, sizeof(residual));
	float *d_residual = to_device(residual), *d_in = NULL, *d_out = to_device(residual);
	for (int call = 0; call < CALLS; call++) {
		fill(in, 100 + (unsigned)call);
		for (int i = 0; i < N; i++)
			in[i] = isfinite(in[i]) && fabsf(in[i]) < 1e30f ? in[i] : 1.0f; /* sums stay finite */
		host_reference(in, residual, want, wire);
		cudaFree(d_in);
		d_in = to_device(in);
		CHECK(harness_allreduce_bf16(comm, d_in, d_out, N, FTL_SUM, d_residual) == FTL_OK);
		from_device(got, d_out);
		from_device(got_residual, d_residual);
		CHECK(first_difference(want, got) < 0);
		CHECK(first_difference(residual, got_residual) < 0);
		for (int i = 0; i < N; i++) {
			sent[i] += got[i];
			total[i] += in[i];
			magnitude[i] += fabs(in[i]);
		}
	}
	/* error feedback: sum of what was sent + the residual left = sum of the inputs, up to the f32 rounding
	 * of each input + residual (2^-24 of the magnitudes per call), far below one bf16 rounding (2^-8) */
	double worst = 0;
	for (int i = 0; i < N; i++) {
		double scale = magnitude[i] + ldexp(1.0, -126);
		double e = fabs(sent[i] + got_residual[i] - total[i]) / scale;
		worst = e > worst ? e : worst;
	}
	printf("{\"figure\":\"nccl_bf16_feedback_worst_rel_error\",\"value\":%.3g,\"calls\":%d}\n", worst, CALLS);
	CHECK(worst < ldexp(1.0, -12) * CALLS);
	cudaFree(d_in);
	cudaFree(d_out);
	cudaFree(d_residual);
}

int main(void)
{
	nccl_one_rank_require_gpu("the nccl compressed allreduce test");
	unsigned char id[FTL_COMM_NCCL_ID_LEN];
	struct ftl_comm_config cfg = nccl_one_rank_config(id, 0);
	ftl_comm *comm;
	if (ftl_comm_new(&cfg, &comm) != FTL_OK) {
		fprintf(stderr, "create: %s\n", ftl_error_message());
		return 1;
	}
	check_plain(comm);
	check_feedback(comm);
	if (nccl_one_rank_failures)
		fprintf(stderr, "last error: %s\n", ftl_comm_error(comm));
	ftl_comm_delete(comm);
	nccl_one_rank_drain_teardowns(30000);
	printf("test_comm_nccl_compress: %s\n", nccl_one_rank_failures ? "FAILED" : "ok");
	return nccl_one_rank_failures != 0;
}
