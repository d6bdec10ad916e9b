/* Timing profiles of the membership protocol and the formulas derived from them.
 *
 * `lan` and `local` are memberlist's defaults (DefaultLANConfig, DefaultLocalConfig) so figures can be
 * compared with serf/consul. `train` is for a datacenter training cluster, where round trips are well
 * under a millisecond and a dead worker stalls every GPU in the job: probe ten times a second, gossip
 * every 30 ms, and let Lifeguard's confirmations cut suspicion short. A lone accuser waits the longest
 * timeout (0.9 s at N<10, 1.35 s at N=32: nine probe periods, scaled by log10 N); two independent
 * confirmations bring it down to one probe period (0.1 s; 0.15 s at N=32), so a host that vanished is
 * dead in about a quarter of a second once the members that hear the first suspicion probe it at once
 * (swim_probe.c, quick probes). A member wrongly suspected (a lost packet, a pause) is probed by about
 * four others, whose probes reach it, so one unlucky probe is not enough; memberlist's k =
 * suspicion_mult - 2 would tie the number of confirmations to the minimum, and a minimum of one probe
 * period would leave none. The timeout being short, a refutation must reach every node fast and surely:
 * it sends each rumor 8*ceil(log10(N+1)) times, twice memberlist's lambda. With lambda=4, 64 nodes at
 * 10% loss had about 100 false deaths in 10 simulated minutes (an observer missing all 8 copies of a
 * refutation: p ~ e^-7); with 8, none in any seed tried. Every value can be overridden.
 * The ready interval paces the rendezvous's repeats: readies travel over persistent TCP connections, so
 * a repeat only matters when a connection broke or a member missed a change; a few round trips of the
 * profile's network is enough (200 ms on train and local, 500 ms on lan).
 * All times are microseconds. */
#ifndef FTL_MEMBERSHIP_PROFILE_H
#define FTL_MEMBERSHIP_PROFILE_H

#include <stdint.h>

#include "base/diag.h"

/* The default member limit: four times the largest view the rendezvous forms (FTL_RDV_MAX_MEMBERS,
 * 4096), so a full view, as many hot spares again, and the dead and left members of two whole
 * generations waiting to be reaped all fit; about 2 MiB of table at ~130 bytes a member. What it stops is
 * a key holder (or a bug) gossiping names without end: 20,000 fake members used to be taken in whole. */
#define FTL_SWIM_MAX_MEMBERS_DEFAULT 16384

typedef struct ftl_swim_config {
	int64_t probe_interval_us;       /* one probe per period (scaled by local health) */
	int64_t probe_timeout_us;        /* wait for a direct ack before asking others (scaled) */
	int64_t gossip_interval_us;      /* piggyback rumors to gossip_nodes random members */
	int gossip_nodes;
	int indirect_checks;             /* k members asked to ping-req a silent target */
	int retransmit_mult;             /* lambda: each rumor is sent lambda*ceil(log10(N+1)) times */
	int suspicion_mult;              /* min suspicion = mult * max(1, log10 N) * probe_interval */
	int suspicion_max_mult;          /* max suspicion = this * min suspicion */
	int suspicion_confirmations;     /* k: the independent suspicions that take the timeout from max down to
					  * min; -1 for memberlist's rule (suspicion_mult - 2) */
	int awareness_max;               /* local health multiplier ranges over 1..awareness_max */
	int64_t push_pull_interval_us;   /* periodic full-state exchange (anti-entropy); 0 = off */
	int64_t gossip_to_dead_us;       /* keep gossiping to dead/left members this long */
	int64_t reap_after_us;           /* forget dead/left members after this long */
	int max_members;                 /* the member table's limit, this node included: a new name beyond it
					  * is refused and counted (FTL_DROP_TABLE_FULL); known members still
					  * change. Every profile: FTL_SWIM_MAX_MEMBERS_DEFAULT */
	/* The rendezvous that runs on this membership (rendezvous/, checked there): */
	int64_t ready_interval_us;       /* resend ready (and re-poll, retry a proposal) while not in agreement */
} ftl_swim_config;

typedef enum ftl_swim_profile {
	FTL_PROFILE_LAN,
	FTL_PROFILE_LOCAL,
	FTL_PROFILE_TRAIN,
	FTL_PROFILE_MAX
} ftl_swim_profile;

extern const char *const ftl_swim_profile_strs[FTL_PROFILE_MAX];

