/* The wire codec's promises: every message survives a round trip, packets stay within their buffer, and
 * hostile bytes (truncated, oversized, mistyped, lying about their counts, random) are refused with a
 * reason instead of crashing or allocating. Hand-built packets use msgpack-c directly, as a peer would. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "../fuzz/wire_equal.h"
#include "../fuzz/wire_samples.h"
#include "membership/keyring.h"
#include "membership/wire.h"

static void assert_msg_round_trips(const ftl_msg *m)
{
	uint8_t enc[FTL_WIRE_MSG_MAX], buf[FTL_UDP_PACKET_MAX];
	ftl_wire_packet p;
	ftl_msg out[2];
	size_t enc_len, n;

	assert_int_equal(ftl_wire_encode_msg(m, enc, sizeof enc, &enc_len), 0);
	ftl_wire_packet_init(&p, buf, sizeof buf);
	assert_int_equal(ftl_wire_packet_add_raw(&p, enc, enc_len), 0);
	assert_int_equal(ftl_wire_packet_add(&p, m), 0);
	assert_int_equal(ftl_wire_decode_packet(buf, ftl_wire_packet_finish(&p), out, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_true(wire_msg_equal(m, &out[0]));
	assert_true(wire_msg_equal(m, &out[1]));
}

static void test_every_message_type_round_trips_with_short_fields(void **state)
{
	for (int t = 0; t < FTL_MSG_TYPE_MAX; t++) {
		ftl_msg m = sample_msg((ftl_msg_type)t, false);
		assert_msg_round_trips(&m);
	}
}

static void test_every_message_type_round_trips_at_its_caps(void **state)
{
	for (int t = 0; t < FTL_MSG_TYPE_MAX; t++) {
		ftl_msg m = sample_msg((ftl_msg_type)t, true);
		assert_msg_round_trips(&m);
	}
}

static void test_largest_message_fits_wire_msg_max(void **state)
{
	uint8_t enc[FTL_WIRE_MSG_MAX];
	for (int t = 0; t < FTL_MSG_TYPE_MAX; t++) {
		ftl_msg m = sample_msg((ftl_msg_type)t, true);
		size_t len;
		assert_int_equal(ftl_wire_encode_msg(&m, enc, sizeof enc, &len), 0);
		assert_true(len <= FTL_WIRE_MSG_MAX);
	}
}

static void test_encoder_refuses_what_a_decoder_would_refuse(void **state)
{
	uint8_t enc[FTL_WIRE_MSG_MAX];
	size_t len;
	ftl_msg m = sample_msg(FTL_MSG_ALIVE, false);

	m.u.alive.name[0] = '\0'; /* empty name */
	assert_int_equal(ftl_wire_encode_msg(&m, enc, sizeof enc, &len), -1);
	m = sample_msg(FTL_MSG_ALIVE, false);
	memset(m.u.alive.name, 'x', FTL_NAME_MAX); /* no terminator */
	assert_int_equal(ftl_wire_encode_msg(&m, enc, sizeof enc, &len), -1);
	m = sample_msg(FTL_MSG_ALIVE, false);
	m.u.alive.meta_len = FTL_META_MAX + 1;
	assert_int_equal(ftl_wire_encode_msg(&m, enc, sizeof enc, &len), -1);
	m.type = FTL_MSG_TYPE_MAX;
	assert_int_equal(ftl_wire_encode_msg(&m, enc, sizeof enc, &len), -1);
}

static void test_encoder_refuses_a_buffer_too_small(void **state)
{
	uint8_t enc[FTL_WIRE_MSG_MAX];
	size_t len, full;
	ftl_msg m = sample_msg(FTL_MSG_ALIVE, true);
	assert_int_equal(ftl_wire_encode_msg(&m, enc, sizeof enc, &full), 0);
	for (size_t cap = 0; cap < full; cap++)
		assert_int_equal(ftl_wire_encode_msg(&m, enc, cap, &len), -1);
}

/* ---- compound packets ---- */

