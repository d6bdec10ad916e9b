/* The protocol's key numbering: which small integer key carries which field, per message type.
 *
 * These numbers are the protocol. Never renumber or reuse a key; a new field gets a new key and must be
 * optional, because older nodes skip keys they do not know (rolling upgrades mix versions). One key means
 * one field everywhere, so a reader of a hex dump needs one table:
 *
 *   key  field         value                          carried by
 *    0   type          uint, ftl_msg_type             every message map
 *    1   seq           uint32                         ping, ping_req, ack, nack
 *    2   target        name                           ping, ping_req
 *    3   target_addr   addr                           ping_req
 *    4   source        name                           ping, ping_req, ack, nack, push-pull header
 *    5   source_addr   addr                           ping, ping_req
 *    6   want_nack     bool                           ping_req
 *    7   name          name                           alive, suspect, dead, left, push-pull member, name_taken
 *    8   generation    uint64                         alive, suspect, dead, left, push-pull member, name_taken
 *                                                      (the claimant's refused life)
 *    9   incarnation   uint64                         alive, suspect, dead, left, push-pull member
 *   10   addr          addr                           alive, push-pull member, name_taken (the live holder's)
 *   11   meta          bin <= 256, optional           alive, push-pull member
 *   12   from          name                           suspect, dead, left, key_op, name_taken
 *   13   state         uint, ftl_member_state         push-pull member
 *   14   is_join       bool                           push-pull header
 *   15   (reserved)
 *   16   members       array of member maps           push-pull header
 *   17   serial        uint64                         key_op
 *   18   op            uint32, ftl_key_op_kind        key_op
 *   19   key           bin <= 256                     key_op (applied only when 32 bytes)
 *   20   key_version   uint64, optional (absent = 0)  key_op, push-pull header: the cluster's key state
 *   21   key_fps       bin, n * 8 bytes (n <= 8),     alive, push-pull member: fingerprints of the keys the
 *                      optional (absent = none)       member holds, primary first (key_fingerprint.h)
 *   22   proof         uint64, optional (absent = 0)  dead, push-pull member: the death was proven, how
 *                                                      (ftl_death_reason: refused or witnessed; any other
 *                                                      value reads as unproven)
 *
 * A name is a non-empty string shorter than FTL_NAME_MAX with no NUL, an addr the same under FTL_ADDR_MAX.
 * Every field is required except meta (absent means empty; the encoder omits empty meta), key_fps (absent
 * means none; omitted when none) and the optional integers (absent means 0; the encoder omits 0), which
 * newer versions add.
 *
 * The message type numbers and member state numbers on the wire are the C enum values; the assertions
 * below pin them so that reordering an enum breaks the build instead of the protocol. */
#include "wire_schema.h"

#include <string.h>

_Static_assert(FTL_MSG_PING == 0 && FTL_MSG_PING_REQ == 1 && FTL_MSG_ACK == 2 && FTL_MSG_NACK == 3 &&
		       FTL_MSG_ALIVE == 4 && FTL_MSG_SUSPECT == 5 && FTL_MSG_DEAD == 6 && FTL_MSG_LEFT == 7 &&
		       FTL_MSG_KEY_OP == 8 && FTL_MSG_NAME_TAKEN == 9,
	       "message type numbers are the protocol: append new types, never reorder");
_Static_assert(FTL_MEMBER_ALIVE == 0 && FTL_MEMBER_SUSPECT == 1 && FTL_MEMBER_DEAD == 2 &&
		       FTL_MEMBER_LEFT == 3,
	       "member state numbers are the protocol: append new states, never reorder");

#define FIELD(k, kind, type, member) {(k), (kind), offsetof(type, member), 0}
#define META_FIELD(k, type) {(k), WIRE_KIND_META, offsetof(type, meta), offsetof(type, meta_len)}
#define BIN_FIELD(k, type, member, len_member) {(k), WIRE_KIND_META, offsetof(type, member), offsetof(type, len_member)}
#define SCHEMA(fields) {(fields), sizeof(fields) / sizeof((fields)[0])}

static const wire_field ping_fields[] = {
	FIELD(1, WIRE_KIND_U32, ftl_msg_ping, seq),
	FIELD(2, WIRE_KIND_NAME, ftl_msg_ping, target),
	FIELD(4, WIRE_KIND_NAME, ftl_msg_ping, source),
	FIELD(5, WIRE_KIND_ADDR, ftl_msg_ping, source_addr),
};

static const wire_field ping_req_fields[] = {
	FIELD(1, WIRE_KIND_U32, ftl_msg_ping_req, seq),
	FIELD(2, WIRE_KIND_NAME, ftl_msg_ping_req, target),
	FIELD(3, WIRE_KIND_ADDR, ftl_msg_ping_req, target_addr),
	FIELD(4, WIRE_KIND_NAME, ftl_msg_ping_req, source),
	FIELD(5, WIRE_KIND_ADDR, ftl_msg_ping_req, source_addr),
	FIELD(6, WIRE_KIND_BOOL, ftl_msg_ping_req, want_nack),
};

