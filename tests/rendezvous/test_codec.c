/* The rendezvous codec: every message type round-trips, and hostile input is refused without harm —
 * truncated at every length, random bytes, bad version, unknown type, overlong strings and blobs, too many
 * members, huge claimed counts, duplicate keys; unknown keys are skipped (rolling upgrades). */
#include "rdv_test.h"

#include <stdlib.h>

#include <msgpack.h>

#include "../fuzz/rdv_samples.h"
#include "rendezvous/rdv_msg.h"
#include "membership/rng.h"

static ftl_rdv_member members[8];

static void round_trip(const rdv_msg *m)
{
	uint8_t *buf;
	size_t len;
	rdv_msg back;
	assert_int_equal(rdv_encode(m, &buf, &len), 0);
	assert_int_equal(rdv_decode(buf, len, &back), 0);
	assert_true(rdv_msg_equal(m, &back));
	rdv_msg_free(&back);
	free(buf);
}

static void test_every_message_type_round_trips(void **state)
{
	for (int t = 0; t < RDV_MSG_TYPE_MAX; t++) {
		for (int is_max = 0; is_max < 2; is_max++) {
			rdv_msg m = rdv_sample_msg((rdv_msg_type)t, is_max, members, is_max ? 8 : 3);
			round_trip(&m);
		}
	}
	/* A promise that accepted nothing carries no view. */
	rdv_msg p = rdv_sample_msg(RDV_MSG_PROMISE, false, members, 0);
	p.accepted = (rdv_ballot){0};
	memset(&p.view, 0, sizeof p.view);
	round_trip(&p);
}

static void test_truncated_at_every_length_is_refused(void **state)
{
	rdv_msg m = rdv_sample_msg(RDV_MSG_COMMIT, true, members, 8);
	uint8_t *buf;
	size_t len;
	assert_int_equal(rdv_encode(&m, &buf, &len), 0);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut + 1); /* exactly cut bytes readable: ASan sees any overread */
		memcpy(copy, buf, cut);
		rdv_msg back;
		ftl_diag_clear(); /* a refusal must say why */
		assert_int_equal(rdv_decode(copy, cut, &back), -1);
		assert_true(ftl_diag_message()[0] != '\0');
		free(copy);
	}
	free(buf);
}

static void test_random_bytes_are_refused_or_decode_sanely(void **state)
{
	ftl_rng rng;
	uint8_t buf[512];
	int decoded = 0;
	ftl_rng_seed(&rng, 42);
	for (int i = 0; i < 20000; i++) {
		size_t len = ftl_rng_below(&rng, sizeof buf);
		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)ftl_rng_next(&rng);
		if (len > 0 && i % 2 == 0)
			buf[0] = RDV_WIRE_VERSION; /* get past the version byte half the time */
		rdv_msg m;
		ftl_diag_clear(); /* a refusal must say why */
		if (rdv_decode(buf, len, &m) == 0) {
			assert_true(m.view.n <= FTL_RDV_MAX_MEMBERS);
			decoded++;
			rdv_msg_free(&m);
		} else {
			assert_true(ftl_diag_message()[0] != '\0');
		}
	}
	printf("20000 random inputs: %d decoded, the rest refused\n", decoded);
}

/* Packs a frame by hand: version byte, then whatever the callback writes. */
typedef void (*pack_fn)(msgpack_packer *pk, void *arg);

static int decode_packed(pack_fn fn, void *arg)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	rdv_msg m;
	int rc;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&sb, "\x01", 1);
	fn(&pk, arg);
	rc = rdv_decode((const uint8_t *)sb.data, sb.size, &m);
	if (rc == 0)
		rdv_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

static void pack_str(msgpack_packer *pk, const char *s, size_t len)
{
	msgpack_pack_str_with_body(pk, s, len);
}

/* A commit header with `extra` more pairs to come, and the view's epoch and lineage. */
static void pack_commit_head(msgpack_packer *pk, uint32_t extra)
{
	msgpack_pack_map(pk, 9 + extra);
	msgpack_pack_uint8(pk, 0); msgpack_pack_uint8(pk, RDV_MSG_COMMIT);
	msgpack_pack_uint8(pk, 1); pack_str(pk, "w1", 2);
	msgpack_pack_uint8(pk, 2); msgpack_pack_uint64(pk, 9);
	msgpack_pack_uint8(pk, 4); msgpack_pack_uint64(pk, 3);
	msgpack_pack_uint8(pk, 5); msgpack_pack_uint64(pk, 1);
	msgpack_pack_uint8(pk, 15); msgpack_pack_uint64(pk, 1);
	msgpack_pack_uint8(pk, 16); msgpack_pack_uint32(pk, 1);
	msgpack_pack_uint8(pk, 12); msgpack_pack_uint64(pk, 3);
	msgpack_pack_uint8(pk, 17); msgpack_pack_uint64(pk, 1);
}

