/* The keyring's promises: what one node seals another node with the same key and cluster name opens;
 * anything else (another key, another cluster, one changed byte, a short packet, the other mode) is
 * dropped and counted by reason; keys rotate with no moment where two nodes cannot talk. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "membership/keyring.h"

enum { PT_LEN = 40, SEALED_LEN = PT_LEN + FTL_KEYRING_OVERHEAD };

static const uint8_t plaintext[PT_LEN] = "the quick brown fox jumps over the dog";

static void make_key(uint8_t key[FTL_KEY_SIZE], uint8_t fill)
{
	for (int i = 0; i < FTL_KEY_SIZE; i++)
		key[i] = (uint8_t)(fill + i);
}

static ftl_keyring *new_ring(const char *cluster, uint8_t key_fill)
{
	uint8_t key[FTL_KEY_SIZE];
	ftl_keyring *kr;
	make_key(key, key_fill);
	kr = ftl_keyring_new(cluster, key);
	assert_non_null(kr);
	return kr;
}

static size_t seal(ftl_keyring *kr, uint8_t *out)
{
	size_t len;
	assert_int_equal(ftl_keyring_seal(kr, plaintext, PT_LEN, out, SEALED_LEN, &len), 0);
	return len;
}

/* Opens in and checks that it is the plaintext. */
static void assert_opens(ftl_keyring *kr, const uint8_t *in, size_t len)
{
	uint8_t pt[PT_LEN];
	size_t pt_len;
	assert_int_equal(ftl_keyring_open(kr, in, len, pt, sizeof pt, &pt_len, NULL), 0);
	assert_int_equal(pt_len, PT_LEN);
	assert_memory_equal(pt, plaintext, PT_LEN);
}

/* Opens in, expects a drop for reason, and checks that exactly that counter moved. */
static void assert_dropped(ftl_keyring *kr, const uint8_t *in, size_t len, ftl_keyring_drop reason)
{
	ftl_keyring_stats before = *ftl_keyring_get_stats(kr);
	const ftl_keyring_stats *after;
	uint8_t pt[SEALED_LEN];
	size_t pt_len;
	ftl_keyring_drop why = FTL_KEYRING_DROP_MAX;

	assert_int_equal(ftl_keyring_open(kr, in, len, pt, sizeof pt, &pt_len, &why), -1);
	assert_int_equal(why, reason);
	after = ftl_keyring_get_stats(kr);
	assert_int_equal(after->opened, before.opened);
	for (int d = 0; d < FTL_KEYRING_DROP_MAX; d++)
		assert_int_equal(after->dropped[d], before.dropped[d] + (d == (int)reason));
}

static void test_sealed_packet_opens_with_the_same_key_and_cluster(void **state)
{
	ftl_keyring *a = new_ring("prod", 1), *b = new_ring("prod", 1);
	uint8_t sealed[SEALED_LEN];
	size_t len = seal(a, sealed);

	assert_int_equal(len, SEALED_LEN);
	assert_int_equal(sealed[0], 0x01);
	assert_opens(b, sealed, len);
	assert_int_equal(ftl_keyring_get_stats(a)->sealed, 1);
	assert_int_equal(ftl_keyring_get_stats(b)->opened, 1);
	ftl_keyring_delete(a);
	ftl_keyring_delete(b);
}

static void test_each_seal_uses_a_fresh_nonce(void **state)
{
	ftl_keyring *kr = new_ring("prod", 1);
	uint8_t first[SEALED_LEN], second[SEALED_LEN];
	seal(kr, first);
	seal(kr, second);
	assert_memory_not_equal(first, second, SEALED_LEN);
	ftl_keyring_delete(kr);
}

/* What a node of (cluster, key fill) seals, a node of the other (cluster, key fill) drops as BAD_MAC. */
static void assert_rejected_across(const char *sealer_cluster, uint8_t sealer_key, const char *opener_cluster,
				   uint8_t opener_key)
{
	ftl_keyring *a = new_ring(sealer_cluster, sealer_key), *b = new_ring(opener_cluster, opener_key);
	uint8_t sealed[SEALED_LEN];
	size_t len = seal(a, sealed);
	assert_dropped(b, sealed, len, FTL_KEYRING_DROP_BAD_MAC);
	ftl_keyring_delete(a);
	ftl_keyring_delete(b);
}

