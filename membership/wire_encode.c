/* Encoding: ftl_msg and push-pull frames to MessagePack with msgpack-c's packer.
 *
 * Messages are written straight into the caller's fixed buffer (a packer whose write callback refuses to
 * overflow), so building a UDP packet never allocates. Push-pull frames can be large and go to a growing
 * msgpack_sbuffer handed to the caller. Both walk the field tables of wire_schema.c (the key numbering is
 * documented there), and both refuse a struct that the decoder would refuse (empty or unterminated name,
 * meta_len over FTL_META_MAX, more key fingerprints than FTL_KEY_FPS_MAX, unknown type or state), so
 * whatever we send, a peer of our version accepts. */
#include <assert.h>
#include <string.h>

#include <msgpack.h>

#include "wire.h"
#include "wire_schema.h"

/* A msgpack_packer write callback into a fixed buffer. */
typedef struct fixed_writer {
	uint8_t *buf;
	size_t cap;
	size_t len;
} fixed_writer;

static int fixed_write(void *data, const char *bytes, size_t n)
{
	fixed_writer *w = data;
	if (n > w->cap - w->len)
		return -1;
	memcpy(w->buf + w->len, bytes, n);
	w->len += n;
	return 0;
}

static const void *field_at(const void *base, size_t offset)
{
	return (const uint8_t *)base + offset;
}

static uint16_t meta_len_of(const wire_field *f, const void *base)
{
	uint16_t len;
	memcpy(&len, field_at(base, f->len_offset), sizeof len);
	return len;
}

static bool is_omitted(const wire_field *f, const void *base)
{
	if (f->kind == WIRE_KIND_OPT_U64)
		return *(const uint64_t *)field_at(base, f->offset) == 0;
	if (f->kind == WIRE_KIND_KEY_FPS)
		return ((const ftl_key_fps *)field_at(base, f->offset))->count == 0;
	return f->kind == WIRE_KIND_META && meta_len_of(f, base) == 0;
}

static int pack_text(msgpack_packer *pk, wire_kind kind, const char *text, size_t cap)
{
	size_t len = strnlen(text, cap);
	if (wire_text_error(kind, text, len) != NULL)
		return -1;
	return msgpack_pack_str_with_body(pk, text, len);
}

static int pack_value(msgpack_packer *pk, const wire_field *f, const void *base)
{
	const void *value = field_at(base, f->offset);
	switch ((wire_kind)f->kind) {
	case WIRE_KIND_U32:
		return msgpack_pack_uint32(pk, *(const uint32_t *)value);
	case WIRE_KIND_U64:
	case WIRE_KIND_OPT_U64:
		return msgpack_pack_uint64(pk, *(const uint64_t *)value);
	case WIRE_KIND_BOOL:
		return *(const bool *)value ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
	case WIRE_KIND_NAME:
		return pack_text(pk, WIRE_KIND_NAME, value, FTL_NAME_MAX);
	case WIRE_KIND_ADDR:
		return pack_text(pk, WIRE_KIND_ADDR, value, FTL_ADDR_MAX);
	case WIRE_KIND_META: {
		uint16_t len = meta_len_of(f, base);
		if (len > FTL_META_MAX)
			return -1;
		return msgpack_pack_bin_with_body(pk, value, len);
	}
	case WIRE_KIND_STATE: {
		ftl_member_state state = *(const ftl_member_state *)value;
		if ((unsigned)state >= FTL_MEMBER_STATE_MAX)
			return -1;
		return msgpack_pack_uint8(pk, (uint8_t)state);
	}
	case WIRE_KIND_KEY_FPS: {
		const ftl_key_fps *fps = value;
		if (fps->count > FTL_KEY_FPS_MAX)
			return -1;
		return msgpack_pack_bin_with_body(pk, fps->fp, (size_t)fps->count * FTL_KEY_FP_SIZE);
	}
	}
	assert(!"unknown wire_kind in a schema");
	return -1;
}

size_t wire_count_present(const wire_schema *s, const void *base)
{
	size_t n = 0;
	for (size_t i = 0; i < s->count; i++)
		n += !is_omitted(&s->fields[i], base);
	return n;
}

/* Writes the schema's fields as key/value pairs; the caller has written the map header, counting
 * wire_count_present() of them plus its own extra keys. */
