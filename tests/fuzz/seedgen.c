/* Writes the seed corpus of every fuzz target from valid encodings, so that the corpus follows the
 * codec as it changes instead of going stale in git. Run at build time (target fuzz_corpus):
 *   fuzz_seedgen OUTDIR   ->   OUTDIR/fuzz_wire_packet/, OUTDIR/fuzz_wire_push_pull/, OUTDIR/fuzz_keyring_open/,
 *                              OUTDIR/fuzz_rdv_msg/, OUTDIR/fuzz_tcp_frame/, OUTDIR/fuzz_node_meta/
 * Seeds: packets of every message type (short and at their caps), an empty packet, a packet with an
 * unknown key and an unknown message type, push-pull frames of 0, 1 and several members, each packet
 * seed sealed with the fixture key and in insecure mode, and rendezvous messages of every type (short and
 * at their caps), TCP connection streams (small frames, a large one behind its sealed header), and members'
 * metadata (a worker, a worker of a replica, a member that is not a worker). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <msgpack.h>

#include "fuzz_fixture.h"
#include "membership/keyring.h"
#include "rdv_samples.h"
#include "channel/tcp_frame.h"
#include "node/node_meta.h"
#include "membership/wire.h"
#include "wire_samples.h"

typedef struct seed {
	uint8_t bytes[4096];
	size_t len;
} seed;

enum { PACKET_SEEDS = 6 };

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		return -1;
	}
	return 0;
}

static int write_seed(const char *dir, const char *target, const char *name, const uint8_t *bytes, size_t len)
{
	char path[4096];
	FILE *f;
	snprintf(path, sizeof path, "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* A packet of one message of each type from first to last, short or at the caps. */
static void packet_of_types(seed *s, int first, int last, bool is_max)
{
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, s->bytes, sizeof s->bytes);
	for (int t = first; t <= last; t++) {
		ftl_msg m = sample_msg((ftl_msg_type)t, is_max);
		if (ftl_wire_packet_add(&p, &m) != 0)
			abort(); /* the samples are valid and fit */
	}
	s->len = ftl_wire_packet_finish(&p);
}

/* A packet as a newer peer might send: an ack with an unknown key, then a message of an unknown type. */
static void packet_from_the_future(seed *s)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&sb, "\x01", 1);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_map(&pk, 4);
	msgpack_pack_uint8(&pk, 0); msgpack_pack_uint8(&pk, FTL_MSG_ACK);
	msgpack_pack_uint8(&pk, 1); msgpack_pack_uint32(&pk, 77);
	msgpack_pack_uint8(&pk, 4); msgpack_pack_str_with_body(&pk, "w7", 2);
	msgpack_pack_uint8(&pk, 40); msgpack_pack_array(&pk, 1); msgpack_pack_double(&pk, 1.5);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_uint8(&pk, 0); msgpack_pack_uint8(&pk, 60);
	msgpack_pack_uint8(&pk, 1); msgpack_pack_bin_with_body(&pk, "xyz", 3);
	if (sb.size > sizeof s->bytes)
		abort();
	memcpy(s->bytes, sb.data, sb.size);
	s->len = sb.size;
	msgpack_sbuffer_destroy(&sb);
}

