/* The words of the SWIM core's interface (swim.h): what a caller configures it with, takes out of it
 * (datagrams, push-pulls and checks to carry out; membership events), counts, and hands back (how a check
 * went). Apart from the core's functions so that a shell that drives the core through another module (the
 * agent through node/node.h) holds these values without seeing the core itself. */
#ifndef FTL_MEMBERSHIP_SWIM_TYPES_H
#define FTL_MEMBERSHIP_SWIM_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "key_census.h"
#include "keyring.h"
#include "message.h"
#include "profile.h"
#include "wire.h"

typedef struct ftl_swim_options {
	const char *name;             /* unique in the cluster, 1..FTL_NAME_MAX-1 bytes */
	uint64_t generation;          /* larger on every restart (the agent uses the start time) */
	const char *addr;             /* advertised "host:port" others send to */
	const uint8_t *meta;          /* optional node metadata */
	uint16_t meta_len;
	ftl_swim_config config;
	ftl_keyring *keyring;         /* borrowed, must outlive the instance */
	/* Whether a member's advertised address is one the caller can send to; alive rumors (and push-pull
	 * entries) with any other are dropped and counted (FTL_DROP_BAD_ADDR). NULL accepts any. */
	bool (*is_addr_valid)(const char *addr);
	uint64_t seed;                /* seeds the protocol's random choices */
} ftl_swim_options;

/* What the caller must do with an output. */
typedef enum ftl_swim_output_kind {
	FTL_OUTPUT_PACKET,     /* seal data[0..len) (plaintext) and send it as one UDP datagram to to_addr */
	FTL_OUTPUT_PUSH_PULL,  /* open a TCP push-pull with to_addr (ftl_swim_push_pull_encode/merge) */
	FTL_OUTPUT_CHECK,      /* connect to to_addr (TCP, the gossip port) within timeout_us, then report how it
				* went with ftl_swim_check_done(to_name, generation, to_addr) */
	FTL_OUTPUT_KIND_MAX
} ftl_swim_output_kind;

typedef struct ftl_swim_output {
	ftl_swim_output_kind kind;
	bool is_join;                  /* push-pull: part of joining */
	char to_addr[FTL_ADDR_MAX];
	char to_name[FTL_NAME_MAX];    /* empty when only the address is known (a seed) */
	uint64_t generation;           /* check: the life of to_name being checked */
	int64_t timeout_us;            /* check: give up (FTL_CHECK_NO_ANSWER) after this long */
	size_t len;
	uint8_t data[FTL_UDP_PACKET_MAX];
} ftl_swim_output;

typedef enum ftl_swim_event_type {
	FTL_EVENT_JOIN,     /* a new member, or a new generation of a known name */
	FTL_EVENT_UPDATE,   /* address or metadata changed */
	FTL_EVENT_SUSPECT,
	FTL_EVENT_ALIVE,    /* back from suspect or dead (refuted) */
	FTL_EVENT_DEAD,
	FTL_EVENT_LEFT,
	FTL_EVENT_REAP,     /* forgotten after reap_after */
	FTL_EVENT_NAME_REFUSED, /* a second process claimed a live member's name from another address: refused
				 * (name, addr, generation: the claimant; holder_addr: the live member; swim_name.c) */
	FTL_EVENT_NAME_TAKEN,   /* our own name is held by a live member at holder_addr (from refused us): this
				 * node has stopped taking part (ftl_swim_name_taken) */
	FTL_EVENT_TYPE_MAX
} ftl_swim_event_type;

extern const char *const ftl_swim_event_type_strs[FTL_EVENT_TYPE_MAX];

/* Which path declared a death (FTL_EVENT_DEAD only). The reason does not travel on the wire: a node
 * that learns a death from gossip reports FTL_DEATH_GOSSIP and who declared it. */
typedef enum ftl_death_reason {
	FTL_DEATH_NONE,        /* not a death */
	FTL_DEATH_SUSPICION,   /* we suspected it and the suspicion timed out */
	FTL_DEATH_REFUSED,     /* its own address refused a connection, for the life we knew */
	FTL_DEATH_GOSSIP,      /* a dead rumor from `from` */
	FTL_DEATH_WITNESSED,   /* a process on our host saw its life lock released by the kernel (agent/witness.h) */
	FTL_DEATH_REASON_MAX
} ftl_death_reason;

/* "suspicion timed out", "refused by its own address", "gossip", "witnessed on its host" ("" for none). */
extern const char *const ftl_death_reason_strs[FTL_DEATH_REASON_MAX];

