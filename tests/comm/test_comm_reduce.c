/* test_comm_reduce: the host reduction kernels and the f16/bf16 conversions, as pure functions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "comm/comm_reduce.h"

static void test_f16_round_trips_every_non_nan_pattern(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = ftl_comm_f16_to_f32((uint16_t)h);
		if (isnan(f)) {
			assert_true(isnan(ftl_comm_f16_to_f32(ftl_comm_f32_to_f16(f))));
			continue;
		}
		assert_int_equal(ftl_comm_f32_to_f16(f), h);
	}
}

static void test_f16_rounds_to_nearest_even(void **state)
{
	(void)state;
	assert_int_equal(ftl_comm_f32_to_f16(1.0f), 0x3c00);
	assert_int_equal(ftl_comm_f32_to_f16(-2.0f), 0xc000);
	assert_int_equal(ftl_comm_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);       /* tie: stays even */
	assert_int_equal(ftl_comm_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);   /* tie: up to even */
	assert_int_equal(ftl_comm_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
	assert_int_equal(ftl_comm_f32_to_f16(65504.0f), 0x7bff);              /* largest finite */
	assert_int_equal(ftl_comm_f32_to_f16(65519.0f), 0x7bff);
	assert_int_equal(ftl_comm_f32_to_f16(65520.0f), 0x7c00);              /* rounds to infinity */
	assert_int_equal(ftl_comm_f32_to_f16(-INFINITY), 0xfc00);
	assert_int_equal(ftl_comm_f32_to_f16(0x1p-24f), 0x0001);              /* smallest subnormal */
	assert_int_equal(ftl_comm_f32_to_f16(0x1p-25f), 0x0000);              /* tie to even: zero */
	assert_int_equal(ftl_comm_f32_to_f16(1.5f * 0x1p-25f), 0x0001);
	assert_int_equal(ftl_comm_f32_to_f16(3 * 0x1p-25f), 0x0002);          /* tie to even: 2 */
	assert_int_equal(ftl_comm_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400);   /* rounds up into the normals */
	assert_int_equal(ftl_comm_f32_to_f16(-0.0f), 0x8000);
	assert_true((ftl_comm_f32_to_f16(NAN) & 0x7fff) > 0x7c00);
}

