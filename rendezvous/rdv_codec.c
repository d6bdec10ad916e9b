/* The rendezvous codec: rdv_msg <-> MessagePack, on membership's table-driven machinery (wire_schema.h)
 * so that the two protocols share one set of rules for names, integers, blobs, unknown and duplicate keys,
 * and one bounds check (wire_skim) before msgpack-c allocates anything.
 *
 * Frame: byte 0 RDV_WIRE_VERSION, then one MessagePack map with small unsigned-integer keys. Unknown keys
 * are skipped (rolling upgrades); a missing required key, a wrong type, an overlong string or blob, more
 * than FTL_RDV_MAX_MEMBERS members, or an unknown message type makes the frame malformed. The transport
 * seals frames with the cluster key; this file sees plaintext.
 *
 * Key numbering (never renumber or reuse; a new field gets a new key and must be optional):
 *
 *   key  field              value                     carried by
 *    0   type               uint, rdv_msg_type        every message
 *    1   from / name        name                      every message; a member map
 *    2   generation         uint64                    every message; a member map
 *    3   data_addr          addr                      ready; a member map
 *    4   epoch              uint64, sender's view     every message
 *    5   view_digest        uint64, sender's view     every message
 *    6   candidate_digest   uint64                    ready
 *    7   survivors_digest   uint64                    ready
 *    8   ballot round       uint64                    prepare, promise, accept, accepted, reject
 *    9   ballot by          name                      prepare, promise, accept, accepted, reject
 *   10   accepted round     uint64 (0: none)          promise
 *   11   accepted by        name                      promise with accepted round > 0
 *   12   view epoch         uint64                    accept, commit, promise with accepted round > 0
 *   13   view members       array of member maps      with key 12, by rank
 *   14   view blob          bin <= 256, optional      with key 12 (absent = empty)
 *   15   lineage            uint64, sender's view     every message
 *   16   view_size          uint32, sender's view     every message
 *   17   view lineage       uint64                    with key 12
 *   18   rebuild_epoch      uint64                    ready, optional (with key 19; absent = 0)
 *   19   waive_epoch        uint64                    ready, optional (with key 18; absent = 0)
 *   20   steps              uint64, sender's lineage  every message, optional (absent = 0)
 *   21   max_epoch          uint64                    ready, optional (with key 22; absent = 0)
 *   22   max_request        uint32                    ready, with key 21
 *   23   view max_workers   uint32                    with key 12, optional (absent = 0: none set)
 *   24   bench_epoch        uint64                    ready, optional (with keys 25, 26; absent = 0)
 *   25   bench name         name                      ready, with key 24
 *   26   bench generation   uint64                    ready, with key 24
 *   27   view benched name  name                      with key 12, optional (with key 28; absent: none)
 *   28   view benched gen.  uint64                    with key 27
 *
 * A member map has keys of its own: 1 name, 2 generation, 3 data_addr; and, for a member of a replica
 * (rdv_replicas.h), 4 replica (name), 5 replica_index (uint32), 6 replica_size (uint32 >= 1), all three or
 * none (absent: not in a replica).
 *
 * Message type numbers are the enum values, pinned below. */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "rdv_msg.h"
#include "membership/wire_schema.h"
#include "membership/wire_skim.h"

_Static_assert(RDV_MSG_READY == 0 && RDV_MSG_PREPARE == 1 && RDV_MSG_PROMISE == 2 && RDV_MSG_ACCEPT == 3 &&
		       RDV_MSG_ACCEPTED == 4 && RDV_MSG_REJECT == 5 && RDV_MSG_COMMIT == 6,
	       "message type numbers are the protocol: append new types, never reorder");
_Static_assert(FTL_RDV_BLOB_MAX == FTL_META_MAX, "the blob travels as a WIRE_KIND_META field");

#define KEY_TYPE 0
#define KEY_MEMBERS 13
#define KEY_REBUILD_EPOCH 18
#define KEY_STEPS 20
#define KEY_MAX_EPOCH 21
#define KEY_VIEW_MAX 23
#define KEY_BENCH_EPOCH 24
#define KEY_VIEW_BENCHED 27
#define KEY_MEMBER_REPLICA_SIZE 6

#define FIELD(k, kind, member) {(k), (kind), offsetof(rdv_msg, member), 0}
#define SCHEMA(fields) {(fields), sizeof(fields) / sizeof((fields)[0])}