typedef struct ftl_swim_event {
	ftl_swim_event_type type;
	ftl_death_reason reason;       /* FTL_EVENT_DEAD: which path declared it */
	char from[FTL_NAME_MAX];       /* FTL_EVENT_DEAD: who declared it (us, or the rumor's origin); name events:
					* who refused */
	char holder_addr[FTL_ADDR_MAX]; /* name events: where the live member that holds the name is */
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uint64_t generation;
	uint64_t incarnation;
	int64_t at_us;
} ftl_swim_event;

/* Why a received packet (or part of one) was dropped. */
typedef enum ftl_swim_drop {
	FTL_DROP_KEYRING,       /* a datagram that did not open (counted by the channel; the keyring's stats say why) */
	FTL_DROP_MALFORMED,     /* opened but did not decode */
	FTL_DROP_WRONG_TARGET,  /* a ping meant for another node (stale address) */
	FTL_DROP_UNKNOWN_SEQ,   /* an ack or nack for no probe in flight (late) */
	FTL_DROP_PUSH_PULL,     /* a push-pull frame that failed to open (counted by the channel) or decode */
	FTL_DROP_BAD_ADDR,      /* an alive whose address the caller cannot use (999.1.1.1:99999) */
	FTL_DROP_TABLE_FULL,    /* an alive (or push-pull entry) of a new name while the member table holds
				 * config.max_members: refused, the members we know are kept */
	FTL_DROP_MAX
} ftl_swim_drop;

extern const char *const ftl_swim_drop_strs[FTL_DROP_MAX];

typedef struct ftl_swim_stats {
	uint64_t sent[FTL_MSG_TYPE_MAX];      /* primary messages by type */
	uint64_t received[FTL_MSG_TYPE_MAX];  /* every decoded message by type, piggybacked included */
	uint64_t piggybacked;                 /* rumors added to outgoing packets */
	uint64_t dropped[FTL_DROP_MAX];
	uint64_t packets_sent, bytes_sent;
	uint64_t packets_received, bytes_received;
	uint64_t probes, probes_failed;
	uint64_t probe_acks, probe_rtt_sum_us; /* direct acks of our probes and their round trips, summed */
	uint64_t suspicions;                  /* members that became suspect here (our probes or others' rumors) */
	uint64_t suspicions_refuted;          /* ... and came back alive instead of dying */
	uint64_t refutations;                 /* times we raised our incarnation */
	uint64_t push_pulls;                  /* merges done */
	uint64_t events_lost;                 /* events dropped because the caller did not drain them */
	uint64_t key_ops_applied;             /* keyring changes applied (ours and the cluster's) */
	uint64_t key_ops_failed;              /* keyring changes that could not apply here */
	uint64_t alive_of_reaped;             /* alive rumors or push-pull entries for a reaped life: not
					       * believed until that life acks a ping of ours (swim_revive.c) */
	uint64_t revivals;                    /* ... that did: back after being reaped (a long partition) */
	uint64_t key_ops_stale;               /* ... older than the cluster's key version (replays), or heard
					       * before this node learned the version: never applied */
	uint64_t checks;                      /* proof-of-death checks asked of the caller */
	uint64_t checks_refused;              /* ... that ended in a refusal (a death declared at once) */
	uint64_t witnessed;                   /* deaths a witness on the member's host reported to us */
	uint64_t deaths_declared[FTL_DEATH_REASON_MAX]; /* deaths we declared or accepted, by path */
	uint64_t deaths_proven_later;         /* dead members whose proof came after the death (a rumor, a push-pull) */
	uint64_t names_refused;               /* alive messages of a new life for a live member's name from another
					       * address: refused, the live member kept (swim_name.c) */
} ftl_swim_stats;

/* How a check (FTL_OUTPUT_CHECK) went. Only a refusal means anything: an accepted connection proves
 * nothing about the process (a paused one's kernel accepts too), and silence or an unreachable host
 * is what suspicion is for. */
typedef enum ftl_swim_check_result {
	FTL_CHECK_ACCEPTED,   /* the connection was accepted */
	FTL_CHECK_REFUSED,    /* the address itself refused (ECONNREFUSED): no process owns the port */
	FTL_CHECK_NO_ANSWER,  /* timed out, unreachable, or any other error */
	FTL_CHECK_RESULT_MAX
} ftl_swim_check_result;

extern const char *const ftl_swim_check_result_strs[FTL_CHECK_RESULT_MAX];

#endif
