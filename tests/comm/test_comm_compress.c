/* test_comm_compress: the bf16-compressed f32 allreduce (FTL_ALLREDUCE_BF16).
 *   feedback      error_feedback_keeps_the_input_rounding_from_accumulating: pure, no communicator: over
 *                 T calls with the same input, the sum of what went on the wire is T x - residual, within
 *                 one bf16 rounding of T x, where plain rounding drifts by T times its error
 *   bound N       compressed_sum_is_within_the_bf16_bound_of_the_exact_sum: N ranks on loopback, values
 *                 that are not exact in bf16, at sizes that take every algorithm (doubling, halving,
 *                 ring); sum and avg against the f64 sum, |error| <= (N+1) 2^-8 sum |x|; then 20 steps with
 *                 error feedback: the same bound per step against the inputs really sent (x + residual,
 *                 replayed for every rank), and the residual each rank keeps equal to the replay's
 *   Prints the worst relative error seen as JSON lines. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_compress.h"
#include "comm/comm_reduce.h"
#include "harness.h"

/* Rank r's element i: smooth, signed, not exact in bf16, magnitudes over a few binades. */
static float value(int r, size_t i, int step)
{
	double t = (double)i * 0.618 + r * 1.37 + step * 0.011;
	return (float)(sin(t) * (1.0 + (double)(i % 7)) + 0.001 * (r + 1));
}

static int feedback_test(void)
{
	enum { N = 1000, T = 200 };
	float x[N], residual[N] = {0};
	uint16_t w[N];
	double sum_fb[N] = {0}, sum_plain[N] = {0};
	for (size_t i = 0; i < N; i++)
		x[i] = value(0, i, 0);
	for (int t = 0; t < T; t++) {
		ftl_comm_compress_bf16(x, residual, w, N);
		for (size_t i = 0; i < N; i++)
			sum_fb[i] += ftl_comm_bf16_to_f32(w[i]);
		ftl_comm_compress_bf16(x, NULL, w, N);
		for (size_t i = 0; i < N; i++)
			sum_plain[i] += ftl_comm_bf16_to_f32(w[i]);
	}
	double worst_fb = 0, worst_plain = 0;
	int bad = 0;
	for (size_t i = 0; i < N; i++) {
		double want = (double)T * x[i], fb = fabs(sum_fb[i] - want), plain = fabs(sum_plain[i] - want);
		/* T x - residual_T, and |residual| <= one rounding of |x + residual| (plus f32 slack) */
		if (fb > 0x1p-8 * (fabs(x[i]) * 1.01) + 1e-6 * T * fabs(x[i])) {
			fprintf(stderr, "element %zu: error feedback drifted by %g (x %g)\n", i, fb, x[i]);
			bad++;
		}
		worst_fb = fb / fabs(x[i]) > worst_fb ? fb / fabs(x[i]) : worst_fb;
		worst_plain = plain / fabs(x[i]) > worst_plain ? plain / fabs(x[i]) : worst_plain;
	}
	printf("{\"test\":\"bf16_feedback\",\"steps\":%d,\"worst_rel_drift_feedback\":%.3g,"
	       "\"worst_rel_drift_plain\":%.3g}\n", T, worst_fb, worst_plain);
	return bad != 0 || !(worst_plain > 10 * worst_fb);
}

/* Checks out against the exact op over every rank's input (value() + its residual, when given), with the
 * bf16 bound; returns the worst |error| / bound (<= 1 passes) and the mean |error| in *mean. */
static double check(const float *out, size_t count, int n, int step, ftl_reduce_op op, float *const *inputs,
		    double *mean)
{
	double worst = 0, total = 0;
	for (size_t i = 0; i < count; i++) {
		double exact = 0, mag = 0;
		for (int r = 0; r < n; r++) {
			double v = inputs != NULL ? inputs[r][i] : value(r, i, step);
			exact += v;
			mag += fabs(v);
		}
		if (op == FTL_AVG) {
			exact /= n;
			mag /= n;
		}
		double err = fabs((double)out[i] - exact), bound = (n + 1) * 0x1p-8 * mag + 1e-30;
		worst = err / bound > worst ? err / bound : worst;
		total += err;
	}
	*mean = total / (double)count;
	return worst;
}

static const size_t sizes[] = {1, 1000, 16384, 100003, 1u << 20}; /* bf16 bytes: doubling, halving, ring */

