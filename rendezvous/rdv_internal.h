/* The rendezvous instance and the seams between its files. Internal to rendezvous/.
 *
 *   rendezvous.c    lifecycle, inputs, the update loop, phase, adopting a view, the public getters
 *   rdv_ready.c     the member side: send ready to the coordinator when the candidate changes, and again
 *   rdv_receive.c   what a decoded message does: epoch catch-up, then by type
 *   rdv_coord.c     the coordinator: collect readies, settle, Paxos phases 1 and 2, commit
 *   rdv_acceptor.c  the acceptor side of Paxos (every member of the current view)
 *   rdv_send.c      the output queue, and the inbox of messages a node sends itself
 *   rdv_candidate.c ordering and quorum; rdv_peers.c the alive table; rdv_view.c copies and digests;
 *   rdv_codec.c     the wire format; rdv_msg.c message helpers */
#ifndef FTL_RDV_INTERNAL_H
#define FTL_RDV_INTERNAL_H

#include "base/deadline.h"
#include "base/fifo.h"
#include "rdv_candidate.h"
#include "rdv_msg.h"
#include "rdv_peers.h"
#include "rdv_view.h"
#include "rendezvous.h"

/* A proposal stage restarts (with a higher ballot) when it has not finished in this many ready intervals. */
#define RDV_STAGE_TIMEOUT_INTERVALS 2

/* Paxos acceptor state for deciding the view after ours (reset whenever our view changes). */
typedef struct rdv_acceptor {
	rdv_ballot promised;            /* the highest ballot we promised (round 0: none) */
	rdv_ballot accepted;            /* the ballot of value (round 0: nothing accepted) */
	ftl_rdv_view value;             /* the view we accepted for epoch+1 */
} rdv_acceptor;

typedef enum rdv_stage {
	RDV_STAGE_IDLE,                 /* collecting readies, settling, or nothing to do */
	RDV_STAGE_PREPARE,              /* phase 1: waiting for promises */
	RDV_STAGE_ACCEPT,               /* phase 2: waiting for accepteds */
} rdv_stage;

/* What we coordinate: one attempt to decide epoch+1. */
typedef struct rdv_proposal {
	rdv_stage stage;
	rdv_ballot ballot;              /* this attempt's */
	uint64_t target_digest;         /* the member list we set out to commit (our candidate, or its survivors) */
	ftl_rdv_view value;             /* what phase 2 asks for: our target, or the highest view promised to us */
	rdv_ballot value_ballot;        /* the ballot value was accepted under before (round 0: it is ours) */
	char (*acceptors)[FTL_NAME_MAX];/* the electorate members alive when the attempt started */
	bool *is_answered;              /* per acceptor, in the current stage */
	uint32_t n_acceptors;           /* acceptors[0..n_acceptors) */
	uint32_t answered;              /* acceptors that promised (phase 1) or accepted (phase 2) */
	uint32_t needed;                /* the quorum: a strict majority of the electorate */
	int64_t started_us;             /* when the current stage began (for the timeout) */
	int64_t retry_us;               /* no new attempt before this (the blob callback postponed) */
} rdv_proposal;


struct ftl_rdv {
	ftl_rdv_member self;            /* our name, generation and comm address */
	ftl_rdv_config cfg;
	ftl_rdv_blob_cb blob_cb;        /* makes the bootstrap blob of a view we commit; may be NULL */
	void *blob_ctx;

	ftl_rdv_view view;              /* the newest view we know of (we may not be in it) */
	uint64_t view_digest;           /* rdv_view_digest(&view) */
	uint64_t view_members_digest;   /* of view's member list, to compare with candidates */
	int rank;                       /* ours in view, -1 when not a member */
	bool is_view_new;               /* adopted and not yet taken by ftl_rdv_take_new_view */
	uint64_t steps;                 /* the training steps of view's lineage (ftl_rdv_set_steps, or heard) */
	uint64_t announced_lineage;     /* the lineage whose work (steps > 0) we told every member of, as rank 0 */

	rdv_peers peers;                /* the alive members, self included */
	char (*left_names)[FTL_NAME_MAX]; /* members that left gracefully, as membership last said */
	const char **left;              /* pointers into left_names, for rdv_candidate_build */
	size_t n_left;
	rdv_candidate cand;             /* rebuilt whenever the view, the members or the left names change */
	int self_in_cand;               /* our index in cand, -1 when not in it (a spare) */
	ftl_rdv_phase phase;
	uint64_t rebuild_epoch;         /* == view.epoch: its communicator failed here or at a member who said
					 * so; commit the same members under a new epoch (see ftl_rdv_request_rebuild) */
	uint64_t waive_epoch;           /* == view.epoch: an operator waived its quorum (ftl_rdv_waive_quorum) */
	uint64_t max_epoch;             /* == view.epoch: an operator asked for max_request from the next view on */
	uint32_t max_request;
	uint64_t bench_epoch;           /* == view.epoch: bench_request asked from the next view on */
	ftl_rdv_benched bench_request;
	bool has_started;               /* an input has come: started_us is set */
	int64_t started_us;             /* the first input's time: the expected-workers wait starts here */
	int64_t now_us;                 /* the latest input's time */