int wire_pack_fields(msgpack_packer *pk, const wire_schema *s, const void *base)
{
	for (size_t i = 0; i < s->count; i++) {
		const wire_field *f = &s->fields[i];
		if (is_omitted(f, base))
			continue;
		if (msgpack_pack_uint8(pk, f->key) != 0 || pack_value(pk, f, base) != 0)
			return -1;
	}
	return 0;
}

int ftl_wire_encode_msg(const ftl_msg *msg, uint8_t *buf, size_t cap, size_t *len)
{
	fixed_writer w = {buf, cap, 0};
	msgpack_packer pk;
	const wire_schema *s;

	if ((unsigned)msg->type >= FTL_MSG_TYPE_MAX)
		return -1;
	s = &wire_msg_schemas[msg->type];
	msgpack_packer_init(&pk, &w, fixed_write);
	if (msgpack_pack_map(&pk, 1 + wire_count_present(s, &msg->u)) != 0 ||
	    msgpack_pack_uint8(&pk, WIRE_KEY_TYPE) != 0 || msgpack_pack_uint8(&pk, (uint8_t)msg->type) != 0 ||
	    wire_pack_fields(&pk, s, &msg->u) != 0)
		return -1;
	*len = w.len;
	return 0;
}

/* The array32 header whose count ftl_wire_packet_finish patches: 0xdd and four big-endian bytes. */
#define PACKET_HEADER_LEN 6

void ftl_wire_packet_init(ftl_wire_packet *p, uint8_t *buf, size_t cap)
{
	assert(cap >= PACKET_HEADER_LEN);
	p->buf = buf;
	p->cap = cap;
	buf[0] = FTL_WIRE_VERSION;
	buf[1] = 0xdd;
	memset(buf + 2, 0, 4);
	p->len = PACKET_HEADER_LEN;
	p->count = 0;
}

size_t ftl_wire_packet_room(const ftl_wire_packet *p)
{
	return p->cap - p->len;
}

int ftl_wire_packet_add_raw(ftl_wire_packet *p, const uint8_t *msg, size_t len)
{
	if (p->count >= FTL_WIRE_MAX_MSGS || len > ftl_wire_packet_room(p))
		return -1;
	memcpy(p->buf + p->len, msg, len);
	p->len += len;
	p->count++;
	return 0;
}

int ftl_wire_packet_add(ftl_wire_packet *p, const ftl_msg *msg)
{
	size_t len;
	/* Encodes in place into the free tail; a failed encode leaves p->len and p->count as they were. */
	if (p->count >= FTL_WIRE_MAX_MSGS ||
	    ftl_wire_encode_msg(msg, p->buf + p->len, ftl_wire_packet_room(p), &len) != 0)
		return -1;
	p->len += len;
	p->count++;
	return 0;
}

size_t ftl_wire_packet_finish(ftl_wire_packet *p)
{
	p->buf[2] = (uint8_t)(p->count >> 24);
	p->buf[3] = (uint8_t)(p->count >> 16);
	p->buf[4] = (uint8_t)(p->count >> 8);
	p->buf[5] = (uint8_t)p->count;
	return p->len;
}

int ftl_wire_encode_push_pull(const ftl_push_pull *hdr, const ftl_pp_member *members, uint8_t **buf,
			      size_t *len)
{
	static const char version = FTL_WIRE_VERSION;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	rc = msgpack_sbuffer_write(&sb, &version, 1);
	rc = rc || msgpack_pack_map(&pk, wire_count_present(&wire_pp_header_schema, hdr) + 1);
	rc = rc || wire_pack_fields(&pk, &wire_pp_header_schema, hdr);
	rc = rc || msgpack_pack_uint8(&pk, WIRE_KEY_MEMBERS) || msgpack_pack_array(&pk, hdr->count);
	for (uint32_t i = 0; !rc && i < hdr->count; i++)
		rc = msgpack_pack_map(&pk, wire_count_present(&wire_pp_member_schema, &members[i])) ||
		     wire_pack_fields(&pk, &wire_pp_member_schema, &members[i]);
	if (rc) {
		msgpack_sbuffer_destroy(&sb);
		return -1;
	}
	*len = sb.size;
	*buf = (uint8_t *)msgpack_sbuffer_release(&sb);
	return 0;
}