static void test_compound_packet_fills_until_add_refuses_and_fits_its_buffer(void **state)
{
	enum { CAP = FTL_UDP_PACKET_MAX - FTL_KEYRING_OVERHEAD };
	uint8_t buf[CAP + 16];
	ftl_msg sent[FTL_WIRE_MAX_MSGS], got[FTL_WIRE_MAX_MSGS];
	ftl_wire_packet p;
	size_t n, len_before;
	uint32_t count_before;

	memset(buf + CAP, 0xa5, 16); /* guard bytes past the end */
	ftl_wire_packet_init(&p, buf, CAP);
	for (;;) {
		sent[p.count] = sample_msg((ftl_msg_type)(p.count % FTL_MSG_TYPE_MAX), true);
		len_before = p.len;
		count_before = p.count;
		if (ftl_wire_packet_add(&p, &sent[p.count]) != 0)
			break;
		assert_true(p.len <= CAP);
	}
	assert_int_equal(p.len, len_before); /* a refused add changes nothing */
	assert_int_equal(p.count, count_before);
	assert_true(p.count >= 3);
	for (int i = 0; i < 16; i++)
		assert_int_equal(buf[CAP + i], 0xa5);

	assert_int_equal(ftl_wire_decode_packet(buf, ftl_wire_packet_finish(&p), got, FTL_WIRE_MAX_MSGS, &n),
			 0);
	assert_int_equal(n, p.count);
	for (size_t i = 0; i < n; i++)
		assert_true(wire_msg_equal(&sent[i], &got[i]));
}

static void test_compound_packet_refuses_more_than_max_msgs(void **state)
{
	uint8_t buf[8192];
	ftl_msg ack = sample_msg(FTL_MSG_ACK, false), got[FTL_WIRE_MAX_MSGS];
	ftl_wire_packet p;
	size_t n;

	ftl_wire_packet_init(&p, buf, sizeof buf);
	for (int i = 0; i < FTL_WIRE_MAX_MSGS; i++)
		assert_int_equal(ftl_wire_packet_add(&p, &ack), 0);
	assert_int_equal(ftl_wire_packet_add(&p, &ack), -1);
	assert_int_equal(ftl_wire_packet_add_raw(&p, buf + 6, 1), -1);
	assert_int_equal(ftl_wire_decode_packet(buf, ftl_wire_packet_finish(&p), got, FTL_WIRE_MAX_MSGS, &n),
			 0);
	assert_int_equal(n, FTL_WIRE_MAX_MSGS);
}

static void test_empty_packet_decodes_to_no_messages(void **state)
{
	uint8_t buf[16];
	ftl_wire_packet p;
	ftl_msg got[1];
	size_t n = 99;
	ftl_wire_packet_init(&p, buf, sizeof buf);
	assert_int_equal(ftl_wire_packet_room(&p), sizeof buf - 6);
	assert_int_equal(ftl_wire_decode_packet(buf, ftl_wire_packet_finish(&p), got, 1, &n), 0);
	assert_int_equal(n, 0);
}

/* ---- hand-built packets, as a peer of another version (or an attacker) would send ---- */

typedef struct raw {
	msgpack_sbuffer sb;
	msgpack_packer pk;
} raw;

/* Starts a packet: version byte, then an array of n messages. */
static void raw_begin(raw *r, uint8_t version, uint32_t n)
{
	msgpack_sbuffer_init(&r->sb);
	msgpack_packer_init(&r->pk, &r->sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&r->sb, (const char *)&version, 1);
	msgpack_pack_array(&r->pk, n);
}

static void raw_uint(raw *r, uint64_t key, uint64_t value)
{
	msgpack_pack_uint64(&r->pk, key);
	msgpack_pack_uint64(&r->pk, value);
}

static void raw_str(raw *r, uint64_t key, const char *s, size_t len)
{
	msgpack_pack_uint64(&r->pk, key);
	msgpack_pack_str_with_body(&r->pk, s, len);
}

/* An ack map with extra_keys more pairs to come from the caller. */
static void raw_ack(raw *r, uint32_t extra_keys)
{
	msgpack_pack_map(&r->pk, 3 + extra_keys);
	raw_uint(r, 0, FTL_MSG_ACK);
	raw_uint(r, 1, 42);
	raw_str(r, 4, "w1", 2);
}

