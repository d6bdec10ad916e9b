/* The rendezvous simulator: many ftl_rdv instances on one virtual clock, a simulated network, and a
 * membership oracle in place of SWIM.
 *
 * The oracle is driven directly: a node sees a peer alive when the peer is up, has not left, and the two
 * can reach each other both ways; each change reaches each observer after a delay (join_us for a peer
 * that appears, detect_us plus a per-observer uniform jitter for one that is lost, join_us for a graceful
 * leave), and the observer then gets ftl_rdv_set_members. What the observer sees when the delay expires is
 * the truth at that moment, so a flap shorter than the detection delay goes unseen, as with SWIM.
 *
 * Network: every message is delayed by delay + uniform jitter, lost with probability loss, and dropped
 * when the groups of sender and receiver are blocked (partitions, one-way or two-way) or the receiver is
 * down. One seeded PRNG drives loss, jitter and detection jitter; events are ordered by (time, sequence),
 * so the same seed replays the same run. The seed is printed; FTL_SIM_SEED replays a run.
 *
 * Every view any node takes (committed or adopted) is logged, and rdv_sim_conflicts() checks the safety
 * property: all nodes that hold a view of epoch e hold the same view. */
#ifndef FTL_TESTS_RDV_SIM_H
#define FTL_TESTS_RDV_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "rendezvous.h"

#define RDV_SIM_MAX_NODES 64
#define RDV_SIM_MAX_GROUPS 8

typedef struct rdv_sim rdv_sim;

typedef struct rdv_sim_options {
	int n;                      /* nodes up at start: names w00.., generations in that order */
	ftl_rdv_config config;      /* for every node */
	uint64_t seed;              /* 0 = from FTL_SIM_SEED or the clock (printed either way) */
	int64_t delay_us;           /* one-way message delay */
	int64_t jitter_us;          /* plus uniform [0, jitter) */
	double loss;                /* uniform message loss */
	int64_t join_us;            /* before observers see a new (or reachable again, or left) peer */
	int64_t detect_us;          /* before observers see a lost peer (SWIM's detection time) */
	int64_t detect_jitter_us;   /* plus uniform [0, jitter) per observer */
	bool is_with_blob;          /* each coordinator's blob is "<name>@<epoch>" */
	bool is_quiet;              /* do not print the seed */
} rdv_sim_options;

/* One view taken by one node. */
typedef struct rdv_sim_record {
	int64_t at_us;
	int node;
	uint64_t epoch;
	uint64_t lineage;
	uint64_t digest;            /* of the whole view (members, epoch, lineage, blob) */
	uint32_t n;
	int rank;                   /* the node's rank in it, -1 when it is not a member */
	char rank0[FTL_NAME_MAX];
} rdv_sim_record;

/* Defaults: 1 ms delay, 0.5 ms jitter, no loss, join 50 ms, detection 500 ms + 100 ms jitter;
 * min 1, max n+16 workers, settle 1 s, ready interval 100 ms. */
void rdv_sim_options_default(rdv_sim_options *o, int n);

rdv_sim *rdv_sim_new(const rdv_sim_options *o);
void rdv_sim_delete(rdv_sim *sim);
uint64_t rdv_sim_seed(const rdv_sim *sim);
int64_t rdv_sim_now(const rdv_sim *sim);
void rdv_sim_run_until(rdv_sim *sim, int64_t t_us);
void rdv_sim_run_for(rdv_sim *sim, int64_t dt_us);

/* Nodes. */
int rdv_sim_size(const rdv_sim *sim);
ftl_rdv *rdv_sim_node(rdv_sim *sim, int i);          /* NULL when down */
const char *rdv_sim_name(const rdv_sim *sim, int i);
bool rdv_sim_is_up(const rdv_sim *sim, int i);
/* Starts a new node (next generation) and returns its index, or -1 when full. */
int rdv_sim_add_node(rdv_sim *sim);
void rdv_sim_crash(rdv_sim *sim, int i);
/* After a test called into node i's ftl_rdv directly (at rdv_sim_now): sends what it queued, logs its view. */
void rdv_sim_drain(rdv_sim *sim, int i);
/* Crashes node i right after it has sent its k-th message of the given type (an rdv_msg_type), so that
 * it dies in the middle of a broadcast: the rest of that batch is never sent. */
void rdv_sim_crash_after_sends(rdv_sim *sim, int i, int msg_type, int k);
/* Brings a crashed node back with the same name and the next generation. */
void rdv_sim_restart(rdv_sim *sim, int i);
/* Graceful leave: the node stops, and observers see it as left (not counted against the quorum). */
void rdv_sim_leave(rdv_sim *sim, int i);

/* Network. */
void rdv_sim_set_group(rdv_sim *sim, int i, int group);
void rdv_sim_block(rdv_sim *sim, int a, int b, bool is_blocked); /* one way: group a -> group b */
void rdv_sim_heal(rdv_sim *sim);                              /* every group 0, nothing blocked */
void rdv_sim_set_loss(rdv_sim *sim, double loss);

/* Observing. */
const rdv_sim_record *rdv_sim_records(const rdv_sim *sim, int *n);
/* Epochs held by two different views of one lineage somewhere (each printed); 0 is the safety property.
 * Clusters started apart (first views made by nodes that could not see each other) are separate lineages;
 * rdv_sim_lineages() counts them. */
int rdv_sim_conflicts(const rdv_sim *sim);
int rdv_sim_lineages(const rdv_sim *sim);
/* Distinct epochs first taken at or after t. */
int rdv_sim_epochs_since(const rdv_sim *sim, int64_t t_us);
/* When a view of this epoch was first taken by anyone, and when the last up member of it took it
 * (-1 when not yet). */
int64_t rdv_sim_first_taken(const rdv_sim *sim, uint64_t epoch);
int64_t rdv_sim_all_members_took(rdv_sim *sim, uint64_t epoch);
/* When observer last had its membership snapshot changed (for measuring commit latency). */
int64_t rdv_sim_last_membership_change(const rdv_sim *sim, int observer);
/* True when every up node holds the same view, every member of that view is up (same generation), and
 * every up node's phase is training or spare. */
bool rdv_sim_converged(rdv_sim *sim);
/* Runs in steps until rdv_sim_converged or limit passes; returns the time it took, or -1. */
int64_t rdv_sim_run_until_converged(rdv_sim *sim, int64_t limit_us);
/* Messages sent, and lost to loss or partitions. */
uint64_t rdv_sim_sent(const rdv_sim *sim);
uint64_t rdv_sim_lost(const rdv_sim *sim);

#endif
