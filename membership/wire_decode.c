/* Decoding: MessagePack bytes from a peer to ftl_msg and push-pull frames. Every byte is hostile.
 *
 * A frame is checked in three steps: the version byte; wire_skim (so that msgpack-c never allocates by a
 * peer's claimed count, and so that truncation and trailing bytes are caught before any work); then
 * msgpack_unpack_next builds the object tree, which we walk with the field tables of wire_schema.c
 * (key numbering documented there), checking every type, range and length.
 *
 * Rules beyond the tables:
 * - a map key that is not an unsigned integer is malformed; an unknown unsigned key is skipped (rolling
 *   upgrades); a repeated key below 64 is malformed (one meaning per packet, whatever a peer's library
 *   does with duplicates);
 * - a message whose type is unknown is skipped whole, and the rest of the packet is still delivered: a
 *   newer peer may piggyback a message kind we do not know on a ping we must answer. It is not reported
 *   (it is not an error) and does not appear in *n, but it counts against the message limit;
 * - a packet is all or nothing: one malformed message drops the whole packet. */
#include <string.h>

#include <msgpack.h>

#include "wire.h"
#include "wire_schema.h"
#include "wire_skim.h"

/* Keys below this are tracked for duplicates; every key we assign is. */
#define TRACKED_KEYS 64

static void *field_at(void *base, size_t offset)
{
	return (uint8_t *)base + offset;
}

static const char *read_text(wire_kind kind, const msgpack_object *v, void *dst)
{
	const char *why;
	if (v->type != MSGPACK_OBJECT_STR)
		return "wrong type";
	why = wire_text_error(kind, v->via.str.ptr, v->via.str.size);
	if (why != NULL)
		return why;
	memcpy(dst, v->via.str.ptr, v->via.str.size);
	((char *)dst)[v->via.str.size] = '\0';
	return NULL;
}

static const char *read_uint(const msgpack_object *v, uint64_t max, const char *too_big, uint64_t *out)
{
	if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return "wrong type";
	if (v->via.u64 > max)
		return too_big;
	*out = v->via.u64;
	return NULL;
}

/* Reads one value into base per its field description; returns NULL or the reason it is malformed. */
static const char *read_value(const wire_field *f, const msgpack_object *v, void *base)
{
	void *dst = field_at(base, f->offset);
	const char *why = NULL;
	uint64_t u = 0;

	switch ((wire_kind)f->kind) {
	case WIRE_KIND_U32:
		if ((why = read_uint(v, UINT32_MAX, "integer out of range", &u)) == NULL)
			*(uint32_t *)dst = (uint32_t)u;
		return why;
	case WIRE_KIND_U64:
	case WIRE_KIND_OPT_U64:
		return read_uint(v, UINT64_MAX, NULL, dst);
	case WIRE_KIND_STATE:
		if ((why = read_uint(v, FTL_MEMBER_STATE_MAX - 1, "state out of range", &u)) == NULL)
			*(ftl_member_state *)dst = (ftl_member_state)u;
		return why;
	case WIRE_KIND_BOOL:
		if (v->type != MSGPACK_OBJECT_BOOLEAN)
			return "wrong type";
		*(bool *)dst = v->via.boolean;
		return NULL;
	case WIRE_KIND_NAME:
	case WIRE_KIND_ADDR:
		return read_text((wire_kind)f->kind, v, dst);
	case WIRE_KIND_META: {
		uint16_t len;
		if (v->type != MSGPACK_OBJECT_BIN)
			return "wrong type";
		if (v->via.bin.size > FTL_META_MAX)
			return "meta too long";
		len = (uint16_t)v->via.bin.size;
		memcpy(dst, v->via.bin.ptr, len);
		memcpy(field_at(base, f->len_offset), &len, sizeof len);
		return NULL;
	}
	case WIRE_KIND_KEY_FPS: {
		ftl_key_fps *fps = dst;
		if (v->type != MSGPACK_OBJECT_BIN)
			return "wrong type";
		if (v->via.bin.size % FTL_KEY_FP_SIZE != 0 || v->via.bin.size > sizeof fps->fp)
			return "bad key fingerprints";
		fps->count = (uint8_t)(v->via.bin.size / FTL_KEY_FP_SIZE);
		memcpy(fps->fp, v->via.bin.ptr, v->via.bin.size);
		return NULL;
	}
	}
	return "unknown field kind";
}

static const wire_field *find_field(const wire_schema *s, uint64_t key, size_t *index)
{
	for (size_t i = 0; i < s->count; i++) {
		if (s->fields[i].key == key) {
			*index = i;
			return &s->fields[i];
		}
	}
	return NULL;
}

/* The value under an unsigned key, or NULL. Keys are validated by read_fields, which every map meets. */
const msgpack_object *wire_map_find(const msgpack_object_map *map, uint64_t key)
{
	for (uint32_t i = 0; i < map->size; i++) {
		const msgpack_object *k = &map->ptr[i].key;
		if (k->type == MSGPACK_OBJECT_POSITIVE_INTEGER && k->via.u64 == key)
			return &map->ptr[i].val;
	}
	return NULL;
}

/* Fills base (zeroed by the caller) from map per schema. Keys the schema does not name are skipped,
 * including ones the caller reads itself (type, members). */
