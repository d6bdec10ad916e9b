/* TCP frames between agents, read as hostile input: what a connection may make us buffer before anything
 * in it is authenticated.
 *
 * A frame is a 4-byte big-endian length, a kind byte and sealed bytes. Nothing can be authenticated
 * before a whole sealed body has arrived, so a peer that has proved nothing may only send a frame of up to
 * FTL_TCP_UNAUTH_MAX bytes (a push-pull of a few hundred members, any rendezvous message of a small
 * cluster). A larger frame is announced by a header frame ('H') whose small sealed body names the kind and
 * length of the frame that follows; only once that header opens with the cluster's keyring may the next
 * frame be as large as FTL_TCP_FRAME_MAX. Senders use the header form only for frames over the small
 * limit, so agents without it still talk to this one about everything that fits.
 *
 * The reader is pure (no sockets): the transport hands it the bytes received so far and it answers
 * "need more", "here is a frame", "skip this header" or "drop, for this reason". */
#ifndef FTL_CHANNEL_TCP_FRAME_H
#define FTL_CHANNEL_TCP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "membership/keyring.h"

#define FTL_TCP_UNAUTH_MAX (256u << 10) /* the largest frame a peer that proved nothing may send */
#define FTL_TCP_FRAME_MAX (32u << 20)   /* the largest frame after a sealed header (push-pull of ~80k members) */
#define FTL_FRAME_PUSH_PULL 'P'
#define FTL_FRAME_RENDEZVOUS 'R'
#define FTL_FRAME_HEADER 'H'
#define FTL_TCP_PREFIX 5                /* length (4) + kind (1) */
/* A header frame's plaintext: inner kind (1) + body length (4, big-endian); later fields are ignored. */
#define FTL_TCP_HEADER_PLAIN 5
#define FTL_TCP_HEADER_FRAME (FTL_TCP_PREFIX + FTL_KEYRING_OVERHEAD + FTL_TCP_HEADER_PLAIN)

/* Why a connection's input was dropped (counted: status counters.tcp_dropped). */
typedef enum ftl_tcp_drop {
	FTL_TCP_DROP_TOO_LARGE,      /* a frame over the limit for what the peer has proved */
	FTL_TCP_DROP_EMPTY,          /* a frame with no body (a length under 2) */
	FTL_TCP_DROP_UNKNOWN_KIND,
	FTL_TCP_DROP_BAD_HEADER,     /* a header that does not open, or names a frame over FTL_TCP_FRAME_MAX */
	FTL_TCP_DROP_NOT_ANNOUNCED,  /* the frame after a header is not the one it announced */
	FTL_TCP_DROP_TOO_MANY,       /* more unauthenticated connections than FTL_TCP_UNAUTH_CONNS at once */
	FTL_TCP_DROP_BUFFER_FULL,    /* all connections together already hold FTL_TCP_BUFFERED_MAX */
	FTL_TCP_DROP_UNOPENED,       /* a frame whose sealed body does not open (wrong key or cluster, tampered) */
	FTL_TCP_DROP_MAX
} ftl_tcp_drop;

extern const char *const ftl_tcp_drop_strs[FTL_TCP_DROP_MAX];

typedef struct ftl_tcp_reader {
	bool is_announced;   /* a header opened: the next frame may be as large as it said */
	uint8_t want_kind;   /* ... of this kind */
	uint32_t want_len;   /* ... and this length (kind byte included) */
} ftl_tcp_reader;

typedef enum ftl_tcp_step {
	FTL_TCP_NEED_MORE,   /* *need: bytes this connection may have to buffer in all (<= the limit) */
	FTL_TCP_FRAME,       /* *kind and body[0..*body_len) at in + FTL_TCP_PREFIX; *used bytes in all */
	FTL_TCP_SKIP,        /* a header opened: drop the first *used bytes and read on */
	FTL_TCP_DROP,        /* *why */
} ftl_tcp_step;

typedef struct ftl_tcp_result {
	size_t need;
	size_t used;
	uint8_t kind;
	size_t body_len;
	ftl_tcp_drop why;
} ftl_tcp_result;

/* One step over the bytes received so far (in[0..len)). */
ftl_tcp_step ftl_tcp_read(ftl_tcp_reader *r, ftl_keyring *kr, const uint8_t *in, size_t len, ftl_tcp_result *res);

/* The bytes to send for one frame of kind with body[0..len): the frame alone when it is small enough for
 * anyone, a sealed header then the frame otherwise. malloc'd into *out; FTL_ERR_SYSTEM when out of memory,
 * FTL_ERR_INVALID when empty or over FTL_TCP_FRAME_MAX. */
ftl_err ftl_tcp_frame_encode(ftl_keyring *kr, uint8_t kind, const uint8_t *body, size_t len, uint8_t **out,
			     size_t *out_len);

#endif