/* Fills *cfg with a profile's values. */
void ftl_swim_config_profile(ftl_swim_config *cfg, ftl_swim_profile profile);
/* Looks a profile up by name; FTL_ERR_INVALID if unknown, the message naming the known ones (the caller
 * puts the setting in front: "FTL_PROFILE=" + "x: expected ..."). */
ftl_err ftl_swim_profile_from_name(const char *name, ftl_swim_profile *profile);
/* The fields of ftl_swim_config that ftl_swim_config_check can refuse, so that a caller tells which one by its
 * id, not by reading the message (the agent names the FTL_* variable behind each). */
typedef enum ftl_swim_field {
	FTL_SWIM_FIELD_NONE, /* the config is usable */
	FTL_SWIM_FIELD_PROBE_INTERVAL,
	FTL_SWIM_FIELD_PROBE_TIMEOUT,
	FTL_SWIM_FIELD_GOSSIP_INTERVAL,
	FTL_SWIM_FIELD_GOSSIP_NODES,
	FTL_SWIM_FIELD_INDIRECT_CHECKS,
	FTL_SWIM_FIELD_RETRANSMIT_MULT,
	FTL_SWIM_FIELD_SUSPICION_MULT,
	FTL_SWIM_FIELD_SUSPICION_MAX_MULT,
	FTL_SWIM_FIELD_SUSPICION_CONFIRMATIONS,
	FTL_SWIM_FIELD_AWARENESS_MAX,
	FTL_SWIM_FIELD_PUSH_PULL_INTERVAL,
	FTL_SWIM_FIELD_GOSSIP_TO_DEAD,
	FTL_SWIM_FIELD_REAP_AFTER,
	FTL_SWIM_FIELD_MAX_MEMBERS,
	FTL_SWIM_FIELD_MAX
} ftl_swim_field;

/* FTL_SWIM_FIELD_NONE if cfg is usable; else the first field at fault, with *why (a static message) naming
 * it and what is expected. */
ftl_swim_field ftl_swim_config_check(const ftl_swim_config *cfg, const char **why);

/* How many times a rumor is sent in a cluster of n: retransmit_mult * ceil(log10(n + 1)). */
int ftl_swim_retransmit_limit(const ftl_swim_config *cfg, int n);
/* Suspicion timeout bounds for a cluster of n (Lifeguard starts at max, shrinks toward min). */
int64_t ftl_swim_suspicion_min_us(const ftl_swim_config *cfg, int n);
int64_t ftl_swim_suspicion_max_us(const ftl_swim_config *cfg, int n);
/* Confirmations that take the suspicion timeout down to min. memberlist's rule (suspicion_confirmations
 * -1): suspicion_mult - 2, and 0 (min at once) in clusters too small to have that many independent
 * witnesses. A k set outright is kept whatever n: a small cluster, which cannot confirm that often, waits
 * nearer max instead of dropping to min on one accuser's word. */
int ftl_swim_suspicion_confirmations(const ftl_swim_config *cfg, int n);

/* The push-pull interval for a cluster of n: full-state exchange costs O(n) per node, so beyond 32
 * members the interval grows by one base interval per doubling (memberlist's pushPullScale). */
int64_t ftl_swim_push_pull_interval_us(const ftl_swim_config *cfg, int n);

/* The bound on crash detection that the tests hold the protocol to: from the crash until every
 * survivor marks the node dead, in a cluster of n with healthy survivors. It adds
 *  - first probe: some survivor probes the node within FTL_FIRST_PROBE_PERIODS periods (each of the
 *    n-1 survivors walks a fresh shuffle, so no probe in m periods has probability ~e^-m: 4.5e-5 at 10);
 *  - that probe failing: one probe period;
 *  - the suspicion timeout at its longest (no confirmation at all);
 *  - the dead rumor reaching everyone: one gossip interval per transmission of the retransmit limit,
 *    after which gossip stops carrying it.
 * Confirmations and independent suspicions only make detection faster. */
#define FTL_FIRST_PROBE_PERIODS 10
int64_t ftl_swim_detection_bound_us(const ftl_swim_config *cfg, int n);

/* The bound on crash detection by proof of death (swim.h), where the crashed node's address refuses: the
 * same first probe, its direct timeout, the check (given one probe timeout), and the dead rumor reaching
 * everyone. No suspicion timeout. */
int64_t ftl_swim_refusal_bound_us(const ftl_swim_config *cfg, int n);
/* The same when a hint starts the check at the crash (a comm connection reset): the check and the
 * rumor's spread only. */
int64_t ftl_swim_hinted_refusal_bound_us(const ftl_swim_config *cfg, int n);

#endif
