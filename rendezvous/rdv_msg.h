/* The rendezvous messages as plain C structs, and their codec (rdv_codec.c, where the key numbering is).
 *
 * One struct serves every message type: the header (sender, its view epoch and view digest) is common, and
 * each type uses a few more fields. The protocol that sends them is described in rendezvous.h; the Paxos
 * part (prepare, promise, accept, accepted, reject) in rdv_coord.c and rdv_acceptor.c. Internal to
 * rendezvous/ (the fuzz target and the simulator read it too). */
#ifndef FTL_RDV_MSG_H
#define FTL_RDV_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "rendezvous.h"

#define RDV_WIRE_VERSION 1

typedef enum rdv_msg_type {
	RDV_MSG_READY,    /* member -> coordinator: my candidate; coordinator -> laggard: report, please */
	RDV_MSG_PREPARE,  /* coordinator -> acceptors: Paxos phase 1 for epoch+1 under a ballot */
	RDV_MSG_PROMISE,  /* acceptor -> coordinator: promised, with the view it accepted before (if any) */
	RDV_MSG_ACCEPT,   /* coordinator -> acceptors: Paxos phase 2, accept this view */
	RDV_MSG_ACCEPTED, /* acceptor -> coordinator */
	RDV_MSG_REJECT,   /* acceptor -> coordinator: I promised a higher ballot (the one carried) */
	RDV_MSG_COMMIT,   /* the chosen view, to everyone alive; also the answer to a stale epoch */
	RDV_MSG_TYPE_MAX
} rdv_msg_type;

extern const char *const rdv_msg_type_strs[RDV_MSG_TYPE_MAX];

/* A Paxos ballot: ordered by round, then by the coordinator's name. Round 0 means "none". */
typedef struct rdv_ballot {
	uint64_t round;                 /* above every round the coordinator has heard of */
	char by[FTL_NAME_MAX];          /* the coordinator: two coordinators never share a ballot */
} rdv_ballot;

typedef struct rdv_msg {
	rdv_msg_type type;
	char from[FTL_NAME_MAX];        /* the sender */
	uint64_t generation;            /* the sender's */
	uint64_t epoch;                 /* the sender's view epoch (every message) */
	uint64_t view_digest;           /* the sender's view digest (every message; 0 with no view) */
	uint64_t lineage;               /* the sender's view lineage (every message) */
	uint32_t view_size;             /* the sender's view member count (every message) */
	uint64_t steps;                 /* the sender's view lineage's training steps (every message; optional,
					 * absent = 0) */
	char data_addr[FTL_ADDR_MAX];   /* ready: the sender's comm address */
	uint64_t candidate_digest;      /* ready: of the sender's candidate */
	uint64_t survivors_digest;      /* ready: of its candidate's survivors alone */
	uint64_t rebuild_epoch;         /* ready, optional: the sender's communicator of this view epoch
					 * failed; commit the same members again under a new epoch (0: no) */
	uint64_t waive_epoch;           /* ready, optional: an operator waived this view epoch's quorum (0: no) */
	uint64_t max_epoch;             /* ready, optional: an operator asked, in this view epoch, for ... */
	uint32_t max_request;           /* ... this maximum from the next view on (with max_epoch; 0: none) */
	uint64_t bench_epoch;           /* ready, optional: asked in this view epoch, to bench ... */
	ftl_rdv_benched bench;          /* ... this member from the next view on (with bench_epoch; 0: none) */
	rdv_ballot ballot;              /* prepare, promise, accept, accepted, reject */
	rdv_ballot accepted;            /* promise: what the acceptor accepted before (round 0: nothing) */
	ftl_rdv_view view;              /* accept, commit, promise with accepted: members malloc'd */
} rdv_msg;

int rdv_ballot_cmp(const rdv_ballot *a, const rdv_ballot *b);

/* Encodes msg into a malloc'd buffer (*buf, *len; the caller frees). Returns 0, or -1 on allocation
 * failure or a field a decoder would refuse (empty or overlong name or address, too many members). */
int rdv_encode(const rdv_msg *msg, uint8_t **buf, size_t *len);
/* Decodes one message. Returns 0 (free it with rdv_msg_free), or -1 with the reason in the diag (nothing to
 * free).
 * Bounded: names < FTL_NAME_MAX, addresses < FTL_ADDR_MAX, at most FTL_RDV_MAX_MEMBERS members, a blob
 * of at most FTL_RDV_BLOB_MAX bytes; msgpack-c sees the bytes only after wire_skim has checked them. */
int rdv_decode(const uint8_t *buf, size_t len, rdv_msg *msg);
void rdv_msg_free(rdv_msg *msg);

#endif
