/* comm_compress: f32 <-> bf16 for a compressed allreduce, with error feedback. Pure functions.
 *
 * The wire carries bf16 (half the bytes of f32); every addition of the reduction widens both operands to
 * f32, adds, and rounds the partial sum back to bf16 for the next hop (comm_reduce's bf16 kernel), so a
 * result carries at most (number of partial sums + 1) roundings of bf16's unit roundoff 2^-8 relative to
 * the sum of magnitudes: (n+1) * 2^-8 * sum_r |x_r| bounds it for every algorithm of the tcp backend.
 *
 * Error feedback (1-bit SGD, EF-SGD): each rank keeps what rounding its input dropped and adds it to its
 * next input, so over T calls with inputs x_t the sum of what went on the wire is sum x_t - residual_T:
 * the input rounding no longer accumulates across steps. Roundings of partial sums on other ranks are not
 * fed back (they happen where the residual is not). */
#include "comm_compress.h"

#include "comm_reduce.h"

void ftl_comm_compress_bf16(const float *in, float *residual, uint16_t *out, size_t n)
{
	if (residual == NULL) { /* two plain loops, so the compiler can vectorise each */
		for (size_t i = 0; i < n; i++)
			out[i] = ftl_comm_bf16_round(in[i]);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		float y = in[i] + residual[i];
		out[i] = ftl_comm_bf16_round(y);
		residual[i] = y - ftl_comm_bf16_widen(out[i]);
	}
}

void ftl_comm_expand_bf16(const uint16_t *in, float *out, size_t n, int divisor)
{
	for (size_t i = 0; i < n; i++) {
		float v = ftl_comm_bf16_widen(in[i]);
		out[i] = divisor > 1 ? v / (float)divisor : v;
	}
}
