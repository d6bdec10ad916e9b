/* The peer channel's seal (agent/seal.c): every agent-to-agent byte, datagram or frame, opens only with a
 * key of the cluster's keyring and the cluster's name; what does not open is counted by reason, and what
 * opens is byte for byte what was sealed. A frame too large for a stranger travels behind its sealed
 * header and still opens whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "channel/seal.h"

static ftl_keyring *ring(const char *cluster, uint8_t key_byte)
{
	uint8_t key[FTL_KEY_SIZE];
	memset(key, key_byte, sizeof(key));
	ftl_keyring *kr = ftl_keyring_new(cluster, key);
	assert_non_null(kr);
	return kr;
}

static void test_datagram_opens_only_with_the_clusters_key_and_name(void **state)
{
	ftl_keyring *kr = ring("c", 1), *other_key = ring("c", 2), *other_cluster = ring("d", 1);
	uint8_t plain[FTL_SEAL_DATAGRAM_PLAIN_MAX], sealed[FTL_UDP_PACKET_MAX], opened[FTL_UDP_PACKET_MAX];
	memset(plain, 5, sizeof(plain));
	size_t len, opened_len;
	assert_int_equal(ftl_seal_datagram(kr, plain, sizeof(plain), sealed, &len), 0);
	assert_int_equal(len, FTL_UDP_PACKET_MAX);
	assert_int_equal(ftl_open_datagram(other_key, sealed, len, opened, &opened_len), -1);
	assert_int_equal(ftl_open_datagram(other_cluster, sealed, len, opened, &opened_len), -1);
	assert_int_equal(ftl_keyring_get_stats(other_key)->dropped[FTL_KEYRING_DROP_BAD_MAC], 1);
	assert_int_equal(ftl_keyring_get_stats(other_cluster)->dropped[FTL_KEYRING_DROP_BAD_MAC], 1);
	assert_int_equal(ftl_open_datagram(kr, sealed, len, opened, &opened_len), 0);
	assert_int_equal(opened_len, sizeof(plain));
	assert_memory_equal(opened, plain, sizeof(plain));
	/* One byte over the budget would not fit a datagram once sealed: refused before sealing. */
	uint8_t big[FTL_SEAL_DATAGRAM_PLAIN_MAX + 1] = {0};
	assert_int_equal(ftl_seal_datagram(kr, big, sizeof(big), sealed, &len), FTL_ERR_INVALID);
	/* A sealed datagram cut short never opens. */
	assert_int_equal(ftl_seal_datagram(kr, plain, 10, sealed, &len), 0);
	assert_int_equal(ftl_open_datagram(kr, sealed, len - 1, opened, &opened_len), -1);
	ftl_keyring_delete(kr);
	ftl_keyring_delete(other_key);
	ftl_keyring_delete(other_cluster);
}

/* Reads one frame of a connection's bytes as the transport does (headers skipped). */
static ftl_tcp_step read_frame(ftl_keyring *kr, const uint8_t *in, size_t len, ftl_tcp_result *res, size_t *at)
{
	ftl_tcp_reader r = {0};
	*at = 0;
	for (;;) {
		ftl_tcp_step st = ftl_tcp_read(&r, kr, in + *at, len - *at, res);
		if (st != FTL_TCP_SKIP)
			return st;
		*at += res->used;
	}
}

static void frame_round_trip(ftl_keyring *kr, ftl_keyring *other, size_t n)
{
	uint8_t *plain = malloc(n);
	for (size_t i = 0; i < n; i++)
		plain[i] = (uint8_t)(i * 31);
	uint8_t *out, *opened;
	size_t out_len, opened_len, at;
	ftl_tcp_result res;
	assert_int_equal(ftl_seal_frame(kr, FTL_FRAME_RENDEZVOUS, plain, n, &out, &out_len), 0);
	assert_int_equal(read_frame(kr, out, out_len, &res, &at), FTL_TCP_FRAME);
	assert_int_equal(res.kind, FTL_FRAME_RENDEZVOUS);
	const uint8_t *body = out + at + FTL_TCP_PREFIX;
	assert_int_equal(ftl_open_frame(other, body, res.body_len, &opened, &opened_len), -1);
	assert_int_equal(ftl_open_frame(kr, body, res.body_len, &opened, &opened_len), 0);
	assert_int_equal(opened_len, n);
	assert_memory_equal(opened, plain, n);
	free(opened);
	free(out);
	free(plain);
}

static void test_frames_open_whole_small_or_behind_a_sealed_header(void **state)
{
	ftl_keyring *kr = ring("c", 1), *other = ring("c", 2);
	frame_round_trip(kr, other, 1);
	frame_round_trip(kr, other, 1000);
	frame_round_trip(kr, other, FTL_TCP_UNAUTH_MAX + 1000); /* needs the header */
	assert_int_equal(ftl_keyring_get_stats(other)->dropped[FTL_KEYRING_DROP_BAD_MAC], 3);
	ftl_keyring_delete(kr);
	ftl_keyring_delete(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_datagram_opens_only_with_the_clusters_key_and_name),
		cmocka_unit_test(test_frames_open_whole_small_or_behind_a_sealed_header),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
