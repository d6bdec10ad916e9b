/* The messages of the membership protocol, as plain C structs.
 *
 * The protocol core (swim.c) builds and consumes these; the codec (wire.c) turns them into MessagePack
 * and back. Every variable-size field has a fixed cap so that a decoder never allocates by a peer's say-so:
 * a name longer than FTL_NAME_MAX-1 bytes, an address longer than FTL_ADDR_MAX-1 or metadata longer than
 * FTL_META_MAX is a malformed message. Strings are NUL-terminated, UTF-8 is not checked.
 *
 * Identity is (name, generation): a restarted worker keeps its name and picks a larger generation, so it
 * is never confused with its dead predecessor. Within one generation, a larger incarnation wins. */
#ifndef FTL_MEMBERSHIP_MESSAGE_H
#define FTL_MEMBERSHIP_MESSAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "key_fingerprint.h"

#define FTL_NAME_MAX 64  /* bytes including the NUL: a Kubernetes pod name fits */
#define FTL_ADDR_MAX 64  /* "host:port" or "[v6]:port", including the NUL */
#define FTL_META_MAX 256 /* opaque node metadata set by the embedding program */

/* Copies a string into a fixed field of cap bytes, cutting it if it must, always NUL-terminated. */
static inline void ftl_copy_str(char *dst, const char *src, size_t cap)
{
	size_t n = strnlen(src, cap - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* FNV-1a of a string: the hash of the name and address indexes. */
static inline uint32_t ftl_hash_str(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* The state of a member as one node sees it. */
typedef enum ftl_member_state {
	FTL_MEMBER_ALIVE,
	FTL_MEMBER_SUSPECT,
	FTL_MEMBER_DEAD,
	FTL_MEMBER_LEFT, /* left gracefully: never confused with dead */
	FTL_MEMBER_STATE_MAX
} ftl_member_state;

extern const char *const ftl_member_state_strs[FTL_MEMBER_STATE_MAX];

typedef enum ftl_msg_type {
	FTL_MSG_PING,     /* are you alive? answered by ack */
	FTL_MSG_PING_REQ, /* please ping target for me (indirect probe) */
	FTL_MSG_ACK,      /* answer to a ping, or forwarded for a ping_req */
	FTL_MSG_NACK,     /* Lifeguard: the intermediary is alive but got no ack from the target */
	FTL_MSG_ALIVE,    /* rumor: node is alive with this (generation, incarnation) */
	FTL_MSG_SUSPECT,  /* rumor: from suspects node */
	FTL_MSG_DEAD,     /* rumor: from declared node dead */
	FTL_MSG_LEFT,     /* rumor: node left gracefully */
	FTL_MSG_KEY_OP,   /* cluster-wide keyring change (install/use/remove), gossiped like a rumor */
	FTL_MSG_NAME_TAKEN, /* to a newcomer: the name it claims is held by a live member at another address */
	FTL_MSG_TYPE_MAX
} ftl_msg_type;

extern const char *const ftl_msg_type_strs[FTL_MSG_TYPE_MAX];

typedef struct ftl_msg_ping {
	uint32_t seq;                     /* matches the ack */
	char target[FTL_NAME_MAX];        /* who the sender thinks it is talking to */
	char source[FTL_NAME_MAX];        /* the sender */
	char source_addr[FTL_ADDR_MAX];   /* where to send the ack */
} ftl_msg_ping;

typedef struct ftl_msg_ping_req {
	uint32_t seq;                     /* the requester's sequence number, echoed in ack/nack */
	char target[FTL_NAME_MAX];
	char target_addr[FTL_ADDR_MAX];
	char source[FTL_NAME_MAX];        /* the requester */
	char source_addr[FTL_ADDR_MAX];
	bool want_nack;                   /* Lifeguard: requester understands nack */
} ftl_msg_ping_req;

typedef struct ftl_msg_ack {
	uint32_t seq;
	char source[FTL_NAME_MAX];        /* who acks (the probed node) */
} ftl_msg_ack;

typedef struct ftl_msg_nack {
	uint32_t seq;
	char source[FTL_NAME_MAX];        /* the intermediary */
} ftl_msg_nack;

typedef struct ftl_msg_alive {
	char name[FTL_NAME_MAX];
	uint64_t generation;
	uint64_t incarnation;
	char addr[FTL_ADDR_MAX];
	uint16_t meta_len;
	uint8_t meta[FTL_META_MAX];
	ftl_key_fps key_fps;              /* the keys it holds, by fingerprint; optional (older agents send none) */
} ftl_msg_alive;

/* suspect, dead and left share one shape: who, which life, and who says so; a dead rumor also says whether
 * the death was proven (swim_proof.c), which lets the rendezvous leave it out of the quorum. */
typedef struct ftl_msg_rumor {
	char name[FTL_NAME_MAX];
	uint64_t generation;
	uint64_t incarnation;
	char from[FTL_NAME_MAX];
	uint64_t proof; /* dead: FTL_DEATH_REFUSED or FTL_DEATH_WITNESSED when proven, else 0 (absent on the wire) */
} ftl_msg_rumor;

typedef enum ftl_key_op_kind {
	FTL_KEY_INSTALL,
	FTL_KEY_USE,      /* implies install */
	FTL_KEY_REMOVE,
	FTL_KEY_OP_MAX
} ftl_key_op_kind;

extern const char *const ftl_key_op_strs[FTL_KEY_OP_MAX];

/* A keyring change for the whole cluster. It travels sealed with the current cluster key, so only
 * members can send one; serial makes each change apply once however often it is heard, and version
 * (one more than the cluster's key version where it was made) makes an older change never apply after a
 * newer one, even at a node that never heard either (push-pull carries the version). */
typedef struct ftl_msg_key_op {
	uint64_t serial;
	uint64_t version;                 /* 0 from agents before key versions */
	uint32_t op;                      /* ftl_key_op_kind */
	char from[FTL_NAME_MAX];
	uint16_t key_len;                 /* must be 32 (FTL_KEY_SIZE) to be applied */
	uint8_t key[FTL_META_MAX];
} ftl_msg_key_op;

/* The answer to an alive for a live member's name from another address (swim_name.c): sent straight to the
 * claimant, never gossiped. The claimant stops when it names its own life. */
typedef struct ftl_msg_name_taken {
	char name[FTL_NAME_MAX];          /* the name claimed */
	uint64_t generation;              /* the claimant's life that is refused */
	char addr[FTL_ADDR_MAX];          /* where the live member that holds the name is */
	char from[FTL_NAME_MAX];          /* who refused */
} ftl_msg_name_taken;

typedef struct ftl_msg {
	ftl_msg_type type;
	union {
		ftl_msg_ping ping;
		ftl_msg_ping_req ping_req;
		ftl_msg_ack ack;
		ftl_msg_nack nack;
		ftl_msg_alive alive;
		ftl_msg_rumor rumor; /* FTL_MSG_SUSPECT, FTL_MSG_DEAD, FTL_MSG_LEFT */
		ftl_msg_key_op key_op;
		ftl_msg_name_taken name_taken;
	} u;
} ftl_msg;

/* One member in a push-pull full-state exchange. */
typedef struct ftl_pp_member {
	char name[FTL_NAME_MAX];
	uint64_t generation;
	uint64_t incarnation;
	char addr[FTL_ADDR_MAX];
	ftl_member_state state;
	uint16_t meta_len;
	uint8_t meta[FTL_META_MAX];
	ftl_key_fps key_fps;     /* as in ftl_msg_alive */
	uint64_t proof;          /* dead: as in ftl_msg_rumor */
} ftl_pp_member;

/* Push-pull header; the members travel in a caller-owned array. */
typedef struct ftl_push_pull {
	bool is_join;            /* sent by a joining node: the peer answers with its own state */
	char source[FTL_NAME_MAX];
	uint32_t count;          /* members that follow */
	uint64_t key_version;    /* the sender's key version (swim_keys.c); 0 from agents before it */
} ftl_push_pull;

#endif
