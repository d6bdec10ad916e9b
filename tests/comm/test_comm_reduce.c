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
	/* a kernel exactly where the public rule says the pair is defined */
	for (int dt = 0; dt < FTL_DTYPE_MAX; dt++)
		for (int op = 0; op < FTL_REDUCE_OP_MAX; op++)
			assert_int_equal(ftl_comm_reduce_kernel((ftl_dtype)dt, (ftl_reduce_op)op) != NULL,
					 ftl_reduce_op_accepts((ftl_reduce_op)op, (ftl_dtype)dt));
	assert_false(ftl_reduce_op_accepts(FTL_BAND, FTL_F32));
	assert_false(ftl_reduce_op_accepts(FTL_BXOR, FTL_BF16));
	assert_false(ftl_reduce_op_accepts(FTL_AVG, FTL_BOOL));
	assert_true(ftl_reduce_op_accepts(FTL_PROD, FTL_F16));
	assert_true(ftl_reduce_op_accepts(FTL_BOR, FTL_U8));
	assert_false(ftl_reduce_op_accepts(FTL_REDUCE_OP_MAX, FTL_I32));
	assert_false(ftl_reduce_op_accepts(FTL_SUM, FTL_DTYPE_MAX));
}

static void test_byte_types_wrap_and_bitwise_ops_keep_the_bits(void **state)
{
	(void)state;
	uint8_t a[3] = {250, 3, 0xf0}, b[3] = {10, 200, 0x3c}, out[3];
	ftl_comm_reduce_kernel(FTL_U8, FTL_SUM)(out, a, b, 3);
	assert_true(out[0] == 4 && out[1] == 203); /* 260 wraps to 4 */
	ftl_comm_reduce_kernel(FTL_U8, FTL_PROD)(out, a, b, 3);
	assert_true(out[0] == (uint8_t)2500 && out[1] == (uint8_t)600);
	ftl_comm_reduce_kernel(FTL_U8, FTL_MIN)(out, a, b, 3);
	assert_true(out[0] == 10 && out[1] == 3);
	ftl_comm_reduce_kernel(FTL_U8, FTL_BAND)(out, a, b, 3);
	assert_int_equal(out[2], 0x30);
	ftl_comm_reduce_kernel(FTL_U8, FTL_BOR)(out, a, b, 3);
	assert_int_equal(out[2], 0xfc);
	ftl_comm_reduce_kernel(FTL_U8, FTL_BXOR)(out, a, b, 3);
	assert_int_equal(out[2], 0xcc);
	ftl_comm_reduce_divide(a, 1, FTL_U8, 4);
	assert_int_equal(a[0], 62);

	int8_t c[2] = {127, -128}, d[2] = {1, -1}, o8[2];
	ftl_comm_reduce_kernel(FTL_I8, FTL_SUM)(o8, c, d, 2);
	assert_true(o8[0] == -128 && o8[1] == 127);
	ftl_comm_reduce_kernel(FTL_I8, FTL_MAX)(o8, c, d, 2);
	assert_true(o8[0] == 127 && o8[1] == -1);
	ftl_comm_reduce_kernel(FTL_I8, FTL_PROD)(o8, c, d, 2);
	assert_true(o8[0] == 127 && o8[1] == -128); /* -128 * -1 wraps to -128 */
	ftl_comm_reduce_divide(d, 2, FTL_I8, 2);
	assert_true(d[0] == 0 && d[1] == 0); /* toward zero */

	int64_t x[2] = {INT64_MIN, 6}, y[2] = {2, -3}, o[2];
	ftl_comm_reduce_kernel(FTL_I64, FTL_PROD)(o, x, y, 2);
	assert_true(o[0] == 0 && o[1] == -18);
	ftl_comm_reduce_kernel(FTL_I64, FTL_BXOR)(o, x, y, 2);
	assert_true(o[0] == (INT64_MIN ^ 2) && o[1] == (6 ^ -3));
}

static void test_bool_is_any_all_and_parity(void **state)
{
	(void)state;
	uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1}, out[4];
	const uint8_t any[4] = {0, 1, 1, 1}, all[4] = {0, 0, 0, 1}, parity[4] = {0, 1, 1, 0};
	const struct {
		ftl_reduce_op op;
		const uint8_t *want;
	} cases[] = {{FTL_SUM, any}, {FTL_MAX, any}, {FTL_BOR, any}, {FTL_PROD, all}, {FTL_MIN, all},
		     {FTL_BAND, all}, {FTL_BXOR, parity}};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		ftl_comm_reduce_kernel(FTL_BOOL, cases[k].op)(out, a, b, 4);
		assert_memory_equal(out, cases[k].want, 4);
	}
}

static void test_products_of_floats_round_once_per_product(void **state)
{
	(void)state;
	float a[2] = {1.5f, -2}, b[2] = {4, 0.25f}, out[2];
	ftl_comm_reduce_kernel(FTL_F32, FTL_PROD)(out, a, b, 2);
	assert_true(out[0] == 6 && out[1] == -0.5f);
	uint16_t h[1] = {ftl_comm_f32_to_f16(1.0009765625f)}, g[1] = {ftl_comm_f32_to_f16(1.0009765625f)}, ho[1];
	ftl_comm_reduce_kernel(FTL_F16, FTL_PROD)(ho, h, g, 1);
	assert_true(ftl_comm_f16_to_f32(ho[0]) == 1.001953125f); /* (1 + 2^-10)^2 rounded to f16 */
	uint16_t c[1] = {ftl_comm_f32_to_bf16(3)}, d[1] = {ftl_comm_f32_to_bf16(-0.5f)}, co[1];
	ftl_comm_reduce_kernel(FTL_BF16, FTL_PROD)(co, c, d, 1);
	assert_true(ftl_comm_bf16_to_f32(co[0]) == -1.5f);
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
		cmocka_unit_test(test_byte_types_wrap_and_bitwise_ops_keep_the_bits),
		cmocka_unit_test(test_bool_is_any_all_and_parity),
		cmocka_unit_test(test_products_of_floats_round_once_per_product),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
