/* One member's whole decision logic, as a pure state machine: SWIM membership (membership/swim.h) joined to
 * the rendezvous (rendezvous/rendezvous.h) by the rules that used to live in the agent's glue:
 *  - the member feed: every membership change hands the rendezvous the alive (and suspect) members that can
 *    train (those whose metadata carries a data address, node_meta.h) and the names of those that left;
 *  - the abort rules: the death of a member of the view in use, and every new view, end the communicator
 *    in use (the event says so, so the shell aborts it in the same breath as it publishes the change, and a
 *    step blocked in a collective returns at once); a leave ends it with the view that follows (node_feed.c);
 *  - the seed rule: a seed's DNS answer is joined wherever it names an address not seen alive (that is how a
 *    node joins, how the two sides of a healed partition meet, and how nodes that started before their seed
 *    was up merge with it later); a healthy cluster sends nothing;
 *  - comm hints: a peer whose connection reset is probed now instead of in its turn (never a death alone).
 *
 * Like its parts it does no I/O and reads no clock. The caller passes `now` (microseconds, any monotonic
 * clock) into every input, and after each one takes out what to send (datagrams, push-pulls and checks:
 * ftl_node_next_output; rendezvous frames for a named member: ftl_node_next_frame) and what happened
 * (ftl_node_next_event), then calls ftl_node_tick at ftl_node_next_deadline. The agent is a libuv shell
 * around it; the simulator (tests/sim) runs thousands of them on virtual time.
 *
 * Frames are plaintext here: the shell seals them for the wire and opens them on arrival, so that one
 * channel seals every agent-to-agent byte. */
#ifndef FTL_NODE_H
#define FTL_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The parts' vocabulary only (their options, outputs, events, views), not the parts: the shell reaches
 * membership and the rendezvous through the calls below, never their own functions or tables. */
#include "rendezvous/rdv_types.h"
#include "membership/swim_types.h"

typedef struct ftl_node ftl_node;
struct ftl_swim;
struct ftl_rdv;

typedef struct ftl_node_options {
	ftl_swim_options swim;          /* membership (when training, swim.meta carries data_addr and the replica:
					 * node_meta.h; the rendezvous takes our replica from it) */
	bool is_training;               /* take part in views; false: membership only (a plain ftl-agent) */
	const char *data_addr;          /* training: "ip:port" of this member's comm listener */
	ftl_rdv_config rdv;             /* training: the rendezvous settings */
	ftl_rdv_blob_cb blob_cb;        /* training: the coordinator's bootstrap bytes (NULL: none) */
	void *blob_ctx;
} ftl_node_options;

/* A rendezvous frame for one member: "send this to member msg.to". The shell delivers the bytes to that
 * member's ftl_node_receive_frame, reliably or not (the protocol resends). */
typedef struct ftl_node_frame {
	ftl_rdv_output msg;             /* msg.to: the member, by name; msg.data[0..msg.len): plaintext, read-only,
					 * released by ftl_node_frame_free */
	char to_addr[FTL_ADDR_MAX];     /* its gossip address as membership knows it */
} ftl_node_frame;

typedef enum ftl_node_event_kind {
	FTL_NODE_EVENT_MEMBER,          /* a membership event (.member) */
	FTL_NODE_EVENT_VIEW,            /* a new view was taken (ftl_node_rdv: current view, rank, phase), maybe one
					 * we are not in (a spare, or a minority catching up): hold no comm for it */
	FTL_NODE_EVENT_LEFT,            /* our graceful leave has been gossiped enough: safe to go */
	FTL_NODE_EVENT_KIND_MAX
} ftl_node_event_kind;

extern const char *const ftl_node_event_kind_strs[FTL_NODE_EVENT_KIND_MAX];

typedef struct ftl_node_event {
	ftl_node_event_kind kind;
	ftl_swim_event member;          /* FTL_NODE_EVENT_MEMBER */
	bool is_abort;                  /* the abort rule: this change ends the communicator in use (if any) */
	char why[160];                  /* is_abort: why, for the log ("member w3 of the view is gone") */
} ftl_node_event;

/* NULL with the reason in the diag when an option is bad (the message names it). */
ftl_node *ftl_node_new(const ftl_node_options *o, int64_t now_us);
void ftl_node_delete(ftl_node *n);