static void test_wrong_key_is_rejected_as_bad_mac(void **state)
{
	assert_rejected_across("prod", 1, "prod", 2);
}

static void test_wrong_cluster_name_is_rejected_as_bad_mac(void **state)
{
	assert_rejected_across("prod", 1, "staging", 1);
}

static void test_tampered_byte_is_rejected_and_counted(void **state)
{
	ftl_keyring *kr = new_ring("prod", 1);
	uint8_t sealed[SEALED_LEN];
	size_t len = seal(kr, sealed);

	for (size_t i = 0; i < len; i++) {
		uint8_t tampered[SEALED_LEN];
		memcpy(tampered, sealed, len);
		tampered[i] ^= 0x01;
		/* Byte 0 is the mode: flipping it turns the packet into a plaintext one. */
		assert_dropped(kr, tampered, len, i == 0 ? FTL_KEYRING_DROP_BAD_MODE : FTL_KEYRING_DROP_BAD_MAC);
	}
	assert_int_equal(ftl_keyring_get_stats(kr)->dropped[FTL_KEYRING_DROP_BAD_MAC], len - 1);
	assert_opens(kr, sealed, len); /* the original still opens */
	ftl_keyring_delete(kr);
}

static void test_truncated_packet_is_rejected_as_truncated(void **state)
{
	ftl_keyring *kr = new_ring("prod", 1);
	uint8_t sealed[SEALED_LEN];
	seal(kr, sealed);
	for (size_t len = 0; len < FTL_KEYRING_OVERHEAD; len++)
		assert_dropped(kr, sealed, len, FTL_KEYRING_DROP_TRUNCATED);
	/* Longer than the overhead but cut short: the tag no longer matches. */
	assert_dropped(kr, sealed, SEALED_LEN - 1, FTL_KEYRING_DROP_BAD_MAC);
	ftl_keyring_delete(kr);
}

static void test_packet_larger_than_the_callers_buffer_is_rejected_as_too_long(void **state)
{
	ftl_keyring *kr = new_ring("prod", 1);
	uint8_t sealed[SEALED_LEN], pt[PT_LEN - 1];
	size_t len = seal(kr, sealed), pt_len;
	ftl_keyring_drop why;
	assert_int_equal(ftl_keyring_open(kr, sealed, len, pt, sizeof pt, &pt_len, &why), -1);
	assert_int_equal(why, FTL_KEYRING_DROP_TOO_LONG);
	ftl_keyring_delete(kr);
}

static void test_seal_refuses_a_buffer_too_small(void **state)
{
	ftl_keyring *kr = new_ring("prod", 1);
	uint8_t out[SEALED_LEN];
	size_t len;
	assert_int_equal(ftl_keyring_seal(kr, plaintext, PT_LEN, out, SEALED_LEN - 1, &len), FTL_ERR_INVALID);
	assert_int_equal(ftl_keyring_get_stats(kr)->sealed, 0);
	ftl_keyring_delete(kr);
}

static void test_insecure_mode_round_trips_in_plaintext(void **state)
{
	ftl_keyring *kr = ftl_keyring_new_insecure("prod");
	uint8_t out[SEALED_LEN];
	size_t len;
	uint8_t key[FTL_KEY_SIZE];

	assert_non_null(kr);
	assert_true(ftl_keyring_is_insecure(kr));
	assert_int_equal(ftl_keyring_seal(kr, plaintext, PT_LEN, out, sizeof out, &len), 0);
	assert_int_equal(len, PT_LEN + 1);
	assert_int_equal(out[0], 0x00);
	assert_memory_equal(out + 1, plaintext, PT_LEN);
	assert_opens(kr, out, len);
	assert_dropped(kr, out, 0, FTL_KEYRING_DROP_TRUNCATED);
	make_key(key, 1);
	assert_int_equal(ftl_keyring_install(kr, key), FTL_ERR_INVALID); /* an insecure ring holds no keys */
	assert_int_equal(ftl_keyring_list(kr, NULL, 0), 0);
	ftl_keyring_delete(kr);
}