static int bound_child(struct harness_child *c)
{
	ftl_comm *comm = harness_comm_all(c, 1, 20000);
	if (comm == NULL)
		return 1;
	int rc = 0, n = c->n;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t count = sizes[s];
		float *x = malloc(count * 4), *out = malloc(count * 4), *res = calloc(count, 4);
		for (int op = FTL_SUM; op <= FTL_AVG; op++) {
			for (size_t i = 0; i < count; i++)
				x[i] = value(c->rank, i, 0);
			ftl_err e = harness_allreduce_bf16(comm, x, op == FTL_SUM ? out : x, count, (ftl_reduce_op)op, NULL);
			double mean, worst = e == FTL_OK ? check(op == FTL_SUM ? out : x, count, n, 0, (ftl_reduce_op)op,
								      NULL, &mean) : 99;
			if (c->rank == 0)
				printf("{\"test\":\"bf16_bound\",\"world\":%d,\"count\":%zu,\"op\":\"%s\","
				       "\"worst_error_over_bound\":%.3f}\n", n, count, ftl_reduce_op_strs[op], worst);
			/* What came over the wire was bf16: a sum is exact in bf16 (proof the compression ran). */
			for (size_t i = 0; op == FTL_SUM && e == FTL_OK && i < count; i++)
				if (ftl_comm_bf16_to_f32(ftl_comm_f32_to_bf16(out[i])) != out[i]) {
					fprintf(stderr, "rank %d: sum[%zu] = %g is not a bf16 value\n", c->rank, i, out[i]);
					rc = 1;
					break;
				}
			if (e != FTL_OK || worst > 1.0) {
				fprintf(stderr, "rank %d: count %zu %s: %s, error/bound %.3f\n", c->rank, count,
					ftl_reduce_op_strs[op], ftl_strerror(e), worst);
				rc = 1;
			}
		}
		/* Error feedback over 20 steps: each step within the bound of the inputs it really sent
		 * (x + residual, known to every rank by replaying every rank's compression). */
		float **inputs = malloc((size_t)n * sizeof(*inputs)), **resid = malloc((size_t)n * sizeof(*resid));
		uint16_t *scratch = malloc(count * 2);
		for (int r = 0; r < n; r++) {
			inputs[r] = malloc(count * 4);
			resid[r] = calloc(count, 4);
		}
		for (int step = 0; step < 20 && rc == 0; step++) {
			for (int r = 0; r < n; r++) {
				for (size_t i = 0; i < count; i++) {
					float xi = value(r, i, step);
					inputs[r][i] = xi + resid[r][i];
				}
				float *tmp = malloc(count * 4);
				for (size_t i = 0; i < count; i++)
					tmp[i] = value(r, i, step);
				ftl_comm_compress_bf16(tmp, resid[r], scratch, count); /* replay rank r's residual */
				free(tmp);
			}
			for (size_t i = 0; i < count; i++)
				x[i] = value(c->rank, i, step);
			ftl_err e = harness_allreduce_bf16(comm, x, out, count, FTL_SUM, res);
			double mean, worst = e == FTL_OK ? check(out, count, n, step, FTL_SUM, inputs, &mean) : 99;
			if (e != FTL_OK || worst > 1.0 || memcmp(res, resid[c->rank], count * 4) != 0) {
				fprintf(stderr, "rank %d: feedback step %d count %zu: %s, error/bound %.3f\n", c->rank, step,
					count, ftl_strerror(e), worst);
				rc = 1;
			}
		}
		for (int r = 0; r < n; r++) {
			free(inputs[r]);
			free(resid[r]);
		}
		free(inputs);
		free(resid);
		free(scratch);
		free(x);
		free(out);
		free(res);
	}
	/* Refusals: feedback with max, a residual overlapping the output. */
	float a[4] = {(float)c->rank, 2, 3, 4}, r4[4] = {0};
	rc |= harness_allreduce_bf16(comm, a, a, 4, FTL_MAX, r4) != FTL_ERR_INVALID;
	rc |= harness_allreduce_bf16(comm, a, a, 4, FTL_SUM, a) != FTL_ERR_INVALID;
	rc |= harness_allreduce_bf16(comm, a, a, 4, FTL_MAX, NULL) != FTL_OK || a[0] != (float)(n - 1) || a[3] != 4;
	ftl_comm_delete(comm);
	return rc;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(what, "feedback") == 0)
		return feedback_test();
	if (strcmp(what, "bound") == 0) {
		struct harness h;
		if (harness_start(&h, argc > 2 ? atoi(argv[2]) : 2, 150, bound_child, NULL) != 0)
			return 1;
		return harness_wait(&h, 0) != 0;
	}
	fprintf(stderr, "usage: %s feedback|bound [world size]\n", argv[0]);
	return 2;
}
