/* The TCP frame reader (agent/tcp_frame.c): a peer without the key may send small frames only; a large
 * frame is read only after a sealed header that opens with the cluster's keyring and announces it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "channel/tcp_frame.h"

static ftl_keyring *ring(uint8_t fill)
{
	uint8_t key[FTL_KEY_SIZE];
	memset(key, fill, sizeof(key));
	ftl_keyring *kr = ftl_keyring_new("c", key);
	assert_non_null(kr);
	return kr;
}

/* Feeds all of in to a fresh reader; returns the last step, with the frame found (if any) in *res. */
static ftl_tcp_step read_all(ftl_keyring *kr, uint8_t *in, size_t len, ftl_tcp_result *res)
{
	ftl_tcp_reader r = {0};
	for (;;) {
		ftl_tcp_step st = ftl_tcp_read(&r, kr, in, len, res);
		if (st != FTL_TCP_SKIP)
			return st;
		memmove(in, in + res->used, len - res->used);
		len -= res->used;
	}
}

static void test_large_tcp_frames_need_a_sealed_header(void **state)
{
	ftl_keyring *kr = ring(1), *other = ring(2);
	size_t big = 4u << 20;
	uint8_t *body = malloc(big);
	memset(body, 7, big);
	uint8_t *out;
	size_t out_len;
	ftl_tcp_result res;

	/* Small frames go without a header, and anyone may send them. */
	assert_int_equal(ftl_tcp_frame_encode(kr, FTL_FRAME_PUSH_PULL, body, 100, &out, &out_len), 0);
	assert_int_equal(out_len, FTL_TCP_PREFIX + 100);
	assert_int_equal(read_all(other, out, out_len, &res), FTL_TCP_FRAME);
	free(out);

	/* A large frame is announced: members read it whole. */
	assert_int_equal(ftl_tcp_frame_encode(kr, FTL_FRAME_PUSH_PULL, body, big, &out, &out_len), 0);
	assert_int_equal(out_len, FTL_TCP_HEADER_FRAME + FTL_TCP_PREFIX + big);
	uint8_t *copy = malloc(out_len);
	memcpy(copy, out, out_len);
	assert_int_equal(read_all(kr, copy, out_len, &res), FTL_TCP_FRAME);
	assert_int_equal(res.kind, FTL_FRAME_PUSH_PULL);
	assert_int_equal(res.body_len, big);
	assert_memory_equal(copy + FTL_TCP_PREFIX, body, big);

	/* A node with another key: the header does not open, nothing of the body is read. */
	memcpy(copy, out, out_len);
	assert_int_equal(read_all(other, copy, out_len, &res), FTL_TCP_DROP);
	assert_int_equal(res.why, FTL_TCP_DROP_BAD_HEADER);

	/* The same frame without its header: refused from its first four bytes. */
	ftl_tcp_reader r = {0};
	assert_int_equal(ftl_tcp_read(&r, kr, out + FTL_TCP_HEADER_FRAME, 4, &res), FTL_TCP_DROP);
	assert_int_equal(res.why, FTL_TCP_DROP_TOO_LARGE);

	/* Before four bytes, the reader asks for no more than the unauthenticated limit. */
	memset(&r, 0, sizeof(r));
	assert_int_equal(ftl_tcp_read(&r, kr, out, 2, &res), FTL_TCP_NEED_MORE);
	assert_true(res.need <= FTL_TCP_PREFIX + FTL_TCP_UNAUTH_MAX);

	/* A header followed by a frame other than the one it announced. */
	memcpy(copy, out, FTL_TCP_HEADER_FRAME);
	uint32_t be = htonl((uint32_t)(big + 2));
	memcpy(copy + FTL_TCP_HEADER_FRAME, &be, 4);
	assert_int_equal(read_all(kr, copy, FTL_TCP_HEADER_FRAME + 5, &res), FTL_TCP_DROP);
	assert_int_equal(res.why, FTL_TCP_DROP_NOT_ANNOUNCED);

	/* Unknown kinds. */
	uint8_t junk[] = {0, 0, 0, 2, 'Z', 0};
	assert_int_equal(read_all(kr, junk, sizeof(junk), &res), FTL_TCP_DROP);
	assert_int_equal(res.why, FTL_TCP_DROP_UNKNOWN_KIND);
	free(copy);
	free(out);
	free(body);
	ftl_keyring_delete(kr);
	ftl_keyring_delete(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_large_tcp_frames_need_a_sealed_header)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