static void test_secure_and_insecure_nodes_drop_each_other_as_bad_mode(void **state)
{
	ftl_keyring *secure = new_ring("prod", 1), *insecure = ftl_keyring_new_insecure("prod");
	uint8_t sealed[SEALED_LEN], plain[SEALED_LEN], unknown[SEALED_LEN];
	size_t sealed_len = seal(secure, sealed), plain_len;

	assert_int_equal(ftl_keyring_seal(insecure, plaintext, PT_LEN, plain, sizeof plain, &plain_len), 0);
	assert_dropped(insecure, sealed, sealed_len, FTL_KEYRING_DROP_BAD_MODE);
	assert_dropped(secure, plain, plain_len, FTL_KEYRING_DROP_BAD_MODE);
	memcpy(unknown, sealed, sealed_len);
	unknown[0] = 0x7f;
	assert_dropped(secure, unknown, sealed_len, FTL_KEYRING_DROP_BAD_MODE);
	assert_dropped(insecure, unknown, sealed_len, FTL_KEYRING_DROP_BAD_MODE);
	ftl_keyring_delete(secure);
	ftl_keyring_delete(insecure);
}

static void test_key_rotation_never_cuts_two_nodes_off(void **state)
{
	ftl_keyring *a = new_ring("prod", 1), *b = new_ring("prod", 1);
	uint8_t old_key[FTL_KEY_SIZE], new_key[FTL_KEY_SIZE], listed[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE];
	uint8_t old_sealed[SEALED_LEN], new_sealed[SEALED_LEN];
	size_t old_len, new_len;

	make_key(old_key, 1);
	make_key(new_key, 2);
	old_len = seal(a, old_sealed);

	/* 1. install everywhere: nothing changes on the wire, old packets still open */
	assert_int_equal(ftl_keyring_install(a, new_key), 0);
	assert_int_equal(ftl_keyring_install(b, new_key), 0);
	assert_int_equal(ftl_keyring_install(b, new_key), 0); /* idempotent */
	assert_int_equal(ftl_keyring_list(b, listed, FTL_KEYRING_MAX_KEYS), 2);
	assert_opens(b, old_sealed, old_len);

	/* 2. use the new key on a: b, holding both, opens what a now seals; a still opens b's old-key packets */
	assert_int_equal(ftl_keyring_use(a, new_key), 0);
	assert_int_equal(ftl_keyring_list(a, listed, FTL_KEYRING_MAX_KEYS), 2);
	assert_memory_equal(listed[0], new_key, FTL_KEY_SIZE);
	assert_memory_equal(listed[1], old_key, FTL_KEY_SIZE);
	new_len = seal(a, new_sealed);
	assert_opens(b, new_sealed, new_len);
	old_len = seal(b, old_sealed);
	assert_opens(a, old_sealed, old_len);

	/* 3. remove the old key: the primary cannot be removed; once removed, the old key opens nothing */
	assert_int_equal(ftl_keyring_use(b, new_key), 0);
	assert_int_equal(ftl_keyring_remove(a, new_key), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "primary"));
	assert_int_equal(ftl_keyring_remove(a, old_key), 0);
	assert_int_equal(ftl_keyring_remove(a, old_key), FTL_ERR_INVALID); /* no longer installed */
	assert_int_equal(ftl_keyring_list(a, listed, FTL_KEYRING_MAX_KEYS), 1);
	assert_dropped(a, old_sealed, old_len, FTL_KEYRING_DROP_BAD_MAC);
	new_len = seal(b, new_sealed);
	assert_opens(a, new_sealed, new_len);
	ftl_keyring_delete(a);
	ftl_keyring_delete(b);
}