static int raw_decode(raw *r, ftl_msg *out, size_t max, size_t *n)
{
	int rc = ftl_wire_decode_packet((const uint8_t *)r->sb.data, r->sb.size, out, max, n);
	msgpack_sbuffer_destroy(&r->sb);
	return rc;
}

static void assert_rejected(raw *r, const char *why)
{
	ftl_msg out[FTL_WIRE_MAX_MSGS];
	size_t n = 99;
	assert_int_equal(raw_decode(r, out, FTL_WIRE_MAX_MSGS, &n), -1);
	assert_int_equal(n, 0);
	assert_true(ftl_diag_message()[0] != '\0');
	assert_string_equal(ftl_diag_message(), why);
}

static void test_unknown_key_inside_a_message_is_ignored(void **state)
{
	raw r;
	ftl_msg out[1];
	size_t n;

	raw_begin(&r, FTL_WIRE_VERSION, 1);
	raw_ack(&r, 2);
	msgpack_pack_uint64(&r.pk, 99); /* a nested value under an unknown key */
	msgpack_pack_array(&r.pk, 2);
	msgpack_pack_str_with_body(&r.pk, "x", 1);
	msgpack_pack_map(&r.pk, 0);
	raw_uint(&r, 1000000, 5); /* a large unknown key */
	assert_int_equal(raw_decode(&r, out, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].type, FTL_MSG_ACK);
	assert_int_equal(out[0].u.ack.seq, 42);
	assert_string_equal(out[0].u.ack.source, "w1");
}

/* An alive map; with fps_len >= 0, key 21 carries fps_len bytes of key fingerprints. */
static void raw_alive(raw *r, int fps_len)
{
	static const uint8_t fps[2 * FTL_KEY_FPS_MAX * FTL_KEY_FP_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	msgpack_pack_map(&r->pk, fps_len >= 0 ? 6 : 5);
	raw_uint(r, 0, FTL_MSG_ALIVE);
	raw_str(r, 7, "w1", 2);
	raw_uint(r, 8, 1);
	raw_uint(r, 9, 2);
	raw_str(r, 10, "10.0.0.1:7946", 13);
	if (fps_len >= 0) {
		msgpack_pack_uint64(&r->pk, 21);
		msgpack_pack_bin_with_body(&r->pk, fps, (size_t)fps_len);
	}
}

/* A packet of one alive (raw_alive) that must decode. */
static ftl_msg decoded_alive(int fps_len)
{
	raw r;
	ftl_msg out[1];
	size_t n = 0;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	raw_alive(&r, fps_len);
	assert_int_equal(raw_decode(&r, out, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].u.alive.name, "w1");
	return out[0];
}

static void test_alive_from_an_agent_before_key_fingerprints_decodes_with_none(void **state)
{
	assert_int_equal(decoded_alive(-1).u.alive.key_fps.count, 0);
	/* and one with fingerprints, as this version sends it: 8 bytes each, in order */
	ftl_msg m = decoded_alive(2 * FTL_KEY_FP_SIZE);
	assert_int_equal(m.u.alive.key_fps.count, 2);
	assert_int_equal(m.u.alive.key_fps.fp[0][0], 1);
	assert_int_equal(m.u.alive.key_fps.fp[1][0], 9);
}

static void test_key_fingerprints_of_a_bad_length_are_rejected(void **state)
{
	raw r;
	const int bad[] = {FTL_KEY_FP_SIZE - 1, FTL_KEY_FP_SIZE + 1, (FTL_KEY_FPS_MAX + 1) * FTL_KEY_FP_SIZE};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		raw_begin(&r, FTL_WIRE_VERSION, 1);
		raw_alive(&r, bad[i]);
		assert_rejected(&r, "bad key fingerprints");
	}
	/* an empty bin is no fingerprints, as an absent key is */
	assert_int_equal(decoded_alive(0).u.alive.key_fps.count, 0);
}