static const wire_field header_fields[] = {
	FIELD(1, WIRE_KIND_NAME, from),
	FIELD(2, WIRE_KIND_U64, generation),
	FIELD(4, WIRE_KIND_U64, epoch),
	FIELD(5, WIRE_KIND_U64, view_digest),
	FIELD(15, WIRE_KIND_U64, lineage),
	FIELD(16, WIRE_KIND_U32, view_size),
};
static const wire_field ready_fields[] = {
	FIELD(3, WIRE_KIND_ADDR, data_addr),
	FIELD(6, WIRE_KIND_U64, candidate_digest),
	FIELD(7, WIRE_KIND_U64, survivors_digest),
};
/* A ready's requests: sent only when one is set, so older peers see the ready they know. */
static const wire_field request_fields[] = {
	FIELD(KEY_REBUILD_EPOCH, WIRE_KIND_U64, rebuild_epoch),
	FIELD(19, WIRE_KIND_U64, waive_epoch),
};
/* The sender's lineage's work: sent only when there is some, so older peers see the header they know. */
static const wire_field work_fields[] = {
	FIELD(KEY_STEPS, WIRE_KIND_U64, steps),
};
/* An operator's new maximum (ftl_rdv_request_max): sent only when asked, so older peers see the ready they know. */
static const wire_field scale_fields[] = {
	FIELD(KEY_MAX_EPOCH, WIRE_KIND_U64, max_epoch),
	FIELD(22, WIRE_KIND_U32, max_request),
};
/* A view's maximum, once an operator set one: absent otherwise, as older peers know views. */
static const wire_field view_max_fields[] = {
	FIELD(KEY_VIEW_MAX, WIRE_KIND_U32, view.max_workers),
};
/* A request to bench a member (ftl_rdv_request_bench): sent only when asked, as scale_fields. */
static const wire_field bench_fields[] = {
	FIELD(KEY_BENCH_EPOCH, WIRE_KIND_U64, bench_epoch),
	FIELD(25, WIRE_KIND_NAME, bench.name),
	FIELD(26, WIRE_KIND_U64, bench.generation),
};
/* A view's benched member, once there is one: absent otherwise, as older peers know views. */
static const wire_field view_benched_fields[] = {
	FIELD(KEY_VIEW_BENCHED, WIRE_KIND_NAME, view.benched.name),
	FIELD(28, WIRE_KIND_U64, view.benched.generation),
};
static const wire_field ballot_fields[] = {
	FIELD(8, WIRE_KIND_U64, ballot.round),
	FIELD(9, WIRE_KIND_NAME, ballot.by),
};
static const wire_field promise_fields[] = {
	FIELD(10, WIRE_KIND_U64, accepted.round),
};
static const wire_field accepted_by_fields[] = {
	FIELD(11, WIRE_KIND_NAME, accepted.by),
};
static const wire_field view_fields[] = {
	FIELD(12, WIRE_KIND_U64, view.epoch),
	FIELD(17, WIRE_KIND_U64, view.lineage),
	{14, WIRE_KIND_META, offsetof(rdv_msg, view.blob), offsetof(rdv_msg, view.blob_len)},
};
static const wire_field member_fields[] = {
	{1, WIRE_KIND_NAME, offsetof(ftl_rdv_member, name), 0},
	{2, WIRE_KIND_U64, offsetof(ftl_rdv_member, generation), 0},
	{3, WIRE_KIND_ADDR, offsetof(ftl_rdv_member, data_addr), 0},
};
/* A member's replica: sent only for a member of one, so older peers see the member map they know. */
static const wire_field member_replica_fields[] = {
	{4, WIRE_KIND_NAME, offsetof(ftl_rdv_member, replica), 0},
	{5, WIRE_KIND_U32, offsetof(ftl_rdv_member, replica_index), 0},
	{KEY_MEMBER_REPLICA_SIZE, WIRE_KIND_U32, offsetof(ftl_rdv_member, replica_size), 0},
};

static const wire_schema header = SCHEMA(header_fields);
static const wire_schema ready = SCHEMA(ready_fields);
static const wire_schema requests = SCHEMA(request_fields);
static const wire_schema work = SCHEMA(work_fields);
static const wire_schema scale = SCHEMA(scale_fields);
static const wire_schema view_max = SCHEMA(view_max_fields);
static const wire_schema bench = SCHEMA(bench_fields);
static const wire_schema view_benched = SCHEMA(view_benched_fields);
static const wire_schema ballot = SCHEMA(ballot_fields);
static const wire_schema promise = SCHEMA(promise_fields);
static const wire_schema accepted_by = SCHEMA(accepted_by_fields);
static const wire_schema view = SCHEMA(view_fields);
static const wire_schema member = SCHEMA(member_fields);
static const wire_schema member_replica = SCHEMA(member_replica_fields);

#define MAX_PARTS 4
#define MAX_OPTIONAL_PARTS 8 /* accepted_by and view of a promise, requests, scale, bench, work, view_max,
			      * view_benched */

