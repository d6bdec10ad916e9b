/* The inside of ftl_swim, shared by the swim_*.c files (one per concern: lifecycle and timers, probing,
 * rumors and state changes, sending, receiving and push-pull). Not for users of the module. */
#ifndef FTL_MEMBERSHIP_SWIM_INTERNAL_H
#define FTL_MEMBERSHIP_SWIM_INTERNAL_H

#include "awareness.h"
#include "broadcast.h"
#include "base/deadline.h"
#include "base/fifo.h"
#include "rng.h"
#include "swim.h"
#include "tombstones.h"

#define FTL_SWIM_MAX_EVENTS 4096 /* undrained events beyond this are dropped and counted */
#define FTL_SWIM_MAX_RELAYS 64   /* ping-reqs we are serving at once; more are ignored */
#define FTL_SWIM_KEY_SERIALS 64  /* recent keyring changes remembered, so each applies once */
#define FTL_SWIM_CHECK_SEQS 16   /* recent check pings, whose acks are expected */
#define FTL_SWIM_MAX_PROOFS 16   /* proof-of-death checks outstanding at once; more are not asked */
#define FTL_SWIM_REVIVALS 8      /* reaped lives asked to prove they are alive, at once */
#define FTL_SWIM_REFUSALS 8      /* claimants of a live member's name told so, once per probe interval each */

/* An alive for a reaped life, held until that life acks our ping (swim_revive.c). */
typedef struct ftl_revival {
	ftl_msg_alive alive;
	uint32_t seq;
	int64_t expires_us;        /* free once past */
} ftl_revival;

/* A claimant of a live member's name we told so: not told again until expires_us (swim_name.c). */
typedef struct ftl_refusal {
	char name[FTL_NAME_MAX];
	uint64_t generation;       /* the claimant's life */
	int64_t expires_us;
} ftl_refusal;

/* A proof-of-death check the caller is doing for us: whose life, at which address, until when. */
typedef struct ftl_proof {
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uint64_t generation;
	int64_t expires_us;         /* a result after this is ignored, and the slot is free */
} ftl_proof;

/* The probe in flight (one at a time, as in SWIM). */
typedef struct ftl_probe {
	bool is_active;
	bool is_acked;
	int64_t started_us;          /* when the direct ping went out: the round trip of its ack */
	bool is_indirect_sent;
	char target[FTL_NAME_MAX];
	uint32_t seq;
	int64_t direct_deadline_us; /* send ping-reqs after this */
	int64_t end_us;             /* suspect after this */
	int expected_nacks;
	int nacks;
} ftl_probe;

/* A ping-req we serve for another member. */
typedef struct ftl_relay {
	uint32_t our_seq;           /* the seq of our ping to the target */
	uint32_t their_seq;         /* the requester's seq, echoed back */
	char requester_addr[FTL_ADDR_MAX];
	bool want_nack;
	bool is_nack_sent;
	int64_t nack_at_us;
	int64_t expires_us;
} ftl_relay;