static void test_encoder_refuses_more_key_fingerprints_than_a_keyring_holds(void **state)
{
	uint8_t enc[FTL_WIRE_MSG_MAX];
	size_t len;
	ftl_msg m = sample_msg(FTL_MSG_ALIVE, false);
	m.u.alive.key_fps.count = FTL_KEY_FPS_MAX + 1;
	assert_int_equal(ftl_wire_encode_msg(&m, enc, sizeof enc, &len), -1);
}

static void test_unknown_message_type_is_skipped_and_the_rest_delivered(void **state)
{
	raw r;
	ftl_msg out[3];
	size_t n;

	raw_begin(&r, FTL_WIRE_VERSION, 3);
	raw_ack(&r, 0);
	msgpack_pack_map(&r.pk, 2);
	raw_uint(&r, 0, 200); /* a message type from the future, with fields we cannot check */
	raw_str(&r, 1, "not a seq", 9);
	raw_ack(&r, 0);
	assert_int_equal(raw_decode(&r, out, 3, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].type, FTL_MSG_ACK);
	assert_int_equal(out[1].type, FTL_MSG_ACK);
}

static void test_missing_required_key_is_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 2);
	raw_uint(&r, 0, FTL_MSG_ACK);
	raw_uint(&r, 1, 42); /* no source */
	assert_rejected(&r, "missing field");

	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 1);
	raw_uint(&r, 1, 42); /* no type */
	assert_rejected(&r, "missing type");
}

/* A name_taken map as a peer builds it (keys 7 name, 8 generation, 10 addr, 12 from), without `skip`. */
static void raw_name_taken(raw *r, int skip)
{
	raw_begin(r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r->pk, skip ? 4 : 5);
	raw_uint(r, 0, FTL_MSG_NAME_TAKEN);
	if (skip != 7)
		raw_str(r, 7, "w1", 2);
	if (skip != 8)
		raw_uint(r, 8, 1234);
	if (skip != 10)
		raw_str(r, 10, "10.0.0.1:7946", 13);
	if (skip != 12)
		raw_str(r, 12, "w0", 2);
}

static void test_name_taken_decodes_from_its_keys_and_needs_each_one(void **state)
{
	raw r;
	ftl_msg out[1];
	size_t n;
	raw_name_taken(&r, 0);
	assert_int_equal(raw_decode(&r, out, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].type, FTL_MSG_NAME_TAKEN);
	assert_string_equal(out[0].u.name_taken.name, "w1");
	assert_int_equal(out[0].u.name_taken.generation, 1234);
	assert_string_equal(out[0].u.name_taken.addr, "10.0.0.1:7946");
	assert_string_equal(out[0].u.name_taken.from, "w0");
	static const int keys[] = {7, 8, 10, 12};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		raw_name_taken(&r, keys[i]);
		assert_rejected(&r, "missing field");
	}
}

static void test_duplicate_key_is_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	raw_ack(&r, 1);
	raw_uint(&r, 1, 43);
	assert_rejected(&r, "duplicate key");
}

static void test_key_that_is_not_an_unsigned_integer_is_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	raw_ack(&r, 1);
	msgpack_pack_str_with_body(&r.pk, "seq", 3);
	msgpack_pack_uint8(&r.pk, 1);
	assert_rejected(&r, "bad key");

	raw_begin(&r, FTL_WIRE_VERSION, 1);
	raw_ack(&r, 1);
	msgpack_pack_int8(&r.pk, -1);
	msgpack_pack_uint8(&r.pk, 1);
	assert_rejected(&r, "bad key");
}

static void test_oversized_strings_and_meta_are_rejected(void **state)
{
	char text[FTL_META_MAX + 2];
	raw r;
	memset(text, 'x', sizeof text);

	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 3);
	raw_uint(&r, 0, FTL_MSG_ACK);
	raw_uint(&r, 1, 1);
	raw_str(&r, 4, text, FTL_NAME_MAX);
	assert_rejected(&r, "name too long");

	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 5);
	raw_uint(&r, 0, FTL_MSG_PING);
	raw_uint(&r, 1, 1);
	raw_str(&r, 2, "a", 1);
	raw_str(&r, 4, "b", 1);
	raw_str(&r, 5, text, FTL_ADDR_MAX);
	assert_rejected(&r, "address too long");

	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 6);
	raw_uint(&r, 0, FTL_MSG_ALIVE);
	raw_str(&r, 7, "a", 1);
	raw_uint(&r, 8, 1);
	raw_uint(&r, 9, 1);
	raw_str(&r, 10, "h:1", 3);
	msgpack_pack_uint8(&r.pk, 11);
	msgpack_pack_bin_with_body(&r.pk, text, FTL_META_MAX + 1);
	assert_rejected(&r, "meta too long");
}