/* The field groups each message type carries, besides the type key (NULL-terminated). */
static const wire_schema *const parts_of[RDV_MSG_TYPE_MAX][MAX_PARTS] = {
	[RDV_MSG_READY] = {&header, &ready},
	[RDV_MSG_PREPARE] = {&header, &ballot},
	[RDV_MSG_PROMISE] = {&header, &ballot, &promise},
	[RDV_MSG_ACCEPT] = {&header, &ballot, &view},
	[RDV_MSG_ACCEPTED] = {&header, &ballot},
	[RDV_MSG_REJECT] = {&header, &ballot},
	[RDV_MSG_COMMIT] = {&header, &view},
};

static bool has_members(const wire_schema *const *parts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (parts[i] == &view)
			return true;
	return false;
}

/* The parts of this message: its type's, plus the accepted view when a promise carries one. */
static size_t message_parts(const rdv_msg *msg, const wire_schema **parts)
{
	size_t n = 0;
	for (size_t i = 0; i < MAX_PARTS && parts_of[msg->type][i] != NULL; i++)
		parts[n++] = parts_of[msg->type][i];
	if (msg->type == RDV_MSG_PROMISE && msg->accepted.round > 0) {
		parts[n++] = &accepted_by;
		parts[n++] = &view;
	}
	if (msg->type == RDV_MSG_READY && (msg->rebuild_epoch != 0 || msg->waive_epoch != 0))
		parts[n++] = &requests;
	if (msg->type == RDV_MSG_READY && msg->max_epoch != 0)
		parts[n++] = &scale;
	if (msg->type == RDV_MSG_READY && msg->bench_epoch != 0)
		parts[n++] = &bench;
	if (msg->steps != 0)
		parts[n++] = &work;
	if (msg->view.max_workers != 0 && has_members(parts, n))
		parts[n++] = &view_max;
	if (msg->view.benched.name[0] && has_members(parts, n))
		parts[n++] = &view_benched;
	return n;
}


static int pack_members(msgpack_packer *pk, const ftl_rdv_view *v)
{
	if (v->n > FTL_RDV_MAX_MEMBERS || msgpack_pack_uint8(pk, KEY_MEMBERS) != 0 ||
	    msgpack_pack_array(pk, v->n) != 0)
		return -1;
	for (uint32_t i = 0; i < v->n; i++) {
		const ftl_rdv_member *m = &v->members[i];
		bool is_in_replica = m->replica_size > 0;
		size_t keys = wire_count_present(&member, m) +
			      (is_in_replica ? wire_count_present(&member_replica, m) : 0);
		if (msgpack_pack_map(pk, (uint32_t)keys) != 0 || wire_pack_fields(pk, &member, m) != 0 ||
		    (is_in_replica && wire_pack_fields(pk, &member_replica, m) != 0))
			return -1;
	}
	return 0;
}

/* One member map: its replica part when it names a size (which must then be >= 1, with an index below it). */
static int read_member(const msgpack_object_map *map, ftl_rdv_member *m)
{
	if (wire_read_fields(map, &member, m) != 0)
		return -1;
	if (wire_map_find(map, KEY_MEMBER_REPLICA_SIZE) == NULL)
		return 0;
	if (wire_read_fields(map, &member_replica, m) != 0)
		return -1;
	if (m->replica_size == 0 || m->replica_index >= m->replica_size)
		return wire_refuse("replica index out of range");
	return 0;
}

int rdv_encode(const rdv_msg *msg, uint8_t **buf, size_t *len)
{
	static const char version = RDV_WIRE_VERSION;
	const wire_schema *parts[MAX_PARTS + MAX_OPTIONAL_PARTS];
	size_t n_parts, keys = 1;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	bool is_with_members;
	int rc;

	if ((unsigned)msg->type >= RDV_MSG_TYPE_MAX)
		return -1;
	n_parts = message_parts(msg, parts);
	is_with_members = has_members(parts, n_parts);
	for (size_t i = 0; i < n_parts; i++)
		keys += wire_count_present(parts[i], msg);
	keys += is_with_members;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	rc = msgpack_sbuffer_write(&sb, &version, 1);
	rc = rc || msgpack_pack_map(&pk, keys) || msgpack_pack_uint8(&pk, KEY_TYPE) ||
	     msgpack_pack_uint8(&pk, (uint8_t)msg->type);
	for (size_t i = 0; i < n_parts && !rc; i++)
		rc = wire_pack_fields(&pk, parts[i], msg);
	if (!rc && is_with_members)
		rc = pack_members(&pk, &msg->view);
	if (rc) {
		msgpack_sbuffer_destroy(&sb);
		return -1;
	}
	*len = sb.size;
	*buf = (uint8_t *)msgpack_sbuffer_release(&sb);
	return 0;
}