static void pack_member(msgpack_packer *pk, const char *name, size_t name_len)
{
	msgpack_pack_map(pk, 3);
	msgpack_pack_uint8(pk, 1); pack_str(pk, name, name_len);
	msgpack_pack_uint8(pk, 2); msgpack_pack_uint64(pk, 5);
	msgpack_pack_uint8(pk, 3); pack_str(pk, "h:1", 3);
}

static void pack_members(msgpack_packer *pk, void *arg)
{
	uint32_t n = *(const uint32_t *)arg;
	pack_commit_head(pk, 1);
	msgpack_pack_uint8(pk, 13);
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++)
		pack_member(pk, "m", 1);
}

static void pack_long_name(msgpack_packer *pk, void *arg)
{
	char name[FTL_NAME_MAX];
	memset(name, 'n', sizeof name);
	pack_commit_head(pk, 1);
	msgpack_pack_uint8(pk, 13);
	msgpack_pack_array(pk, 1);
	pack_member(pk, name, *(const size_t *)arg);
}

static void pack_blob(msgpack_packer *pk, void *arg)
{
	static uint8_t blob[FTL_RDV_BLOB_MAX + 1];
	pack_commit_head(pk, 2);
	msgpack_pack_uint8(pk, 13);
	msgpack_pack_array(pk, 1);
	pack_member(pk, "m", 1);
	msgpack_pack_uint8(pk, 14);
	msgpack_pack_bin_with_body(pk, blob, *(const size_t *)arg);
}

static void pack_extra_key(msgpack_packer *pk, void *arg)
{
	uint8_t key = *(const uint8_t *)arg;
	pack_commit_head(pk, 2);
	msgpack_pack_uint8(pk, 13);
	msgpack_pack_array(pk, 1);
	pack_member(pk, "m", 1);
	msgpack_pack_uint8(pk, key); /* 40: unknown, skipped; 4: a duplicate, refused */
	msgpack_pack_uint64(pk, 3);
}

/* One member of a replica, its index and size as given (a decoder must refuse index >= size and size 0). */
static void pack_replica_member(msgpack_packer *pk, void *arg)
{
	const uint32_t *index_size = arg;
	pack_commit_head(pk, 1);
	msgpack_pack_uint8(pk, 13);
	msgpack_pack_array(pk, 1);
	msgpack_pack_map(pk, 6);
	msgpack_pack_uint8(pk, 1); pack_str(pk, "m", 1);
	msgpack_pack_uint8(pk, 2); msgpack_pack_uint64(pk, 5);
	msgpack_pack_uint8(pk, 3); pack_str(pk, "h:1", 3);
	msgpack_pack_uint8(pk, 4); pack_str(pk, "host-a", 6);
	msgpack_pack_uint8(pk, 5); msgpack_pack_uint32(pk, index_size[0]);
	msgpack_pack_uint8(pk, 6); msgpack_pack_uint32(pk, index_size[1]);
}

static void test_a_members_replica_must_be_in_range(void **state)
{
	uint32_t fine[2] = {1, 2}, over[2] = {2, 2}, empty[2] = {0, 0};
	assert_int_equal(decode_packed(pack_replica_member, fine), 0);
	assert_int_equal(decode_packed(pack_replica_member, over), -1);
	assert_string_equal(ftl_diag_message(), "replica index out of range");
	assert_int_equal(decode_packed(pack_replica_member, empty), -1);
	assert_string_equal(ftl_diag_message(), "replica index out of range");
}

static void test_bounds_are_enforced(void **state)
{
	uint32_t n = FTL_RDV_MAX_MEMBERS;
	assert_int_equal(decode_packed(pack_members, &n), 0);
	n = FTL_RDV_MAX_MEMBERS + 1;
	assert_int_equal(decode_packed(pack_members, &n), -1);
	assert_string_equal(ftl_diag_message(), "too many members");

	size_t len = FTL_NAME_MAX - 1;
	assert_int_equal(decode_packed(pack_long_name, &len), 0);
	len = FTL_NAME_MAX;
	assert_int_equal(decode_packed(pack_long_name, &len), -1);
	assert_string_equal(ftl_diag_message(), "name too long");

	len = FTL_RDV_BLOB_MAX;
	assert_int_equal(decode_packed(pack_blob, &len), 0);
	len = FTL_RDV_BLOB_MAX + 1;
	assert_int_equal(decode_packed(pack_blob, &len), -1);

	uint8_t key = 40;
	assert_int_equal(decode_packed(pack_extra_key, &key), 0);
	key = 4;
	assert_int_equal(decode_packed(pack_extra_key, &key), -1);
	assert_string_equal(ftl_diag_message(), "duplicate key");
}