static void test_ring_refuses_unknown_keys_and_overflow(void **state)
{
	ftl_keyring *kr = new_ring("prod", 0);
	uint8_t key[FTL_KEY_SIZE];

	make_key(key, 100);
	assert_int_equal(ftl_keyring_use(kr, key), FTL_ERR_INVALID);
	assert_int_equal(ftl_keyring_remove(kr, key), FTL_ERR_INVALID);
	for (int i = 1; i < FTL_KEYRING_MAX_KEYS; i++) {
		make_key(key, (uint8_t)i);
		assert_int_equal(ftl_keyring_install(kr, key), 0);
	}
	make_key(key, 100);
	assert_int_equal(ftl_keyring_install(kr, key), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "full"));
	assert_int_equal(ftl_keyring_list(kr, NULL, 0), FTL_KEYRING_MAX_KEYS);
	ftl_keyring_delete(kr);
}

static void test_cluster_name_must_be_present_and_short(void **state)
{
	char long_name[FTL_CLUSTER_MAX + 1];
	uint8_t key[FTL_KEY_SIZE];

	make_key(key, 1);
	assert_null(ftl_keyring_new("", key));
	assert_string_equal(ftl_diag_message(), "cluster name is empty");
	memset(long_name, 'c', FTL_CLUSTER_MAX);
	long_name[FTL_CLUSTER_MAX] = '\0';
	assert_null(ftl_keyring_new_insecure(long_name));
	assert_string_equal(ftl_diag_message(), "cluster name too long");
	long_name[FTL_CLUSTER_MAX - 1] = '\0';
	ftl_keyring_delete(ftl_keyring_new(long_name, key));
}

static void test_base64_key_round_trips(void **state)
{
	uint8_t key[FTL_KEY_SIZE], back[FTL_KEY_SIZE];
	char text[45], with_newline[48];

	make_key(key, 200);
	ftl_key_to_base64(key, text, sizeof text);
	assert_int_equal(strlen(text), 44);
	assert_int_equal(ftl_key_from_base64(text, back), 0);
	assert_memory_equal(key, back, FTL_KEY_SIZE);
	snprintf(with_newline, sizeof with_newline, "%s\n", text); /* as read from a file or a Secret */
	assert_int_equal(ftl_key_from_base64(with_newline, back), 0);
	assert_memory_equal(key, back, FTL_KEY_SIZE);
}

static void test_bad_base64_key_is_rejected(void **state)
{
	uint8_t key[FTL_KEY_SIZE];
	static const char *const bad[] = {
		"",
		"not base64 at all!",
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",      /* 32 bytes, padding missing */
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==",     /* 31 bytes */
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g",     /* 33 bytes */
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh-_",     /* URL-safe alphabet */
	};
	assert_int_equal(ftl_key_from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", key), 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(ftl_key_from_base64(bad[i], key), FTL_ERR_INVALID);
	assert_int_equal(ftl_key_from_base64(NULL, key), FTL_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sealed_packet_opens_with_the_same_key_and_cluster),
		cmocka_unit_test(test_each_seal_uses_a_fresh_nonce),
		cmocka_unit_test(test_wrong_key_is_rejected_as_bad_mac),
		cmocka_unit_test(test_wrong_cluster_name_is_rejected_as_bad_mac),
		cmocka_unit_test(test_tampered_byte_is_rejected_and_counted),
		cmocka_unit_test(test_truncated_packet_is_rejected_as_truncated),
		cmocka_unit_test(test_packet_larger_than_the_callers_buffer_is_rejected_as_too_long),
		cmocka_unit_test(test_seal_refuses_a_buffer_too_small),
		cmocka_unit_test(test_insecure_mode_round_trips_in_plaintext),
		cmocka_unit_test(test_secure_and_insecure_nodes_drop_each_other_as_bad_mode),
		cmocka_unit_test(test_key_rotation_never_cuts_two_nodes_off),
		cmocka_unit_test(test_ring_refuses_unknown_keys_and_overflow),
		cmocka_unit_test(test_cluster_name_must_be_present_and_short),
		cmocka_unit_test(test_base64_key_round_trips),
		cmocka_unit_test(test_bad_base64_key_is_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