struct ftl_swim {
	ftl_swim_config cfg;
	ftl_keyring *keyring;
	bool (*is_addr_valid)(const char *addr); /* NULL: any */
	ftl_rng rng;
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	ftl_members members;
	ftl_tombstones tombstones; /* reaped lives: their alive rumors must prove themselves */
	ftl_revival revivals[FTL_SWIM_REVIVALS];
	ftl_refusal refusals[FTL_SWIM_REFUSALS];
	bool is_name_taken;        /* a live member elsewhere holds our name: we have stopped (swim_name.c) */
	ftl_msg_name_taken name_taken; /* ... who, where, and who told us */
	uint32_t count[FTL_MEMBER_STATE_MAX];
	char (*suspects)[FTL_NAME_MAX]; /* names of the members in state suspect: their timers */
	int64_t *suspect_due_us;   /* [n_suspects]: when each suspect's timer next needs us (a check or its
				    * deadline; INT64_MAX before it starts), so the next deadline is one scan of
				    * numbers however many members a partition leaves suspect */
	uint32_t n_suspects;
	uint32_t cap_suspects;
	ftl_bcast_queue bcast;
	ftl_awareness health;
	uint32_t seq;
	ftl_probe probe;
	char hint[FTL_NAME_MAX];   /* probe this one next; empty when none */
	ftl_relay relays[FTL_SWIM_MAX_RELAYS];
	int n_relays;
	bool is_leaving;
	ftl_proof proofs[FTL_SWIM_MAX_PROOFS];
	int n_proofs;
	uint32_t check_seqs[FTL_SWIM_CHECK_SEQS];
	int n_check_seqs;
	uint64_t key_serials[FTL_SWIM_KEY_SERIALS];
	int n_key_serials;
	uint64_t key_version;      /* the newest key change applied or heard of by push-pull (swim_keys.c) */
	bool is_key_version_known; /* false from a join until the first push-pull: key changes wait */
	uint64_t keyring_changes;  /* the keyring's change count when our fingerprints were last taken */
	int64_t next_probe_us;
	int64_t next_gossip_us;
	int64_t last_push_pull_us;  /* the next is due a size-scaled interval after it */
	int64_t next_reap_us;
	ftl_fifo outputs;          /* ftl_swim_output */
	ftl_fifo events;           /* ftl_swim_event */
	ftl_swim_stats stats;
};

/* swim_state.c, the floor every satellite stands on: ourselves, N, events, and every change of state. */
ftl_member *ftl_swim_self(ftl_swim *s);
int ftl_swim_live_count(const ftl_swim *s); /* alive + suspect, self included: N of the formulas */
void ftl_swim_emit(ftl_swim *s, int64_t now_us, ftl_swim_event_type type, const ftl_member *m);
/* A name event (FTL_EVENT_NAME_REFUSED, _TAKEN; about our own name too): the claimant's name, address and
 * life, where the live holder is, and who refused. */
void ftl_swim_emit_name(ftl_swim *s, int64_t now_us, ftl_swim_event_type type, const char *name, const char *addr,
			uint64_t generation, const char *holder_addr, const char *from);
/* A dead event that says which path declared it and who did. */
void ftl_swim_emit_death(ftl_swim *s, int64_t now_us, const ftl_member *m, ftl_death_reason reason,
			 const char *from);

/* Every change of a member's state goes through here (keeps the counts and events). */
void ftl_swim_set_state(ftl_swim *s, ftl_member *m, ftl_member_state state, int64_t now_us);
/* The same without an event, for a new generation (the caller emits JOIN instead). */
void ftl_swim_set_state_quiet(ftl_swim *s, ftl_member *m, ftl_member_state state, int64_t now_us);
/* Adds a member, alive; NULL (the reason in the diag) on OOM, or when the table holds cfg.max_members
 * (counted: FTL_DROP_TABLE_FULL). */
ftl_member *ftl_swim_add_member(ftl_swim *s, const char *name, const char *addr, int64_t now_us);

/* swim_rumor.c: what a rumor does to our table; each queues the rumor on when it changed something. */
void ftl_swim_on_alive(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a);
void ftl_swim_on_suspect(ftl_swim *s, int64_t now_us, const ftl_msg_rumor *r);
void ftl_swim_on_dead(ftl_swim *s, int64_t now_us, const ftl_msg_rumor *r);
/* We declare m dead ourselves (its suspicion timed out, or its address refused us) and gossip it. */
void ftl_swim_declare_dead(ftl_swim *s, int64_t now_us, ftl_member *m, ftl_death_reason reason);
void ftl_swim_on_left(ftl_swim *s, int64_t now_us, const ftl_msg_rumor *r);
void ftl_swim_expire_suspicions(ftl_swim *s, int64_t now_us);
int64_t ftl_swim_next_suspicion_deadline(const ftl_swim *s);
void ftl_swim_broadcast_alive(ftl_swim *s, const ftl_member *m);
void ftl_swim_broadcast_rumor(ftl_swim *s, ftl_msg_type type, const ftl_member *m, const char *from);
void ftl_swim_fill_rumor(ftl_msg *msg, ftl_msg_type type, const ftl_member *m, const char *from);