static void test_empty_name_and_name_with_nul_are_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 3);
	raw_uint(&r, 0, FTL_MSG_NACK);
	raw_uint(&r, 1, 1);
	raw_str(&r, 4, "", 0);
	assert_rejected(&r, "empty name");

	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 3);
	raw_uint(&r, 0, FTL_MSG_NACK);
	raw_uint(&r, 1, 1);
	raw_str(&r, 4, "a\0b", 3);
	assert_rejected(&r, "NUL in string");
}

static void test_wrong_type_values_are_rejected(void **state)
{
	raw r;

	raw_begin(&r, FTL_WIRE_VERSION, 1); /* seq as a string */
	msgpack_pack_map(&r.pk, 3);
	raw_uint(&r, 0, FTL_MSG_ACK);
	raw_str(&r, 1, "42", 2);
	raw_str(&r, 4, "w1", 2);
	assert_rejected(&r, "wrong type");

	raw_begin(&r, FTL_WIRE_VERSION, 1); /* source as bin */
	msgpack_pack_map(&r.pk, 3);
	raw_uint(&r, 0, FTL_MSG_ACK);
	raw_uint(&r, 1, 42);
	msgpack_pack_uint8(&r.pk, 4);
	msgpack_pack_bin_with_body(&r.pk, "w1", 2);
	assert_rejected(&r, "wrong type");

	raw_begin(&r, FTL_WIRE_VERSION, 1); /* seq negative */
	msgpack_pack_map(&r.pk, 3);
	raw_uint(&r, 0, FTL_MSG_ACK);
	msgpack_pack_uint8(&r.pk, 1);
	msgpack_pack_int8(&r.pk, -1);
	raw_str(&r, 4, "w1", 2);
	assert_rejected(&r, "wrong type");

	raw_begin(&r, FTL_WIRE_VERSION, 1); /* want_nack as an integer */
	msgpack_pack_map(&r.pk, 7);
	raw_uint(&r, 0, FTL_MSG_PING_REQ);
	raw_uint(&r, 1, 1);
	raw_str(&r, 2, "t", 1);
	raw_str(&r, 3, "t:1", 3);
	raw_str(&r, 4, "s", 1);
	raw_str(&r, 5, "s:1", 3);
	raw_uint(&r, 6, 1);
	assert_rejected(&r, "wrong type");

	raw_begin(&r, FTL_WIRE_VERSION, 1); /* type as a string */
	msgpack_pack_map(&r.pk, 1);
	raw_str(&r, 0, "ack", 3);
	assert_rejected(&r, "wrong type");

	raw_begin(&r, FTL_WIRE_VERSION, 1); /* a message that is not a map */
	msgpack_pack_array(&r.pk, 0);
	assert_rejected(&r, "message not a map");
}

static void test_seq_over_uint32_is_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	msgpack_pack_map(&r.pk, 3);
	raw_uint(&r, 0, FTL_MSG_ACK);
	raw_uint(&r, 1, (uint64_t)UINT32_MAX + 1);
	raw_str(&r, 4, "w1", 2);
	assert_rejected(&r, "integer out of range");
}

static void test_bad_version_is_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION + 1, 1);
	raw_ack(&r, 0);
	assert_rejected(&r, "bad version");
}

static void test_outer_value_that_is_not_an_array_is_rejected(void **state)
{
	raw r;
	msgpack_sbuffer_init(&r.sb);
	msgpack_packer_init(&r.pk, &r.sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&r.sb, "\x01", 1);
	raw_ack(&r, 0);
	assert_rejected(&r, "not an array");
}