static void test_malformed_frames_are_refused_with_a_reason(void **state)
{
	/* version 1, map16 claiming 65535 pairs in 4 bytes: refused before msgpack-c allocates */
	static const uint8_t huge_map[] = {0x01, 0xde, 0xff, 0xff, 0x00};
	/* version 1, array32 of 2^32-1 members under key 13 */
	static const uint8_t huge_array[] = {0x01, 0x81, 0x0d, 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0};
	static const uint8_t bad_version[] = {0x02, 0x80};
	static const uint8_t unknown_type[] = {0x01, 0x81, 0x00, 0x33};
	static const uint8_t not_a_map[] = {0x01, 0x90};
	static const uint8_t trailing[] = {0x01, 0x80, 0x00};
	struct {
		const uint8_t *bytes;
		size_t len;
		const char *why;
	} cases[] = {
		{huge_map, sizeof huge_map, "container larger than input"},
		{huge_array, sizeof huge_array, "container larger than input"},
		{bad_version, sizeof bad_version, "bad version"},
		{unknown_type, sizeof unknown_type, "unknown message type"},
		{not_a_map, sizeof not_a_map, "not a map"},
		{trailing, sizeof trailing, "trailing bytes"},
		{trailing, 0, "truncated"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		rdv_msg m;
		assert_int_equal(rdv_decode(cases[i].bytes, cases[i].len, &m), -1);
		assert_string_equal(ftl_diag_message(), cases[i].why);
	}
}

static void test_encoder_refuses_what_a_decoder_would(void **state)
{
	uint8_t *buf;
	size_t len;
	rdv_msg m = rdv_sample_msg(RDV_MSG_READY, false, members, 0);
	m.from[0] = '\0';
	assert_int_equal(rdv_encode(&m, &buf, &len), -1);
	m = rdv_sample_msg(RDV_MSG_COMMIT, false, members, 3);
	m.view.n = FTL_RDV_MAX_MEMBERS + 1;
	assert_int_equal(rdv_encode(&m, &buf, &len), -1);
	m.type = RDV_MSG_TYPE_MAX;
	assert_int_equal(rdv_encode(&m, &buf, &len), -1);
}

/* A ready whose scale and bench parts lead with an explicit 0 (keys 21 and 24): the parts say nothing, as if
 * absent, so the message decodes, encodes and decodes as one (fuzz_rdv_msg found a max_request kept). */
static void test_a_part_that_leads_with_zero_says_nothing(void **state)
{
	uint8_t *buf;
	size_t len;
	rdv_msg m = rdv_sample_msg(RDV_MSG_READY, true, members, 3);
	assert_int_equal(rdv_encode(&m, &buf, &len), 0);
	msgpack_unpacked up;
	msgpack_unpacked_init(&up);
	assert_int_equal(msgpack_unpack_next(&up, (const char *)buf + 1, len - 1, NULL), MSGPACK_UNPACK_SUCCESS);
	int zeroed = 0;
	for (uint32_t i = 0; i < up.data.via.map.size; i++) {
		msgpack_object_kv *kv = &up.data.via.map.ptr[i];
		if (kv->key.via.u64 == 21 || kv->key.via.u64 == 24) {
			kv->val.via.u64 = 0;
			zeroed++;
		}
	}
	assert_int_equal(zeroed, 2);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&sb, (const char *)buf, 1); /* the version byte */
	assert_int_equal(msgpack_pack_object(&pk, up.data), 0);
	rdv_msg back;
	assert_int_equal(rdv_decode((const uint8_t *)sb.data, sb.size, &back), 0);
	assert_int_equal(back.max_epoch, 0);
	assert_int_equal(back.max_request, 0);
	assert_int_equal(back.bench_epoch, 0);
	assert_int_equal(back.bench.generation, 0);
	assert_int_equal(back.bench.name[0], '\0');
	round_trip(&back);
	rdv_msg_free(&back);
	msgpack_sbuffer_destroy(&sb);
	msgpack_unpacked_destroy(&up);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_message_type_round_trips),
		cmocka_unit_test(test_truncated_at_every_length_is_refused),
		cmocka_unit_test(test_random_bytes_are_refused_or_decode_sanely),
		cmocka_unit_test(test_bounds_are_enforced),
		cmocka_unit_test(test_a_members_replica_must_be_in_range),
		cmocka_unit_test(test_malformed_frames_are_refused_with_a_reason),
		cmocka_unit_test(test_encoder_refuses_what_a_decoder_would),
		cmocka_unit_test(test_a_part_that_leads_with_zero_says_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