	uint64_t sent_candidate;        /* the candidate digest of our last ready (0: none since a change) */
	uint64_t sent_survivors;        /* its survivors digest */
	uint64_t sent_requests;         /* its rebuild, waive and scale requests, mixed (a change sends at once) */
	char sent_to[FTL_NAME_MAX];     /* the coordinator it went to */
	int64_t next_ready_us;          /* when to send it again; INT64_MAX when we need not */

	rdv_acceptor acceptor;          /* our vote on the view after ours */
	rdv_proposal proposal;          /* our attempt to decide it, when we coordinate */
	uint64_t max_round;             /* the largest ballot round heard of for the view after ours */
	int64_t coord_next_us;          /* when the coordinator must look again; INT64_MAX: on input only */

	ftl_fifo outputs;               /* ftl_rdv_output: encoded messages waiting for the caller */
	ftl_fifo inbox;                 /* rdv_msg a node sends itself (the coordinator is also an acceptor),
					 * handled after the current input so that no handler re-enters another;
					 * each owns its view's members */
	uint64_t dropped;               /* malformed or impossible input */
};

/* rendezvous.c */
/* Rebuilds the candidate, our place in it and the phase after a change of view, members or left names. */
void rdv_rebuild(ftl_rdv *r);
/* Makes v our view (we may not be in it): resets the vote and any proposal; FTL_ERR_SYSTEM when out of
 * memory. */
ftl_err rdv_adopt(ftl_rdv *r, const ftl_rdv_view *v);
bool rdv_is_coordinator(const ftl_rdv *r);
/* Whether name left gracefully, per the last membership snapshot. O(left). */
bool rdv_has_left(const ftl_rdv *r, const char *name);
/* Whether the view's communicator must be made again under a new epoch (a rebuild was asked for it). */
bool rdv_is_rebuild_wanted(const ftl_rdv *r);
/* Whether the candidate has the workers the next view needs: before the first view, while its wait lasts,
 * expected_workers alive (spares included: the count is of workers started); else min_workers in the
 * candidate. And when that wait ends (INT64_MIN: no wait, INT64_MAX: none set). */
bool rdv_has_workers_needed(const ftl_rdv *r);
int64_t rdv_expected_until(const ftl_rdv *r);
/* A peer's ready carried requests (rebuild, waive, scale) for our view epoch: they become ours too. */
void rdv_take_requests(ftl_rdv *r, const rdv_msg *ready);
/* Whether an operator asked for another maximum than the view's (ftl_rdv_request_max). */
bool rdv_is_scale_wanted(const ftl_rdv *r);
/* Whether a member of the view asked to bench another member than the view's (ftl_rdv_request_bench). */
bool rdv_is_bench_wanted(const ftl_rdv *r);
/* The view to propose carries: the requested maximum and benched member, else the view's. */
void rdv_carry_requests(const ftl_rdv *r, ftl_rdv_view *next);
/* What our readies' requests are, mixed into one number (a change sends a ready at once). */
uint64_t rdv_requests_mix(const ftl_rdv *r);

/* rdv_ready.c */
void rdv_ready_step(ftl_rdv *r, int64_t now_us);

/* rdv_receive.c */
/* Handles one decoded message (from a peer, or from the inbox). */
void rdv_handle(ftl_rdv *r, int64_t now_us, const rdv_msg *m);

/* rdv_coord.c */
void rdv_coord_step(ftl_rdv *r, int64_t now_us);
void rdv_coord_on_ready(ftl_rdv *r, const rdv_msg *m);
void rdv_coord_on_promise(ftl_rdv *r, int64_t now_us, const rdv_msg *m);
void rdv_coord_on_accepted(ftl_rdv *r, int64_t now_us, const rdv_msg *m);
void rdv_coord_on_reject(ftl_rdv *r, const rdv_msg *m);
void rdv_proposal_abort(ftl_rdv *r);

/* rdv_acceptor.c */
void rdv_acceptor_reset(rdv_acceptor *a);
void rdv_acceptor_on_prepare(ftl_rdv *r, const rdv_msg *m);
void rdv_acceptor_on_accept(ftl_rdv *r, const rdv_msg *m);

/* rdv_send.c */
/* Recipients: n names, each stride bytes after the previous (a name array, or the name field of an array
 * of structs that starts with it). */
typedef struct rdv_names {
	const char *first;              /* the first name */
	size_t n;                       /* how many */
	size_t stride;                  /* bytes from one name to the next */
} rdv_names;

/* Fills m's header (us, our view) and sends it to each recipient: one encoding shared by their outputs,
 * or a copy into the inbox for ourselves. The caller keeps ownership of m and its view. */
void rdv_send_all(ftl_rdv *r, rdv_names to, rdv_msg *m);
void rdv_send(ftl_rdv *r, const char *to, rdv_msg *m);
void rdv_send_ready(ftl_rdv *r, const char *to);
void rdv_send_commit(ftl_rdv *r, const char *to);
/* Our view to every alive member: a coordinator's commit, or rank 0 saying its lineage has begun to train. */
void rdv_send_commit_to_peers(ftl_rdv *r);
/* Takes the oldest inbox message into *m (the caller frees it with rdv_msg_free); false when empty. */
bool rdv_inbox_pop(ftl_rdv *r, rdv_msg *m);
void rdv_queues_free(ftl_rdv *r);

#endif