static const char *read_type(const msgpack_object_map *map, rdv_msg_type *type)
{
	const msgpack_object *t = wire_map_find(map, KEY_TYPE);
	if (t == NULL)
		return "missing type";
	if (t->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return "wrong type";
	if (t->via.u64 >= RDV_MSG_TYPE_MAX)
		return "unknown message type";
	*type = (rdv_msg_type)t->via.u64;
	return NULL;
}

/* Reads key 13 into a malloc'd members array of exactly the claimed count (at most the cap). */
static int read_members(const msgpack_object_map *map, ftl_rdv_view *v)
{
	const msgpack_object *list = wire_map_find(map, KEY_MEMBERS);
	uint32_t n;

	if (list == NULL)
		return wire_refuse("missing field");
	if (list->type != MSGPACK_OBJECT_ARRAY)
		return wire_refuse("wrong type");
	n = list->via.array.size;
	if (n > FTL_RDV_MAX_MEMBERS)
		return wire_refuse("too many members");
	if (n == 0)
		return 0;
	if ((v->members = calloc(n, sizeof *v->members)) == NULL)
		return wire_refuse("out of memory");
	v->n = n;
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *m = &list->via.array.ptr[i];
		if (m->type != MSGPACK_OBJECT_MAP)
			return wire_refuse("member not a map");
		if (read_member(&m->via.map, &v->members[i]) != 0)
			return -1;
	}
	return 0;
}

static int read_msg(const msgpack_object *root, rdv_msg *msg)
{
	const wire_schema *parts[MAX_PARTS + MAX_OPTIONAL_PARTS];
	const msgpack_object_map *map;
	size_t n_parts;

	if (root->type != MSGPACK_OBJECT_MAP)
		return wire_refuse("not a map");
	map = &root->via.map;
	const char *why = read_type(map, &msg->type);
	if (why != NULL)
		return wire_refuse(why);
	/* The type's own parts first: whether a promise carries a view depends on them. */
	size_t n_own = 0;
	while (n_own < MAX_PARTS && parts_of[msg->type][n_own] != NULL)
		if (wire_read_fields(map, parts_of[msg->type][n_own++], msg) != 0)
			return -1;
	if (msg->type == RDV_MSG_READY && wire_map_find(map, KEY_REBUILD_EPOCH) != NULL)
		msg->waive_epoch = 1; /* markers only, so that message_parts names the optional parts to read */
	if (wire_map_find(map, KEY_STEPS) != NULL)
		msg->steps = 1;
	if (msg->type == RDV_MSG_READY && wire_map_find(map, KEY_MAX_EPOCH) != NULL)
		msg->max_epoch = 1;
	if (wire_map_find(map, KEY_VIEW_MAX) != NULL)
		msg->view.max_workers = 1;
	if (msg->type == RDV_MSG_READY && wire_map_find(map, KEY_BENCH_EPOCH) != NULL)
		msg->bench_epoch = 1;
	if (wire_map_find(map, KEY_VIEW_BENCHED) != NULL)
		msg->view.benched.name[0] = '?';
	n_parts = message_parts(msg, parts);
	msg->waive_epoch = 0;
	msg->steps = 0;
	msg->max_epoch = 0;
	msg->view.max_workers = 0;
	msg->bench_epoch = 0;
	msg->view.benched.name[0] = 0;
	for (size_t i = n_own; i < n_parts; i++)
		if (wire_read_fields(map, parts[i], msg) != 0)
			return -1;
	/* A part whose leading field is 0 (or an empty name) says nothing, as its absence would: its other
	 * fields go too, since the encoder would not send them (decode, encode and decode give one message). */
	if (msg->max_epoch == 0)
		msg->max_request = 0;
	if (msg->bench_epoch == 0)
		memset(&msg->bench, 0, sizeof msg->bench);
	if (!msg->view.benched.name[0])
		memset(&msg->view.benched, 0, sizeof msg->view.benched);
	return has_members(parts, n_parts) ? read_members(map, &msg->view) : 0;
}

int rdv_decode(const uint8_t *buf, size_t len, rdv_msg *msg)
{
	msgpack_unpacked up;
	int rc = -1;

	memset(msg, 0, sizeof *msg);
	msgpack_unpacked_init(&up);
	if (len < 1)
		wire_refuse("truncated");
	else if (buf[0] != RDV_WIRE_VERSION)
		wire_refuse("bad version");
	else if (wire_unpack(buf + 1, len - 1, &up) == 0)
		rc = read_msg(&up.data, msg);
	msgpack_unpacked_destroy(&up);
	if (rc != 0)
		rdv_msg_free(msg);
	return rc;
}