/* ---- inputs ---- */
/* A gossip datagram from a peer, already opened by the channel (plaintext). */
void ftl_node_receive_datagram(ftl_node *n, int64_t now_us, const uint8_t *data, size_t len);
/* A rendezvous frame from a peer, already opened by the channel; ignored when not training. */
void ftl_node_receive_frame(ftl_node *n, int64_t now_us, const uint8_t *data, size_t len);
void ftl_node_tick(ftl_node *n, int64_t now_us);
/* The latest time by which ftl_node_tick must be called (maybe in the past: call it now). */
int64_t ftl_node_next_deadline(const ftl_node *n);
/* A push-pull frame from a peer, opened by the channel (swim.h); FTL_ERR_INVALID (counted) when it does
 * not decode, the reason in the diag. */
ftl_err ftl_node_push_pull_merge(ftl_node *n, int64_t now_us, const uint8_t *frame, size_t len, bool *is_join);
/* How a proof-of-death check the node asked for went (swim.h). */
void ftl_node_check_done(ftl_node *n, int64_t now_us, const char *name, uint64_t generation, const char *addr,
			 ftl_swim_check_result result);
/* Witnesses on the members' host saw these lives end (swim.h, ftl_swim_witnessed_death): all of them are
 * declared before the rendezvous looks, so a burst of kills seen together is one view change. */
void ftl_node_witnessed_deaths(ftl_node *n, int64_t now_us, const char *const *names, const uint64_t *generations,
			       size_t count);
/* The comm saw its connection to member `name` fail (reset, refused): probe it now (swim.h, hints). */
void ftl_node_comm_failed(ftl_node *n, int64_t now_us, const char *name);
/* Learns a member without gossip or event (swim.h, ftl_swim_add_known), for a node that starts from a member
 * list it already trusts; the rendezvous hears of it at the next input (a tick will do). */
ftl_err ftl_node_add_known(ftl_node *n, int64_t now_us, const ftl_msg_alive *a);
/* The seed rule: one seed's DNS answer (addresses as "ip:port"). Joins through every answer that is not our
 * own address and not a member seen alive; returns how many joins it queued. */
size_t ftl_node_seeds_answered(ftl_node *n, int64_t now_us, const char *const *addrs, size_t n_addrs);
/* How long the shell waits before it resolves the seeds again; ask once per lookup. interval_us while this
 * node sees another member alive or suspect (or is leaving); while it sees no one, 250 ms, then twice as
 * long each time up to interval_us, starting over whenever it is left alone again. */
int64_t ftl_node_seeds_next_wait_us(ftl_node *n, int64_t interval_us);

/* ---- user requests ---- */
void ftl_node_leave(ftl_node *n, int64_t now_us);
/* ftl_swim_set_meta (swim.h). */
ftl_err ftl_node_set_meta(ftl_node *n, int64_t now_us, const uint8_t *meta, uint16_t len);
/* ftl_swim_key_op (swim.h): FTL_ERR_INVALID with the reason in the diag when refused. */
ftl_err ftl_node_key_op(ftl_node *n, int64_t now_us, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE]);
/* The communicator of view `epoch` failed here with no membership change to explain it (rendezvous.h). */
void ftl_node_request_rebuild(ftl_node *n, int64_t now_us, uint64_t epoch);
/* `ftlctl quorum reset` (rendezvous.h): FTL_ERR_INVALID, with the reason in the diag, unless training and
 * waiting for quorum. */
ftl_err ftl_node_waive_quorum(ftl_node *n, int64_t now_us);
/* The operator's new maximum for the job (ftl_rdv_request_max); FTL_ERR_INVALID, the reason in the diag. */
ftl_err ftl_node_request_max(ftl_node *n, int64_t now_us, uint32_t max_workers);
/* A slow member to the spares (ftl_rdv_request_bench); FTL_ERR_INVALID, the reason in the diag. */
ftl_err ftl_node_request_bench(ftl_node *n, int64_t now_us, const char *name, uint64_t generation);
/* The training steps this worker's job completed in `lineage` (ftl_rdv_set_steps); nothing when not training. */
void ftl_node_set_steps(ftl_node *n, uint64_t lineage, uint64_t steps);

/* ---- outputs: each returns false when there is nothing more ---- */
bool ftl_node_next_output(ftl_node *n, ftl_swim_output *out);
bool ftl_node_next_frame(ftl_node *n, ftl_node_frame *out);
void ftl_node_frame_free(ftl_node_frame *f);
bool ftl_node_next_event(ftl_node *n, ftl_node_event *ev);

/* ---- what the shell observed and must be counted or answered (node_read.c) ---- */
/* Input that did not open (a datagram or push-pull the channel could not open): counted by reason. */
void ftl_node_count_drop(ftl_node *n, ftl_swim_drop why);
/* Our side of a push-pull (swim.h): *frame is the caller's to free. */
ftl_err ftl_node_push_pull_encode(ftl_node *n, bool is_join, uint8_t **frame, size_t *len);