/* swim_probe.c */
void ftl_swim_probe_tick(ftl_swim *s, int64_t now_us);
int64_t ftl_swim_probe_deadline(const ftl_swim *s);
/* Probes m now, or as soon as the probe in flight ends (a hint, a suspicion to confirm). */
void ftl_swim_probe_soon(ftl_swim *s, int64_t now_us, const ftl_member *m);
/* Another member suspects m: probe it soon ourselves, with the probability that keeps the confirmers to
 * about 2k whatever the cluster's size (swim_probe.c). */
void ftl_swim_confirm_soon(ftl_swim *s, int64_t now_us, const ftl_member *m);
void ftl_swim_on_ping(ftl_swim *s, int64_t now_us, const ftl_msg_ping *p);
void ftl_swim_on_ping_req(ftl_swim *s, int64_t now_us, const ftl_msg_ping_req *p);
void ftl_swim_on_ack(ftl_swim *s, int64_t now_us, const ftl_msg_ack *a);
void ftl_swim_on_nack(ftl_swim *s, int64_t now_us, const ftl_msg_nack *n);
void ftl_swim_relay_tick(ftl_swim *s, int64_t now_us);
/* Pings a suspect ourselves, carrying the suspicion (halfway through our own timer). */
void ftl_swim_check_suspect(ftl_swim *s, const ftl_member *m);
int64_t ftl_swim_relay_deadline(const ftl_swim *s);

/* swim_proof.c: proof of death */
/* Asks the caller to check m's address (at most one check per life at a time). */
void ftl_swim_proof_request(ftl_swim *s, int64_t now_us, const ftl_member *m);

/* swim_revive.c: an alive for a reaped life pings it; its ack (true when it was one) lets it back. */
void ftl_swim_revive_ask(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a);
bool ftl_swim_revive_ack(ftl_swim *s, int64_t now_us, const ftl_msg_ack *ack);

/* swim_name.c: one name, one live process. True when a claims the name of holder (a member we hold, or
 * ourselves) for a new life at another address while holder is alive: refused (counted, an event, the
 * claimant told), and the caller ignores a. */
bool ftl_swim_name_refuse(ftl_swim *s, int64_t now_us, const ftl_member *holder, const ftl_msg_alive *a);
/* A refusal of our name: when it names our life, we stop taking part (ftl_swim_name_taken). */
void ftl_swim_on_name_taken(ftl_swim *s, int64_t now_us, const ftl_msg_name_taken *t);

/* swim_keys.c */
void ftl_swim_on_key_op(ftl_swim *s, int64_t now_us, const ftl_msg_key_op *k);
/* A peer's key version, from a push-pull that opened: ours becomes the larger of the two. */
void ftl_swim_learn_key_version(ftl_swim *s, uint64_t version);
/* swim_key_census.c */
/* Whether op would cut live members off (a refusal, its reason in the diag). */
bool ftl_swim_key_op_cuts_off(ftl_swim *s, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE]);
/* Takes our key fingerprints from the keyring (ftl_swim_new); FTL_ERR_SYSTEM on OOM. */
ftl_err ftl_swim_take_key_fps(ftl_swim *s);
/* When the keyring changed since our fingerprints were taken (a key op, or a caller that changed it
 * directly), takes them again and announces them with a raised incarnation, as new metadata is. */
void ftl_swim_sync_key_fps(ftl_swim *s);

/* swim_send.c */
/* Sends one packet to (name, addr): primary message first, then `extra` when not NULL (the buddy
 * rule's suspicion), then as many rumors as fit. */
void ftl_swim_send(ftl_swim *s, const char *to_name, const char *to_addr, const ftl_msg *primary,
		   const ftl_msg *extra);
void ftl_swim_gossip(ftl_swim *s, int64_t now_us);
/* Up to k distinct random members other than self and `exclude` that pass `wanted`; returns count. */
int ftl_swim_random_members(ftl_swim *s, int64_t now_us, int k, const char *exclude,
			    bool (*wanted)(const ftl_swim *, const ftl_member *, int64_t),
			    const ftl_member **out);
bool ftl_swim_is_live(const ftl_swim *s, const ftl_member *m, int64_t now_us);

#endif