static const wire_field ack_fields[] = {
	FIELD(1, WIRE_KIND_U32, ftl_msg_ack, seq),
	FIELD(4, WIRE_KIND_NAME, ftl_msg_ack, source),
};

static const wire_field nack_fields[] = {
	FIELD(1, WIRE_KIND_U32, ftl_msg_nack, seq),
	FIELD(4, WIRE_KIND_NAME, ftl_msg_nack, source),
};

static const wire_field alive_fields[] = {
	FIELD(7, WIRE_KIND_NAME, ftl_msg_alive, name),
	FIELD(8, WIRE_KIND_U64, ftl_msg_alive, generation),
	FIELD(9, WIRE_KIND_U64, ftl_msg_alive, incarnation),
	FIELD(10, WIRE_KIND_ADDR, ftl_msg_alive, addr),
	META_FIELD(11, ftl_msg_alive),
	FIELD(21, WIRE_KIND_KEY_FPS, ftl_msg_alive, key_fps),
};

static const wire_field rumor_fields[] = {
	FIELD(7, WIRE_KIND_NAME, ftl_msg_rumor, name),
	FIELD(8, WIRE_KIND_U64, ftl_msg_rumor, generation),
	FIELD(9, WIRE_KIND_U64, ftl_msg_rumor, incarnation),
	FIELD(12, WIRE_KIND_NAME, ftl_msg_rumor, from),
	FIELD(22, WIRE_KIND_OPT_U64, ftl_msg_rumor, proof),
};

static const wire_field key_op_fields[] = {
	FIELD(17, WIRE_KIND_U64, ftl_msg_key_op, serial),
	FIELD(18, WIRE_KIND_U32, ftl_msg_key_op, op),
	FIELD(12, WIRE_KIND_NAME, ftl_msg_key_op, from),
	BIN_FIELD(19, ftl_msg_key_op, key, key_len),
	FIELD(20, WIRE_KIND_OPT_U64, ftl_msg_key_op, version),
};

static const wire_field name_taken_fields[] = {
	FIELD(7, WIRE_KIND_NAME, ftl_msg_name_taken, name),
	FIELD(8, WIRE_KIND_U64, ftl_msg_name_taken, generation),
	FIELD(10, WIRE_KIND_ADDR, ftl_msg_name_taken, addr),
	FIELD(12, WIRE_KIND_NAME, ftl_msg_name_taken, from),
};

static const wire_field pp_header_fields[] = {
	FIELD(4, WIRE_KIND_NAME, ftl_push_pull, source),
	FIELD(14, WIRE_KIND_BOOL, ftl_push_pull, is_join),
	FIELD(20, WIRE_KIND_OPT_U64, ftl_push_pull, key_version),
};

static const wire_field pp_member_fields[] = {
	FIELD(7, WIRE_KIND_NAME, ftl_pp_member, name),
	FIELD(8, WIRE_KIND_U64, ftl_pp_member, generation),
	FIELD(9, WIRE_KIND_U64, ftl_pp_member, incarnation),
	FIELD(10, WIRE_KIND_ADDR, ftl_pp_member, addr),
	META_FIELD(11, ftl_pp_member),
	FIELD(13, WIRE_KIND_STATE, ftl_pp_member, state),
	FIELD(21, WIRE_KIND_KEY_FPS, ftl_pp_member, key_fps),
	FIELD(22, WIRE_KIND_OPT_U64, ftl_pp_member, proof),
};

const wire_schema wire_msg_schemas[FTL_MSG_TYPE_MAX] = {
	[FTL_MSG_PING] = SCHEMA(ping_fields),
	[FTL_MSG_PING_REQ] = SCHEMA(ping_req_fields),
	[FTL_MSG_ACK] = SCHEMA(ack_fields),
	[FTL_MSG_NACK] = SCHEMA(nack_fields),
	[FTL_MSG_ALIVE] = SCHEMA(alive_fields),
	[FTL_MSG_SUSPECT] = SCHEMA(rumor_fields),
	[FTL_MSG_DEAD] = SCHEMA(rumor_fields),
	[FTL_MSG_LEFT] = SCHEMA(rumor_fields),
	[FTL_MSG_KEY_OP] = SCHEMA(key_op_fields),
	[FTL_MSG_NAME_TAKEN] = SCHEMA(name_taken_fields),
};

const wire_schema wire_pp_header_schema = SCHEMA(pp_header_fields);
const wire_schema wire_pp_member_schema = SCHEMA(pp_member_fields);

const char *wire_text_error(wire_kind kind, const char *text, size_t len)
{
	bool is_name = kind == WIRE_KIND_NAME;
	size_t cap = is_name ? FTL_NAME_MAX : FTL_ADDR_MAX;
	if (len == 0)
		return is_name ? "empty name" : "empty address";
	if (len >= cap)
		return is_name ? "name too long" : "address too long";
	if (memchr(text, '\0', len) != NULL)
		return "NUL in string";
	return NULL;
}