static int write_push_pull_seeds(const char *dir)
{
	static const uint32_t counts[] = {0, 1, 6};
	ftl_push_pull hdr;
	ftl_pp_member members[6];
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		char name[32];
		uint8_t *buf;
		size_t len;
		int rc;
		sample_push_pull(&hdr, members, counts[i]);
		hdr.is_join = i % 2 == 0;
		if (ftl_wire_encode_push_pull(&hdr, members, &buf, &len) != 0)
			return -1;
		snprintf(name, sizeof name, "members-%u", counts[i]);
		rc = write_seed(dir, "fuzz_wire_push_pull", name, buf, len);
		free(buf);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* A rendezvous message of every type, short (3 members) and at the caps (8 members of maximal names). */
static int write_rdv_seeds(const char *dir)
{
	ftl_rdv_member members[8];
	for (int t = 0; t < RDV_MSG_TYPE_MAX; t++) {
		for (int is_max = 0; is_max < 2; is_max++) {
			rdv_msg m = rdv_sample_msg((rdv_msg_type)t, is_max, members, is_max ? 8 : 3);
			char name[48];
			uint8_t *buf;
			size_t len;
			int rc;
			if (rdv_encode(&m, &buf, &len) != 0)
				return -1;
			snprintf(name, sizeof name, "%s-%s", rdv_msg_type_strs[t], is_max ? "max" : "short");
			rc = write_seed(dir, "fuzz_rdv_msg", name, buf, len);
			free(buf);
			if (rc != 0)
				return -1;
		}
	}
	return 0;
}

/* Each packet seed, sealed with the fixture key and in plaintext (insecure) mode. */
static int write_keyring_seeds(const char *dir, const seed *packets, size_t n)
{
	uint8_t key[FTL_KEY_SIZE], out[sizeof packets[0].bytes + FTL_KEYRING_OVERHEAD];
	ftl_keyring *rings[2];
	int rc = 0;

	fuzz_fixture_key(key);
	rings[0] = ftl_keyring_new(FUZZ_CLUSTER, key);
	rings[1] = ftl_keyring_new_insecure(FUZZ_CLUSTER);
	if (rings[0] == NULL || rings[1] == NULL)
		return -1;
	for (size_t r = 0; r < 2 && rc == 0; r++) {
		for (size_t i = 0; i < n && rc == 0; i++) {
			char name[32];
			size_t len;
			snprintf(name, sizeof name, "%s-%zu", r == 0 ? "sealed" : "plain", i);
			rc = ftl_keyring_seal(rings[r], packets[i].bytes, packets[i].len, out, sizeof out, &len);
			rc = rc || write_seed(dir, "fuzz_keyring_open", name, out, len);
		}
	}
	ftl_keyring_delete(rings[0]);
	ftl_keyring_delete(rings[1]);
	return rc;
}

/* Connection streams for fuzz_tcp_frame: small frames of each kind, and the start of a large frame behind
 * its sealed header (cut to the replay's input size), under the secure and the insecure fixture ring. */
static int write_tcp_frame_seeds(const char *dir)
{
	static uint8_t body[300u << 10];
	uint8_t key[FTL_KEY_SIZE];
	fuzz_fixture_key(key);
	ftl_keyring *rings[2] = {ftl_keyring_new(FUZZ_CLUSTER, key), ftl_keyring_new_insecure(FUZZ_CLUSTER)};
	if (rings[0] == NULL || rings[1] == NULL)
		return -1;
	memset(body, 0x5a, sizeof body);
	static const struct { uint8_t kind; size_t len; } frames[] = {
		{FTL_FRAME_PUSH_PULL, 60}, {FTL_FRAME_RENDEZVOUS, 200}, {FTL_FRAME_PUSH_PULL, sizeof body}};
	int rc = 0;
	for (size_t r = 0; r < 2 && rc == 0; r++) {
		for (size_t i = 0; i < sizeof frames / sizeof frames[0] && rc == 0; i++) {
			uint8_t *out;
			size_t len;
			char name[32];
			snprintf(name, sizeof name, "%s-%zu", r == 0 ? "sealed" : "plain", i);
			if (ftl_tcp_frame_encode(rings[r], frames[i].kind, body, frames[i].len, &out, &len) != 0)
				return -1;
			rc = write_seed(dir, "fuzz_tcp_frame", name, out, len < 4096 ? len : 4096);
			free(out);
		}
	}
	ftl_keyring_delete(rings[0]);
	ftl_keyring_delete(rings[1]);
	return rc;
}

/* Members' metadata: a plain worker, a worker of a replica (short and at the caps), a member that is not a
 * worker (the user's bytes alone) and an empty one. */
static int write_node_meta_seeds(const char *dir)
{
	ftl_rdv_member plain = {0}, shard = {0}, widest = {0};
	snprintf(plain.data_addr, sizeof plain.data_addr, "10.0.0.1:29500");
	shard = plain;
	snprintf(shard.replica, sizeof shard.replica, "host-1");
	shard.replica_index = 1;
	shard.replica_size = 2;
	memset(widest.data_addr, '9', sizeof widest.data_addr - 1);
	memset(widest.replica, 'r', sizeof widest.replica - 1);
	widest.replica_index = FTL_RDV_MAX_MEMBERS - 1;
	widest.replica_size = FTL_RDV_MAX_MEMBERS;
	const struct {
		const char *name;
		const ftl_rdv_member *m;
		const char *user;
	} seeds[] = {{"plain", &plain, "zone=a"}, {"replica", &shard, ""}, {"replica-widest", &widest, "u"}};
	uint8_t buf[FTL_META_MAX];
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
		size_t len = ftl_meta_pack(seeds[i].m, (const uint8_t *)seeds[i].user, strlen(seeds[i].user), buf,
					   sizeof buf);
		if (len == 0 || write_seed(dir, "fuzz_node_meta", seeds[i].name, buf, len) != 0)
			return -1;
	}
	if (write_seed(dir, "fuzz_node_meta", "user-only", (const uint8_t *)"zone=a", 6) != 0 ||
	    write_seed(dir, "fuzz_node_meta", "empty", (const uint8_t *)"", 0) != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const targets[] = {"fuzz_wire_packet", "fuzz_wire_push_pull", "fuzz_keyring_open",
					      "fuzz_rdv_msg", "fuzz_tcp_frame", "fuzz_node_meta"};
	static seed packets[PACKET_SEEDS];
	char path[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	if (make_dir(argv[1]) != 0)
		return 1;
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", argv[1], targets[i]);
		if (make_dir(path) != 0)
			return 1;
	}
	packet_of_types(&packets[0], 0, FTL_MSG_TYPE_MAX - 1, false);
	packet_of_types(&packets[1], FTL_MSG_PING, FTL_MSG_ALIVE, true);
	packet_of_types(&packets[2], FTL_MSG_SUSPECT, FTL_MSG_LEFT, true);
	packet_of_types(&packets[3], FTL_MSG_PING, FTL_MSG_PING - 1, false); /* empty */
	packet_from_the_future(&packets[4]);
	packet_of_types(&packets[5], FTL_MSG_KEY_OP, FTL_MSG_NAME_TAKEN, true);
	for (size_t i = 0; i < PACKET_SEEDS; i++) {
		char name[32];
		snprintf(name, sizeof name, "packet-%zu", i);
		if (write_seed(argv[1], "fuzz_wire_packet", name, packets[i].bytes, packets[i].len) != 0)
			return 1;
	}
	if (write_push_pull_seeds(argv[1]) != 0 || write_keyring_seeds(argv[1], packets, PACKET_SEEDS) != 0 ||
	    write_rdv_seeds(argv[1]) != 0 || write_tcp_frame_seeds(argv[1]) != 0 || write_node_meta_seeds(argv[1]) != 0) {
		fprintf(stderr, "%s: could not write the seeds\n", argv[0]);
		return 1;
	}
	return 0;
}