static void test_too_many_messages_are_rejected(void **state)
{
	raw r;
	ftl_msg out[FTL_WIRE_MAX_MSGS + 1];
	size_t n;

	raw_begin(&r, FTL_WIRE_VERSION, 3); /* more than the caller's max */
	for (int i = 0; i < 3; i++)
		raw_ack(&r, 0);
	assert_int_equal(raw_decode(&r, out, 2, &n), -1);
	assert_string_equal(ftl_diag_message(), "too many messages");

	raw_begin(&r, FTL_WIRE_VERSION, FTL_WIRE_MAX_MSGS + 1); /* more than any packet may carry */
	for (int i = 0; i < FTL_WIRE_MAX_MSGS + 1; i++)
		raw_ack(&r, 0);
	assert_int_equal(raw_decode(&r, out, FTL_WIRE_MAX_MSGS + 1, &n), -1);
	assert_string_equal(ftl_diag_message(), "too many messages");
}

static void test_trailing_bytes_are_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	raw_ack(&r, 0);
	msgpack_pack_nil(&r.pk);
	assert_rejected(&r, "trailing bytes");
}

static void test_container_claiming_more_elements_than_bytes_is_rejected_before_allocation(void **state)
{
	/* msgpack-c alone would ask for 128 GiB for the first, and 192 GiB for the second. */
	static const uint8_t huge_array[] = {FTL_WIRE_VERSION, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x80};
	static const uint8_t huge_map[] = {FTL_WIRE_VERSION, 0x91, 0xdf, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00};
	ftl_msg out[1];
	size_t n;
	assert_int_equal(ftl_wire_decode_packet(huge_array, sizeof huge_array, out, 1, &n), -1);
	assert_string_equal(ftl_diag_message(), "container larger than input");
	assert_int_equal(ftl_wire_decode_packet(huge_map, sizeof huge_map, out, 1, &n), -1);
	assert_string_equal(ftl_diag_message(), "container larger than input");
}

static void test_deeply_nested_value_is_rejected(void **state)
{
	raw r;
	raw_begin(&r, FTL_WIRE_VERSION, 1);
	raw_ack(&r, 1);
	msgpack_pack_uint8(&r.pk, 99);
	for (int i = 0; i < 40; i++)
		msgpack_pack_array(&r.pk, 1);
	msgpack_pack_nil(&r.pk);
	assert_rejected(&r, "nested too deep");
}

/* A packet holding one of every message type at its caps. */
static size_t every_type_packet(uint8_t *buf, size_t cap)
{
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, buf, cap);
	for (int t = 0; t < FTL_MSG_TYPE_MAX; t++) {
		ftl_msg m = sample_msg((ftl_msg_type)t, t % 2 == 0);
		assert_int_equal(ftl_wire_packet_add(&p, &m), 0);
	}
	return ftl_wire_packet_finish(&p);
}

static void test_packet_truncated_at_every_length_is_rejected(void **state)
{
	uint8_t buf[4096];
	ftl_msg out[FTL_MSG_TYPE_MAX];
	size_t n, len = every_type_packet(buf, sizeof buf);

	assert_int_equal(ftl_wire_decode_packet(buf, len, out, FTL_MSG_TYPE_MAX, &n), 0);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut + 1); /* exactly cut bytes readable, so ASan sees an overread */
		memcpy(copy, buf, cut);
		ftl_diag_clear();
		assert_int_equal(ftl_wire_decode_packet(copy, cut, out, FTL_MSG_TYPE_MAX, &n), -1);
		assert_true(ftl_diag_message()[0] != '\0');
		free(copy);
	}
}

