/* The protocol's field tables, shared by the encoder and the decoder so that the two can never disagree.
 *
 * Each message type (and the push-pull header and member) is described by a list of fields: the small
 * integer key it travels under, what kind of value it is, and where it lives in the C struct. The encoder
 * walks the list to write a map; the decoder walks the same list to read one. The key numbers and the
 * rules for each kind are documented at the top of wire_schema.c. Internal to membership/, except that
 * the table walkers at the bottom also serve rendezvous/'s codec (one codec machinery, two protocols). */
#ifndef FTL_MEMBERSHIP_WIRE_SCHEMA_H
#define FTL_MEMBERSHIP_WIRE_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "message.h"

#define WIRE_KEY_TYPE 0     /* every message map: the ftl_msg_type */
#define WIRE_KEY_MEMBERS 16 /* push-pull header: the array of member maps */

typedef enum wire_kind {
	WIRE_KIND_U32,   /* unsigned integer that fits uint32_t */
	WIRE_KIND_U64,   /* unsigned integer */
	WIRE_KIND_OPT_U64, /* unsigned integer, optional: absent means 0 and 0 is not sent */
	WIRE_KIND_BOOL,  /* true or false */
	WIRE_KIND_NAME,  /* str, 1..FTL_NAME_MAX-1 bytes, no NUL */
	WIRE_KIND_ADDR,  /* str, 1..FTL_ADDR_MAX-1 bytes, no NUL */
	WIRE_KIND_META,  /* bin, 0..FTL_META_MAX bytes, optional (absent = empty); length kept at len_offset */
	WIRE_KIND_STATE, /* unsigned integer < FTL_MEMBER_STATE_MAX, kept as ftl_member_state */
	WIRE_KIND_KEY_FPS, /* bin of count * FTL_KEY_FP_SIZE bytes, count <= FTL_KEY_FPS_MAX, kept as ftl_key_fps;
			    * optional (absent = none; none is not sent) */
} wire_kind;

typedef struct wire_field {
	uint8_t key;         /* the map key on the wire: never renumber */
	uint8_t kind;        /* a wire_kind */
	uint16_t offset;     /* of the value inside the struct */
	uint16_t len_offset; /* WIRE_KIND_META only: of the uint16_t length */
} wire_field;

typedef struct wire_schema {
	const wire_field *fields;
	size_t count;
} wire_schema;

/* Indexed by ftl_msg_type; offsets are relative to ftl_msg.u. */
extern const wire_schema wire_msg_schemas[FTL_MSG_TYPE_MAX];
/* ftl_push_pull without its member array (key WIRE_KEY_MEMBERS), and one ftl_pp_member. */
extern const wire_schema wire_pp_header_schema;
extern const wire_schema wire_pp_member_schema;

/* Checks a NAME or ADDR value of len bytes; returns NULL if acceptable, else a static reason. Both the
 * encoder (on our own structs) and the decoder (on a peer's bytes) use it. */
const char *wire_text_error(wire_kind kind, const char *text, size_t len);

/* The table walkers (wire_encode.c, wire_decode.c), for any codec that describes its maps with tables.
 * Encoding: how many of the schema's fields base carries (an empty META is omitted), and writing them as
 * key/value pairs after a map header the caller wrote (0 or -1). */
size_t wire_count_present(const wire_schema *s, const void *base);
int wire_pack_fields(msgpack_packer *pk, const wire_schema *s, const void *base);
/* Decoding: skims [buf, buf+len) (wire_skim.h) and unpacks exactly one object into *up, which the caller
 * has initialised and destroys in every case; 0, or -1 with the reason in the diag (wire_refuse). */
int wire_unpack(const uint8_t *buf, size_t len, msgpack_unpacked *up);
/* Fills base (zeroed by the caller) from map per schema: every field but META is required; a non-integer
 * key, a duplicate key below 64 or a bad value is malformed; keys the schema does not name are skipped. */
int wire_read_fields(const msgpack_object_map *map, const wire_schema *s, void *base);
/* The value under an unsigned integer key, or NULL. */
const msgpack_object *wire_map_find(const msgpack_object_map *map, uint64_t key);

#endif
