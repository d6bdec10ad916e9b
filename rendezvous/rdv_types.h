/* The words of the rendezvous's interface (rendezvous.h): members, views and phases, its settings, the
 * messages it hands out and the quorum's figures. Apart from the state machine's functions so that a shell
 * that drives it through another module (the agent through node/node.h, the training layer through the
 * agent's door) holds views without seeing the rendezvous itself. */
#ifndef FTL_RDV_TYPES_H
#define FTL_RDV_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "membership/message.h" /* FTL_NAME_MAX, FTL_ADDR_MAX */
#include "base/diag.h"

#define FTL_RDV_BLOB_MAX 256      /* opaque bootstrap bytes (an NCCL unique id is 128) */
#define FTL_RDV_MAX_MEMBERS 4096  /* members in one view or candidate; more is refused */

/* One alive member as membership sees it, with the address its comm listens on and, in a job of replicas,
 * the replica it belongs to (rdv_replicas.h: the view then admits whole replicas only). */
typedef struct ftl_rdv_member {
	char name[FTL_NAME_MAX];
	uint64_t generation;            /* join order: smaller joined first */
	char data_addr[FTL_ADDR_MAX];   /* "ip:port" of its comm listener */
	char replica[FTL_NAME_MAX];     /* the replica's name ("" with replica_size 0: not in one) */
	uint32_t replica_index;         /* its place in the replica, < replica_size */
	uint32_t replica_size;          /* members a whole replica has; 0: every member is a replica alone */
} ftl_rdv_member;

/* A view: the one view type of the tree, from the rendezvous's messages to the training thread's copy.
 *
 * Ownership. Whoever holds the struct owns members, with one exception: the pointers ftl_rdv_current and
 * ftl_rdv_take_new_view return are borrowed from the rendezvous, read-only and valid until the next call
 * into it (the loop thread only). A holder that keeps a view past that, or hands it to another thread (the
 * agent's newest view under its lock, the view ftl_execute works in), takes a deep copy with
 * ftl_rdv_view_copy and releases it with ftl_rdv_view_clear; a copy is never shared between threads.
 *
 * seq and self_rank are the holder's notes, not the protocol's: they travel in no message and count in no
 * digest. The rendezvous leaves them 0; the agent numbers the views it hands to the training thread
 * (seq 1, 2, ...) and records its own rank there. self_rank means something only when seq is not 0. */
/* A member sent to the spares because the others wait for it (ftl_rdv_request_bench): this life of it only
 * (a restart, a new generation, is not benched). name "" = none. */
typedef struct ftl_rdv_benched {
	char name[FTL_NAME_MAX];
	uint64_t generation;
} ftl_rdv_benched;

typedef struct ftl_rdv_view {
	uint64_t epoch;                 /* 0 = no view yet */
	uint64_t lineage;               /* the cluster it descends from: a digest of its first view (0 = none) */
	uint32_t n;                     /* world size */
	uint32_t max_workers;           /* the job's maximum as an operator set it (ftl_rdv_request_max), carried
					 * by every later view; 0: none set, each member's config.max_workers */
	ftl_rdv_benched benched;        /* carried by every later view: candidates take it after every other
					 * alive member, so a spare takes its place (rdv_candidate.h) */
	ftl_rdv_member *members;        /* [n], by rank: members[0] is rank 0, the coordinator */
	uint16_t blob_len;
	uint8_t blob[FTL_RDV_BLOB_MAX];
	uint64_t seq;                   /* this worker's count of views taken (0: not one): unlike the epoch, it
					 * names one view even across lineages */
	int self_rank;                  /* ours in it, -1 when we are not a member (a spare, or catching up) */
} ftl_rdv_view;

typedef enum ftl_rdv_phase {
	FTL_RDV_NO_VIEW,            /* no view yet, or too few workers (below min_workers) */
	FTL_RDV_RENDEZVOUS,         /* the candidate differs from the view: agreeing on the next one (the
				     * current view stays usable until a new one is committed) */
	FTL_RDV_TRAINING,           /* we hold a view that matches our candidate */
	FTL_RDV_SPARE,              /* over max_workers: waiting as a hot spare */
	FTL_RDV_WAITING_FOR_QUORUM, /* the candidate lacks a majority of the previous view: paused */
	FTL_RDV_PHASE_MAX
} ftl_rdv_phase;

extern const char *const ftl_rdv_phase_strs[FTL_RDV_PHASE_MAX];

typedef struct ftl_rdv_config {
	uint32_t min_workers;           /* >= 1 */
	uint32_t max_workers;           /* >= min_workers */
	int64_t settle_us;              /* stable time before a view that adds members */
	int64_t ready_interval_us;      /* resend ready while not in agreement */
	uint32_t expected_workers;      /* the first view waits for this many (0 or <= min_workers: no wait) */
	int64_t expected_wait_us;       /* ... for at most this long after the first input (0: for ever) */
	uint32_t spares;                /* alive members kept out of a growing view (rdv_candidate.h) */
} ftl_rdv_config;

/* Makes the coordinator's blob for a view about to be committed (it will be rank 0): FTL_OK with its length
 * (at most cap; 0 for none) in *len, or an error (the reason in the diag) to postpone the commit. May be
 * NULL. */
typedef ftl_err (*ftl_rdv_blob_cb)(void *ctx, uint64_t epoch, uint8_t *blob, size_t cap, size_t *len);

/* An encoded message for one member (by name), never ourselves. The caller delivers data[0..len) to that
 * member's ftl_rdv_receive, reliably or not: the protocol resends. data is read-only: outputs of one
 * broadcast share it. */
typedef struct ftl_rdv_output {
	char to[FTL_NAME_MAX];
	size_t len;
	uint8_t *data;                  /* owned by the output; freed by ftl_rdv_output_free */
} ftl_rdv_output;

typedef struct ftl_rdv_quorum {
	uint32_t electorate;            /* members of the view that did not leave gracefully */
	uint32_t alive;                 /* of them, alive now */
	uint32_t needed;                /* a strict majority of the electorate */
	bool is_waived;                 /* an operator waived the quorum of this view */
} ftl_rdv_quorum;

#endif
