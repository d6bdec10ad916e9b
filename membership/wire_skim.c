/* Why this exists: see wire_skim.h. It knows only the MessagePack framing (how long each object is and
 * how many children it has), never what the values mean; decoding stays msgpack-c's job. */
#include "wire_skim.h"

typedef struct skim_cursor {
	const uint8_t *p;
	const uint8_t *end;
	const char *err;
} skim_cursor;

static size_t bytes_left(const skim_cursor *c)
{
	return (size_t)(c->end - c->p);
}

/* Consumes n bytes; fails (truncated) if fewer remain. */
static int take(skim_cursor *c, uint64_t n)
{
	if (n > bytes_left(c)) {
		c->err = "truncated";
		return -1;
	}
	c->p += n;
	return 0;
}

/* Reads a big-endian unsigned integer of width bytes. */
static int take_uint(skim_cursor *c, unsigned width, uint64_t *value)
{
	const uint8_t *start = c->p;
	if (take(c, width) != 0)
		return -1;
	*value = 0;
	for (unsigned i = 0; i < width; i++)
		*value = (*value << 8) | start[i];
	return 0;
}

/* Skips a length-prefixed payload: len_width bytes of length, extra fixed bytes (ext type), the payload. */
static int take_sized(skim_cursor *c, unsigned len_width, unsigned extra)
{
	uint64_t n;
	if (take_uint(c, len_width, &n) != 0)
		return -1;
	return take(c, n + extra);
}

static int skim_object(skim_cursor *c, int depth);

/* Skims the children of a container after checking that its claimed count is possible at all. */
static int skim_children(skim_cursor *c, uint64_t children, int depth)
{
	if (depth >= WIRE_SKIM_MAX_DEPTH) {
		c->err = "nested too deep";
		return -1;
	}
	if (children > bytes_left(c)) {
		c->err = bytes_left(c) == 0 ? "truncated" : "container larger than input";
		return -1;
	}
	for (uint64_t i = 0; i < children; i++)
		if (skim_object(c, depth + 1) != 0)
			return -1;
	return 0;
}

/* Skims a container whose count is in the next width bytes; pairs is 2 for maps, 1 for arrays. */
static int skim_container(skim_cursor *c, unsigned width, unsigned pairs, int depth)
{
	uint64_t n;
	if (take_uint(c, width, &n) != 0)
		return -1;
	return skim_children(c, n * pairs, depth);
}

static int skim_object(skim_cursor *c, int depth)
{
	uint8_t b;
	if (bytes_left(c) == 0) {
		c->err = "truncated";
		return -1;
	}
	b = *c->p++;
	if (b <= 0x7f || b >= 0xe0) /* positive and negative fixint */
		return 0;
	if (b <= 0x8f) /* fixmap */
		return skim_children(c, 2u * (b & 0x0f), depth);
	if (b <= 0x9f) /* fixarray */
		return skim_children(c, b & 0x0f, depth);
	if (b <= 0xbf) /* fixstr */
		return take(c, b & 0x1f);
	switch (b) {
	case 0xc0: /* nil */
	case 0xc2: /* false */
	case 0xc3: /* true */
		return 0;
	case 0xc4: case 0xd9: return take_sized(c, 1, 0); /* bin8, str8 */
	case 0xc5: case 0xda: return take_sized(c, 2, 0); /* bin16, str16 */
	case 0xc6: case 0xdb: return take_sized(c, 4, 0); /* bin32, str32 */
	case 0xc7: return take_sized(c, 1, 1);            /* ext8: length, type, data */
	case 0xc8: return take_sized(c, 2, 1);            /* ext16 */
	case 0xc9: return take_sized(c, 4, 1);            /* ext32 */
	case 0xcc: case 0xd0: return take(c, 1);          /* uint8, int8 */
	case 0xcd: case 0xd1: return take(c, 2);          /* uint16, int16 */
	case 0xca: case 0xce: case 0xd2: return take(c, 4); /* float32, uint32, int32 */
	case 0xcb: case 0xcf: case 0xd3: return take(c, 8); /* float64, uint64, int64 */
	case 0xd4: return take(c, 1 + 1);                 /* fixext1: type, data */
	case 0xd5: return take(c, 1 + 2);
	case 0xd6: return take(c, 1 + 4);
	case 0xd7: return take(c, 1 + 8);
	case 0xd8: return take(c, 1 + 16);
	case 0xdc: return skim_container(c, 2, 1, depth); /* array16 */
	case 0xdd: return skim_container(c, 4, 1, depth); /* array32 */
	case 0xde: return skim_container(c, 2, 2, depth); /* map16 */
	case 0xdf: return skim_container(c, 4, 2, depth); /* map32 */
	default:   /* 0xc1 is never used */
		c->err = "reserved byte";
		return -1;
	}
}

int wire_refuse(const char *why)
{
	ftl_diag_set(FTL_ERR_INVALID, "%s", why);
	return -1;
}

int wire_skim(const uint8_t *buf, size_t len)
{
	skim_cursor c = {buf, buf + len, NULL};
	if (skim_object(&c, 0) != 0)
		return wire_refuse(c.err);
	if (c.p != c.end)
		return wire_refuse("trailing bytes");
	return 0;
}
