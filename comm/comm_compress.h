/* comm_compress: what the bf16-compressed f32 allreduce (FTL_ALLREDUCE_BF16) does around the bf16
 * allreduce: round its input to bf16 (with error feedback) and widen the result back. Pure. */
#ifndef FTL_COMM_COMPRESS_H
#define FTL_COMM_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

/* out[i] = bf16(in[i] + residual[i]); residual[i] = what that rounding dropped. residual may be NULL (no
 * error feedback). out must not overlap in or residual. */
void ftl_comm_compress_bf16(const float *in, float *residual, uint16_t *out, size_t n);

/* out[i] = f32(in[i]) / divisor (divisor > 1 for FTL_AVG, divided in f32). */
void ftl_comm_expand_bf16(const uint16_t *in, float *out, size_t n, int divisor);

#endif /* FTL_COMM_COMPRESS_H */