/* ---- reading state (changes go through the inputs above; node_read.c) ---- */
/* What the node knows, for the shell's status, metrics and counts: read-only, valid until the next input. */
typedef struct ftl_node_snapshot {
	const char *name;                      /* our member name */
	uint64_t generation, incarnation;      /* our life and its refutation counter */
	uint32_t count[FTL_MEMBER_STATE_MAX];  /* members by state, us included */
	uint32_t n_members;                    /* all of them: the range of ftl_node_member_at */
	int health;                            /* Lifeguard's local health score (0: healthy) */
	const ftl_swim_stats *stats;           /* membership's counters */
	const ftl_swim_config *config;         /* the timing in force */
	int64_t suspicion_max_us;              /* the longest suspicion at today's size (alive + suspect) */
	int64_t detection_bound_us;            /* the crash-detection bound at today's size (profile.h) */
	bool is_leave_done;                    /* our graceful leave has been gossiped enough */
} ftl_node_snapshot;
void ftl_node_read(const ftl_node *n, ftl_node_snapshot *out);
/* The rendezvous's side, which the shell publishes after every input: apart, so that it costs a few reads. */
typedef struct ftl_node_view_state {
	const ftl_rdv_view *view;              /* the current view, maybe one we are not in; NULL: not training */
	int rank;                              /* ours in it; -1 when not in it */
	ftl_rdv_phase phase;
	uint64_t lineage_steps;                /* steps the view's lineage completed (ftl_rdv_steps) */
	const char *coordinator;               /* who leads the next view ("" when unknown) */
	uint32_t max_workers;                  /* the job's maximum in force (ftl_rdv_max_workers) */
} ftl_node_view_state;
void ftl_node_read_view(const ftl_node *n, ftl_node_view_state *out);
/* One member as the node knows it, for the shell's status rows, its witness and its peer channel: the
 * strings and metadata are the node's, read-only and valid until the next input. */
typedef struct ftl_node_member {
	const char *name;
	const char *addr;                      /* its advertised gossip address, "ip:port" */
	ftl_member_state state;
	uint64_t generation, incarnation;
	int64_t last_heard_us;                 /* the last direct ack or message from it */
	const uint8_t *meta;                   /* its gossiped metadata (node_meta.h): meta_len bytes */
	uint16_t meta_len;
} ftl_node_member;
/* The i-th member, us included, for 0 <= i < ftl_node_snapshot.n_members (in no promised order; an input
 * may reorder them); false past the end. O(1). */
bool ftl_node_member_at(const ftl_node *n, uint32_t i, ftl_node_member *out);
/* A member by name (any state); false when the node knows no such name. O(1). */
bool ftl_node_find_member(const ftl_node *n, const char *name, ftl_node_member *out);
/* Waiting for quorum: the members of the view that are gone (at most cap names) and the quorum's figures
 * (rendezvous.h, ftl_rdv_missing); 0 when not training. */
size_t ftl_node_missing(const ftl_node *n, const char **names, size_t cap, ftl_rdv_quorum *q);
/* A view's value operations (rendezvous.h), for the shell's own copies: a deep copy (FTL_ERR_SYSTEM when out
 * of memory) and its release. */
ftl_err ftl_node_view_copy(ftl_rdv_view *dst, const ftl_rdv_view *src);
void ftl_node_view_clear(ftl_rdv_view *v);
extern const char *const *const ftl_node_phase_strs; /* ftl_rdv_phase_strs */
/* Which keys the live members hold (swim.h, ftl_swim_key_census). */
void ftl_node_key_census(ftl_node *n, ftl_key_census *out);
/* The live members that do not advertise key fp (key_census.h): at most cap names into names (valid until
 * the next input); returns how many there are. O(members). */
uint32_t ftl_node_key_lacking(const ftl_node *n, const uint8_t fp[FTL_KEY_FP_SIZE], const char **names, uint32_t cap);
/* The parts themselves, for tests and the simulator (which include their headers); the shell reads through
 * the calls above. */
struct ftl_swim *ftl_node_swim(const ftl_node *n);
const struct ftl_rdv *ftl_node_rdv(const ftl_node *n);      /* NULL when not training */
bool ftl_node_has_left(const ftl_node *n);
/* The member named in the current view (by name: any generation), -1 when not in it or not training. */
int ftl_node_rank_in_view(const ftl_node *n, const char *name);

#endif