/* xorshift64*: a tiny deterministic generator so that a failure can be replayed from the printed seed. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static void test_random_bytes_and_mutations_never_crash(void **state)
{
	enum { ITERATIONS = 20000 };
	uint64_t seed = UINT64_C(0x5eed2024);
	uint8_t valid[4096], buf[4096];
	ftl_msg out[FTL_WIRE_MAX_MSGS];
	size_t valid_len = every_type_packet(valid, sizeof valid);
	int accepted = 0;

	print_message("seed 0x%llx\n", (unsigned long long)seed);
	for (int i = 0; i < ITERATIONS; i++) {
		size_t len, n;
		int rc;
		if (i % 2 == 0) { /* random bytes behind a valid version byte */
			len = 1 + next_random(&seed) % 300;
			for (size_t j = 0; j < len; j++)
				buf[j] = (uint8_t)next_random(&seed);
			buf[0] = FTL_WIRE_VERSION;
		} else { /* a valid packet with a few bytes changed */
			len = valid_len;
			memcpy(buf, valid, len);
			for (int k = 1 + (int)(next_random(&seed) % 4); k > 0; k--)
				buf[next_random(&seed) % len] = (uint8_t)next_random(&seed);
		}
		rc = ftl_wire_decode_packet(buf, len, out, FTL_WIRE_MAX_MSGS, &n);
		assert_true(rc == 0 || (rc == -1 && ftl_diag_message()[0] != '\0' && n == 0));
		assert_true(n <= FTL_WIRE_MAX_MSGS);
		accepted += rc == 0;
	}
	print_message("%d of %d accepted\n", accepted, ITERATIONS);
}

/* ---- push-pull ---- */

enum { PP_MEMBERS = 5 };

/* Each push-pull test starts from a valid encoded frame of PP_MEMBERS members (cmocka setup). */
typedef struct pp_case {
	ftl_push_pull hdr, got_hdr;
	ftl_pp_member members[PP_MEMBERS], got[PP_MEMBERS];
	uint8_t *buf;
	size_t len;
} pp_case;

static int pp_encode(pp_case *c)
{
	free(c->buf);
	c->buf = NULL;
	return ftl_wire_encode_push_pull(&c->hdr, c->members, &c->buf, &c->len);
}

static int pp_decode(pp_case *c, size_t len, size_t max)
{
	return ftl_wire_decode_push_pull(c->buf, len, &c->got_hdr, c->got, max);
}

static int pp_setup(void **state)
{
	pp_case *c = calloc(1, sizeof *c);
	if (c == NULL)
		return -1;
	sample_push_pull(&c->hdr, c->members, PP_MEMBERS);
	*state = c;
	return pp_encode(c);
}

static int pp_teardown(void **state)
{
	pp_case *c = *state;
	free(c->buf);
	free(c);
	return 0;
}

static void test_push_pull_round_trips_with_several_members(void **state)
{
	pp_case *c = *state;
	assert_int_equal(pp_decode(c, c->len, PP_MEMBERS), 0);
	assert_true(wire_push_pull_equal(&c->hdr, c->members, &c->got_hdr, c->got));

	c->hdr.is_join = false;
	c->hdr.count = 0;
	assert_int_equal(pp_encode(c), 0);
	assert_int_equal(pp_decode(c, c->len, 0), 0);
	assert_true(wire_push_pull_equal(&c->hdr, c->members, &c->got_hdr, c->got));
}

static void test_push_pull_with_more_members_than_max_is_rejected(void **state)
{
	pp_case *c = *state;
	assert_int_equal(pp_decode(c, c->len, PP_MEMBERS - 1), -1);
	assert_string_equal(ftl_diag_message(), "too many members");
	assert_int_equal(c->got_hdr.count, 0);
}

static void test_push_pull_truncated_at_every_length_is_rejected(void **state)
{
	pp_case *c = *state;
	for (size_t cut = 0; cut < c->len; cut++)
		assert_int_equal(pp_decode(c, cut, PP_MEMBERS), -1);
}

static void test_push_pull_member_with_unknown_state_is_rejected(void **state)
{
	pp_case *c = *state;
	c->members[2].state = FTL_MEMBER_STATE_MAX;
	assert_int_equal(pp_encode(c), -1); /* we never send it */

	c->members[2].state = FTL_MEMBER_LEFT;
	assert_int_equal(pp_encode(c), 0);
	for (size_t i = 1; i < c->len; i++) { /* a peer might: turn every state 3 (key 13) into 4 */
		if (c->buf[i - 1] == 13 && c->buf[i] == FTL_MEMBER_LEFT)
			c->buf[i] = FTL_MEMBER_STATE_MAX;
	}
	assert_int_equal(pp_decode(c, c->len, PP_MEMBERS), -1);
	assert_string_equal(ftl_diag_message(), "state out of range");
}

