/* The TCP frame reader and writer (tcp_frame.h): small frames for anyone, large ones only after a sealed
 * header. Every length is checked before it sizes anything. */
#include "tcp_frame.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

const char *const ftl_tcp_drop_strs[FTL_TCP_DROP_MAX] = {
	"too_large", "empty", "unknown_kind", "bad_header", "not_announced", "too_many", "buffer_full", "unopened",
};

static bool is_body_kind(uint8_t kind) { return kind == FTL_FRAME_PUSH_PULL || kind == FTL_FRAME_RENDEZVOUS; }

static ftl_tcp_step drop(ftl_tcp_result *res, ftl_tcp_drop why)
{
	res->why = why;
	return FTL_TCP_DROP;
}

static ftl_tcp_step open_header(ftl_tcp_reader *r, ftl_keyring *kr, const uint8_t *sealed, size_t len,
				ftl_tcp_result *res)
{
	uint8_t plain[64];
	size_t plain_len;
	if (len > sizeof(plain) + FTL_KEYRING_OVERHEAD ||
	    ftl_keyring_open(kr, sealed, len, plain, sizeof(plain), &plain_len, NULL) != 0 ||
	    plain_len < FTL_TCP_HEADER_PLAIN || !is_body_kind(plain[0]))
		return drop(res, FTL_TCP_DROP_BAD_HEADER);
	uint32_t be;
	memcpy(&be, plain + 1, 4);
	uint32_t body = ntohl(be);
	if (body == 0 || body > FTL_TCP_FRAME_MAX - 1)
		return drop(res, FTL_TCP_DROP_BAD_HEADER);
	r->is_announced = true;
	r->want_kind = plain[0];
	r->want_len = body + 1;
	return FTL_TCP_SKIP;
}

ftl_tcp_step ftl_tcp_read(ftl_tcp_reader *r, ftl_keyring *kr, const uint8_t *in, size_t len, ftl_tcp_result *res)
{
	memset(res, 0, sizeof(*res));
	uint32_t limit = r->is_announced ? r->want_len : FTL_TCP_UNAUTH_MAX;
	if (len < 4) {
		res->need = FTL_TCP_PREFIX + limit;
		return FTL_TCP_NEED_MORE;
	}
	uint32_t be;
	memcpy(&be, in, 4);
	uint32_t flen = ntohl(be);
	if (r->is_announced && flen != r->want_len)
		return drop(res, FTL_TCP_DROP_NOT_ANNOUNCED);
	if (flen > limit)
		return drop(res, FTL_TCP_DROP_TOO_LARGE);
	if (flen < 2)
		return drop(res, FTL_TCP_DROP_EMPTY);
	if (len < 4 + (size_t)flen) {
		res->need = 4 + (size_t)flen;
		return FTL_TCP_NEED_MORE;
	}
	uint8_t kind = in[4];
	res->used = 4 + (size_t)flen;
	if (r->is_announced && kind != r->want_kind)
		return drop(res, FTL_TCP_DROP_NOT_ANNOUNCED);
	if (kind == FTL_FRAME_HEADER && !r->is_announced)
		return open_header(r, kr, in + FTL_TCP_PREFIX, flen - 1, res);
	if (!is_body_kind(kind))
		return drop(res, FTL_TCP_DROP_UNKNOWN_KIND);
	res->kind = kind;
	res->body_len = flen - 1;
	return FTL_TCP_FRAME;
}

static void put_prefix(uint8_t *p, uint8_t kind, size_t body_len)
{
	uint32_t be = htonl((uint32_t)(body_len + 1));
	memcpy(p, &be, 4);
	p[4] = kind;
}

ftl_err ftl_tcp_frame_encode(ftl_keyring *kr, uint8_t kind, const uint8_t *body, size_t len, uint8_t **out,
			     size_t *out_len)
{
	if (len == 0 || len > FTL_TCP_FRAME_MAX - 1)
		return ftl_diag_set(FTL_ERR_INVALID, "a frame of %zu bytes: frames carry 1 to %u", len,
				    FTL_TCP_FRAME_MAX - 1);
	uint8_t hdr[FTL_TCP_HEADER_FRAME];
	size_t hdr_len = 0;
	if (len + 1 > FTL_TCP_UNAUTH_MAX) { /* too large for anyone: announce it in a sealed header */
		uint8_t plain[FTL_TCP_HEADER_PLAIN];
		uint32_t be = htonl((uint32_t)len);
		plain[0] = kind;
		memcpy(plain + 1, &be, 4);
		size_t sealed_len;
		ftl_err err = ftl_keyring_seal(kr, plain, sizeof(plain), hdr + FTL_TCP_PREFIX,
					       sizeof(hdr) - FTL_TCP_PREFIX, &sealed_len);
		if (err)
			return err;
		put_prefix(hdr, FTL_FRAME_HEADER, sealed_len);
		hdr_len = FTL_TCP_PREFIX + sealed_len;
	}
	uint8_t *p = malloc(hdr_len + FTL_TCP_PREFIX + len);
	if (!p)
		return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory for a frame of %zu bytes", len);
	memcpy(p, hdr, hdr_len);
	put_prefix(p + hdr_len, kind, len);
	memcpy(p + hdr_len + FTL_TCP_PREFIX, body, len);
	*out = p;
	*out_len = hdr_len + FTL_TCP_PREFIX + len;
	return FTL_OK;
}