static void test_bf16_round_trips_and_rounds_to_nearest_even(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = ftl_comm_bf16_to_f32((uint16_t)h);
		if (isnan(f))
			assert_true(isnan(ftl_comm_bf16_to_f32(ftl_comm_f32_to_bf16(f))));
		else
			assert_int_equal(ftl_comm_f32_to_bf16(f), h);
	}
	assert_int_equal(ftl_comm_f32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(ftl_comm_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);     /* tie: even */
	assert_int_equal(ftl_comm_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie: up to even */
	assert_int_equal(ftl_comm_f32_to_bf16(3.4028235e38f), 0x7f80);      /* FLT_MAX rounds to infinity */
}

/* The rounding written plainly (round half to even on the top 16 bits; NaN keeps its sign and payload's
 * top bits and becomes quiet), against the inline one the loops use, over every 251st bit pattern: signs,
 * ties, subnormals, infinities and NaNs of both signs. */
static uint16_t bf16_reference(uint32_t x)
{
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static void test_bf16_inline_rounding_matches_the_reference_over_the_bit_patterns(void **state)
{
	(void)state;
	for (uint64_t u = 0; u < (1ull << 32); u += 251) {
		uint32_t x = (uint32_t)u;
		float f;
		memcpy(&f, &x, sizeof(f));
		if (ftl_comm_bf16_round(f) != bf16_reference(x))
			fail_msg("0x%08x rounds to 0x%04x, not 0x%04x", x, ftl_comm_bf16_round(f), bf16_reference(x));
	}
	uint32_t edges[] = {0x7fc00001u, 0xffc00001u, 0x7f800001u, 0xff800001u, 0x7f7fffffu, 0xff7fffffu, 0x3f808000u,
			    0xbf818000u, 0x00008000u, 0x80018000u};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		float f;
		memcpy(&f, &edges[i], sizeof(f));
		assert_int_equal(ftl_comm_bf16_round(f), bf16_reference(edges[i]));
	}
}

static void test_native_kernels_sum_min_max(void **state)
{
	(void)state;
	float a[5] = {1, -2, 3.5f, 0, 7}, b[5] = {2, -3, -3.5f, 0, -8}, out[5];
	ftl_comm_reduce_kernel(FTL_F32, FTL_SUM)(out, a, b, 5);
	assert_true(out[0] == 3 && out[1] == -5 && out[2] == 0 && out[4] == -1);
	ftl_comm_reduce_kernel(FTL_F32, FTL_MIN)(out, a, b, 5);
	assert_true(out[0] == 1 && out[1] == -3 && out[4] == -8);
	ftl_comm_reduce_kernel(FTL_F32, FTL_MAX)(a, a, b, 5); /* in place */
	assert_true(a[0] == 2 && a[1] == -2 && a[4] == 7);

	double da[2] = {0.1, -1e300}, db[2] = {0.2, -1e300}, dout[2];
	ftl_comm_reduce_kernel(FTL_F64, FTL_SUM)(dout, da, db, 2);
	assert_true(dout[0] == 0.1 + 0.2 && dout[1] == -2e300);
}

static void test_integer_sums_wrap_and_avg_truncates(void **state)
{
	(void)state;
	int32_t a[3] = {INT32_MAX, -7, 5}, b[3] = {1, 0, -6}, out[3];
	ftl_comm_reduce_kernel(FTL_I32, FTL_SUM)(out, a, b, 3);
	assert_int_equal(out[0], INT32_MIN);
	ftl_comm_reduce_divide(out + 1, 2, FTL_I32, 2);
	assert_int_equal(out[1], -3); /* C division: toward zero */
	assert_int_equal(out[2], 0);
	int64_t x[2] = {INT64_MAX, INT64_MIN}, y[2] = {1, 5}, o[2];
	ftl_comm_reduce_kernel(FTL_I64, FTL_SUM)(o, x, y, 2);
	assert_true(o[0] == INT64_MIN && o[1] == INT64_MIN + 5);
	ftl_comm_reduce_kernel(FTL_I64, FTL_MIN)(o, x, y, 2);
	assert_true(o[0] == 1 && o[1] == INT64_MIN);
}

static void test_half_kernels_reduce_in_f32_and_round(void **state)
{
	(void)state;
	uint16_t a[3] = {ftl_comm_f32_to_f16(2048), ftl_comm_f32_to_f16(1.5f), ftl_comm_f32_to_f16(-4)};
	uint16_t b[3] = {ftl_comm_f32_to_f16(1), ftl_comm_f32_to_f16(0.25f), ftl_comm_f32_to_f16(3)};
	uint16_t out[3];
	ftl_comm_reduce_kernel(FTL_F16, FTL_SUM)(out, a, b, 3);
	assert_true(ftl_comm_f16_to_f32(out[0]) == 2048); /* 2049 ties to even */
	assert_true(ftl_comm_f16_to_f32(out[1]) == 1.75f);
	assert_true(ftl_comm_f16_to_f32(out[2]) == -1);
	ftl_comm_reduce_kernel(FTL_F16, FTL_MIN)(out, a, b, 3);
	assert_int_equal(out[0], b[0]);
	assert_int_equal(out[2], a[2]);
	ftl_comm_reduce_divide(out, 3, FTL_F16, 4);
	assert_true(ftl_comm_f16_to_f32(out[2]) == -1);

	uint16_t c[2] = {ftl_comm_f32_to_bf16(256), ftl_comm_f32_to_bf16(-0.5f)};
	uint16_t d[2] = {ftl_comm_f32_to_bf16(1), ftl_comm_f32_to_bf16(0.25f)};
	ftl_comm_reduce_kernel(FTL_BF16, FTL_SUM)(out, c, d, 2);
	assert_true(ftl_comm_bf16_to_f32(out[0]) == 256); /* 257 ties to even */
	assert_true(ftl_comm_bf16_to_f32(out[1]) == -0.25f);
	ftl_comm_reduce_kernel(FTL_BF16, FTL_MAX)(out, c, d, 2);
	assert_int_equal(out[0], c[0]);
	assert_int_equal(out[1], d[1]);
}

static void test_kernel_lookup_rejects_bad_values(void **state)
{
	(void)state;
	assert_null(ftl_comm_reduce_kernel(FTL_DTYPE_MAX, FTL_SUM));
	assert_null(ftl_comm_reduce_kernel(FTL_F32, FTL_REDUCE_OP_MAX));
	assert_ptr_equal(ftl_comm_reduce_kernel(FTL_F16, FTL_AVG), ftl_comm_reduce_kernel(FTL_F16, FTL_SUM));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f16_round_trips_every_non_nan_pattern),
		cmocka_unit_test(test_f16_rounds_to_nearest_even),
		cmocka_unit_test(test_bf16_round_trips_and_rounds_to_nearest_even),
		cmocka_unit_test(test_bf16_inline_rounding_matches_the_reference_over_the_bit_patterns),
		cmocka_unit_test(test_native_kernels_sum_min_max),
		cmocka_unit_test(test_integer_sums_wrap_and_avg_truncates),
		cmocka_unit_test(test_half_kernels_reduce_in_f32_and_round),
		cmocka_unit_test(test_kernel_lookup_rejects_bad_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