static void test_push_pull_without_member_list_is_rejected(void **state)
{
	raw r;
	ftl_push_pull hdr;
	ftl_pp_member got[1];

	msgpack_sbuffer_init(&r.sb);
	msgpack_packer_init(&r.pk, &r.sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&r.sb, "\x01", 1);
	msgpack_pack_map(&r.pk, 2);
	raw_str(&r, 4, "w1", 2);
	msgpack_pack_uint8(&r.pk, 14);
	msgpack_pack_true(&r.pk);
	assert_int_equal(ftl_wire_decode_push_pull((const uint8_t *)r.sb.data, r.sb.size, &hdr, got, 1), -1);
	assert_string_equal(ftl_diag_message(), "missing field");
	msgpack_sbuffer_destroy(&r.sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_message_type_round_trips_with_short_fields),
		cmocka_unit_test(test_every_message_type_round_trips_at_its_caps),
		cmocka_unit_test(test_largest_message_fits_wire_msg_max),
		cmocka_unit_test(test_encoder_refuses_what_a_decoder_would_refuse),
		cmocka_unit_test(test_encoder_refuses_a_buffer_too_small),
		cmocka_unit_test(test_compound_packet_fills_until_add_refuses_and_fits_its_buffer),
		cmocka_unit_test(test_compound_packet_refuses_more_than_max_msgs),
		cmocka_unit_test(test_empty_packet_decodes_to_no_messages),
		cmocka_unit_test(test_unknown_key_inside_a_message_is_ignored),
		cmocka_unit_test(test_alive_from_an_agent_before_key_fingerprints_decodes_with_none),
		cmocka_unit_test(test_key_fingerprints_of_a_bad_length_are_rejected),
		cmocka_unit_test(test_encoder_refuses_more_key_fingerprints_than_a_keyring_holds),
		cmocka_unit_test(test_unknown_message_type_is_skipped_and_the_rest_delivered),
		cmocka_unit_test(test_missing_required_key_is_rejected),
		cmocka_unit_test(test_name_taken_decodes_from_its_keys_and_needs_each_one),
		cmocka_unit_test(test_duplicate_key_is_rejected),
		cmocka_unit_test(test_key_that_is_not_an_unsigned_integer_is_rejected),
		cmocka_unit_test(test_oversized_strings_and_meta_are_rejected),
		cmocka_unit_test(test_empty_name_and_name_with_nul_are_rejected),
		cmocka_unit_test(test_wrong_type_values_are_rejected),
		cmocka_unit_test(test_seq_over_uint32_is_rejected),
		cmocka_unit_test(test_bad_version_is_rejected),
		cmocka_unit_test(test_outer_value_that_is_not_an_array_is_rejected),
		cmocka_unit_test(test_too_many_messages_are_rejected),
		cmocka_unit_test(test_trailing_bytes_are_rejected),
		cmocka_unit_test(test_container_claiming_more_elements_than_bytes_is_rejected_before_allocation),
		cmocka_unit_test(test_deeply_nested_value_is_rejected),
		cmocka_unit_test(test_packet_truncated_at_every_length_is_rejected),
		cmocka_unit_test(test_random_bytes_and_mutations_never_crash),
		cmocka_unit_test_setup_teardown(test_push_pull_round_trips_with_several_members, pp_setup, pp_teardown),
		cmocka_unit_test_setup_teardown(test_push_pull_with_more_members_than_max_is_rejected, pp_setup, pp_teardown),
		cmocka_unit_test_setup_teardown(test_push_pull_truncated_at_every_length_is_rejected, pp_setup, pp_teardown),
		cmocka_unit_test_setup_teardown(test_push_pull_member_with_unknown_state_is_rejected, pp_setup, pp_teardown),
		cmocka_unit_test(test_push_pull_without_member_list_is_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