int wire_read_fields(const msgpack_object_map *map, const wire_schema *s, void *base)
{
	uint64_t seen_keys = 0;
	uint64_t found_fields = 0;

	for (uint32_t i = 0; i < map->size; i++) {
		const msgpack_object *k = &map->ptr[i].key;
		const wire_field *f;
		size_t index;
		if (k->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			return wire_refuse("bad key");
		if (k->via.u64 < TRACKED_KEYS) {
			uint64_t bit = UINT64_C(1) << k->via.u64;
			if (seen_keys & bit)
				return wire_refuse("duplicate key");
			seen_keys |= bit;
		}
		f = find_field(s, k->via.u64, &index);
		if (f == NULL)
			continue;
		const char *why = read_value(f, &map->ptr[i].val, base);
		if (why != NULL)
			return wire_refuse(why);
		found_fields |= UINT64_C(1) << index;
	}
	for (size_t i = 0; i < s->count; i++) {
		if (!(found_fields & (UINT64_C(1) << i)) && s->fields[i].kind != WIRE_KIND_META &&
		    s->fields[i].kind != WIRE_KIND_OPT_U64 && s->fields[i].kind != WIRE_KIND_KEY_FPS)
			return wire_refuse("missing field");
	}
	return 0;
}

int wire_unpack(const uint8_t *buf, size_t len, msgpack_unpacked *up)
{
	size_t off = 0;
	msgpack_unpack_return rc;

	if (wire_skim(buf, len) != 0)
		return -1;
	rc = msgpack_unpack_next(up, (const char *)buf, len, &off);
	if (rc == MSGPACK_UNPACK_NOMEM_ERROR)
		return wire_refuse("out of memory");
	if (rc != MSGPACK_UNPACK_SUCCESS || off != len)
		return wire_refuse("bad msgpack");
	return 0;
}

/* Checks the version byte, then unpacks the one object that follows into *up (which the caller
 * destroys in every case). */
static int unpack_frame(const uint8_t *buf, size_t len, msgpack_unpacked *up)
{
	msgpack_unpacked_init(up);
	if (len < 1)
		return wire_refuse("truncated");
	if (buf[0] != FTL_WIRE_VERSION)
		return wire_refuse("bad version");
	return wire_unpack(buf + 1, len - 1, up);
}

/* Decodes one message map. Sets *is_known to false (and fills nothing) for a type we do not know. */
static int read_msg(const msgpack_object *o, ftl_msg *out, bool *is_known)
{
	const msgpack_object *type;

	if (o->type != MSGPACK_OBJECT_MAP)
		return wire_refuse("message not a map");
	type = wire_map_find(&o->via.map, WIRE_KEY_TYPE);
	if (type == NULL)
		return wire_refuse("missing type");
	if (type->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return wire_refuse("wrong type");
	*is_known = type->via.u64 < FTL_MSG_TYPE_MAX;
	if (!*is_known)
		return 0;
	memset(out, 0, sizeof *out);
	out->type = (ftl_msg_type)type->via.u64;
	return wire_read_fields(&o->via.map, &wire_msg_schemas[out->type], &out->u);
}

static int read_packet(const msgpack_object *root, ftl_msg *out, size_t max, size_t *n)
{
	const msgpack_object_array *msgs;

	if (root->type != MSGPACK_OBJECT_ARRAY)
		return wire_refuse("not an array");
	msgs = &root->via.array;
	if (msgs->size > max || msgs->size > FTL_WIRE_MAX_MSGS)
		return wire_refuse("too many messages");
	for (uint32_t i = 0; i < msgs->size; i++) {
		bool is_known;
		if (read_msg(&msgs->ptr[i], &out[*n], &is_known) != 0)
			return -1;
		*n += is_known;
	}
	return 0;
}

int ftl_wire_decode_packet(const uint8_t *buf, size_t len, ftl_msg *out, size_t max, size_t *n)
{
	msgpack_unpacked up;
	int rc;

	*n = 0;
	rc = unpack_frame(buf, len, &up);
	if (rc == 0)
		rc = read_packet(&up.data, out, max, n);
	msgpack_unpacked_destroy(&up);
	if (rc != 0)
		*n = 0;
	return rc;
}

static int read_members(const msgpack_object_map *map, ftl_pp_member *members, size_t max, uint32_t *count)
{
	const msgpack_object *list = wire_map_find(map, WIRE_KEY_MEMBERS);

	if (list == NULL)
		return wire_refuse("missing field");
	if (list->type != MSGPACK_OBJECT_ARRAY)
		return wire_refuse("wrong type");
	if (list->via.array.size > max)
		return wire_refuse("too many members");
	for (uint32_t i = 0; i < list->via.array.size; i++) {
		const msgpack_object *m = &list->via.array.ptr[i];
		if (m->type != MSGPACK_OBJECT_MAP)
			return wire_refuse("member not a map");
		memset(&members[i], 0, sizeof members[i]);
		if (wire_read_fields(&m->via.map, &wire_pp_member_schema, &members[i]) != 0)
			return -1;
	}
	*count = list->via.array.size;
	return 0;
}

static int read_push_pull(const msgpack_object *root, ftl_push_pull *hdr, ftl_pp_member *members, size_t max)
{
	if (root->type != MSGPACK_OBJECT_MAP)
		return wire_refuse("not a map");
	if (wire_read_fields(&root->via.map, &wire_pp_header_schema, hdr) != 0)
		return -1;
	return read_members(&root->via.map, members, max, &hdr->count);
}

int ftl_wire_decode_push_pull(const uint8_t *buf, size_t len, ftl_push_pull *hdr, ftl_pp_member *members,
			      size_t max)
{
	msgpack_unpacked up;
	int rc;

	memset(hdr, 0, sizeof *hdr);
	rc = unpack_frame(buf, len, &up);
	if (rc == 0)
		rc = read_push_pull(&up.data, hdr, members, max);
	msgpack_unpacked_destroy(&up);
	if (rc != 0)
		hdr->count = 0;
	return rc;
}
