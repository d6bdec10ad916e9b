/* The deterministic simulator: many ftl_node instances (node/node.h: membership joined to the rendezvous)
 * on one virtual clock and a simulated network. It is the only simulator: the membership tests (tests/sim)
 * and the rendezvous tests (tests/rendezvous) run on it, with the real member feed, abort and seed rules.
 *
 * Tarantool's SWIM tests do the same with a fake event loop; ours needs no fakes because the node is
 * sans-I/O. One seeded PRNG drives the network (loss, jitter) and seeds every node, events are ordered by
 * (time, sequence), so the same seed gives the same run, packet for packet. The seed is printed;
 * FTL_SIM_SEED replays a run.
 *
 * Network model: every datagram is delayed by delay + uniform jitter (plus a per-link delay), dropped
 * with the uniform loss or a per-link loss, and dropped when the sender's group may not reach the
 * receiver's (partitions, one-way or two-way). Push-pulls and rendezvous frames travel over TCP: never
 * lost, delayed like datagrams, cut by a partition in either direction. A proof-of-death check (a TCP
 * connect) is accepted by a running or paused node, refused by a crashed node's address, and unanswered
 * across a partition (the core's timeout). Faults: crash (the instance is gone), pause (it stops
 * processing: datagrams and frames queue as in socket buffers, up to a limit, and are handled on resume),
 * slow (everything to it is handled late), restart (same name, next generation), graceful leave.
 *
 * Seeds (the node's own seed rule, node_seeds.c): every node resolves its seeds when it starts and then
 * every reseed_interval. By default the "DNS answer" is what a Kubernetes headless Service returns: the
 * running nodes (up to FTL_SIM_DNS_ANSWER of them, a fresh random sample each time); fixed seeds (the
 * addresses of given nodes, running or not) model a static seed list. Cold-started nodes join only through
 * that answer.
 *
 * Training: with is_training every node takes part in views (the rendezvous), with its data address in its
 * metadata; every view any node takes is recorded (sim_views.c) for the rendezvous' promises. */
#ifndef FTL_TESTS_SIM_H
#define FTL_TESTS_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "membership/swim.h"    /* the sim reaches into each node's parts (ftl_sim_swim, ftl_sim_rdv) */
#include "node/node.h"
#include "rendezvous/rendezvous.h"

#define FTL_SIM_MAX_GROUPS 8
#define FTL_SIM_PAUSE_BACKLOG 256 /* datagrams and frames a paused node holds, like socket buffers */
#define FTL_SIM_DNS_ANSWER 32     /* addresses in one DNS answer, as the agent reads them */
#define FTL_SIM_MAX_SEEDS 8

typedef struct ftl_sim ftl_sim;

typedef struct ftl_sim_options {
	int n;                    /* nodes at start */
	int capacity;             /* most nodes ever (joins and restarts reuse or add slots); 0 = n */
	ftl_swim_config config;   /* protocol settings for every node */
	uint64_t seed;            /* 0 = from FTL_SIM_SEED or the clock (printed either way) */
	int64_t delay_us;         /* one-way base delay */
	int64_t jitter_us;        /* plus uniform [0, jitter) */
	double loss;              /* uniform datagram loss */
	bool is_insecure;         /* plaintext instead of sealed packets (faster at scale) */
	bool is_cold_start;       /* nodes start alone and join through their seeds, instead of converged */
	bool is_quiet;            /* do not print the seed */
	/* Every node re-resolves its seeds this often and applies the seed rule; 0 = only when it starts.
	 * This is what heals a partition once gossip has given up. */
	int64_t reseed_interval_us;
	int seeds[FTL_SIM_MAX_SEEDS]; /* fixed seeds: these nodes' addresses, running or not */
	int n_seeds;                  /* 0: the headless-Service answer (running nodes) */
	bool is_training;         /* every node takes part in views */
	ftl_rdv_config rdv;       /* ... with these settings */
	bool is_with_blob;        /* each coordinator's blob is "<name>@<epoch>" */
	uint32_t replica_size;    /* > 0: node i is index i % size of replica "r<i / size>" (rdv_replicas.h) */
} ftl_sim_options;

/* Fills defaults: the given profile, 200 us delay, 100 us jitter, no loss, sealed, converged, no training. */
void ftl_sim_options_default(ftl_sim_options *o, int n, ftl_swim_profile profile);

typedef void (*ftl_sim_event_cb)(void *ctx, ftl_sim *sim, int observer, const ftl_swim_event *ev);

ftl_sim *ftl_sim_new(const ftl_sim_options *o);
void ftl_sim_delete(ftl_sim *sim);
uint64_t ftl_sim_seed(const ftl_sim *sim);
int64_t ftl_sim_now(const ftl_sim *sim);
/* Runs every event up to and including time t. */
void ftl_sim_run_until(ftl_sim *sim, int64_t t_us);
void ftl_sim_run_for(ftl_sim *sim, int64_t dt_us);
/* Called for every membership event of every node, in order. */
void ftl_sim_on_event(ftl_sim *sim, ftl_sim_event_cb cb, void *ctx);

/* Nodes. */
int ftl_sim_size(const ftl_sim *sim);                 /* slots in use */
int ftl_sim_capacity(const ftl_sim *sim);             /* most slots ever */
ftl_node *ftl_sim_get_node(ftl_sim *sim, int i);      /* NULL when crashed */
ftl_swim *ftl_sim_node(ftl_sim *sim, int i);          /* its membership; NULL when crashed */
const ftl_rdv *ftl_sim_rdv(ftl_sim *sim, int i);      /* its rendezvous; NULL when crashed or not training */
const char *ftl_sim_name(const ftl_sim *sim, int i);
bool ftl_sim_is_running(const ftl_sim *sim, int i);   /* not crashed (a paused node is running) */
void ftl_sim_crash(ftl_sim *sim, int i);
void ftl_sim_pause(ftl_sim *sim, int i);
void ftl_sim_resume(ftl_sim *sim, int i);
void ftl_sim_set_slow(ftl_sim *sim, int i, int64_t extra_delay_us);
void ftl_sim_leave(ftl_sim *sim, int i);
/* What a comm connection reset does in the agent: observer reports subject to its node. */
void ftl_sim_hint(ftl_sim *sim, int observer, int subject);
/* (Re)starts node i: same name, next generation; it resolves its seeds at once. Also starts a node that
 * was crashed before it ever ran (a seed that has not started yet). */
void ftl_sim_restart(ftl_sim *sim, int i);
/* Adds a node that joins through its seeds; returns its index or -1 when at capacity. */
int ftl_sim_add_node(ftl_sim *sim);
/* The same with a name of our choosing (a second process given another's name, at an address of its own);
 * NULL: the slot's own. Rendezvous frames sent to a name held twice reach the first node of that name. */
int ftl_sim_add_node_named(ftl_sim *sim, const char *name);
/* Crashes node i right after it has sent its k-th rendezvous frame of the given type (an rdv_msg_type), so
 * that it dies in the middle of a broadcast: the rest of that batch is never sent. */
void ftl_sim_crash_after_sends(ftl_sim *sim, int i, int msg_type, int k);
/* User requests on node i (ftl_node_request_rebuild, ftl_node_waive_quorum, ftl_node_request_max). */
void ftl_sim_request_rebuild(ftl_sim *sim, int i, uint64_t epoch);
ftl_err ftl_sim_waive_quorum(ftl_sim *sim, int i);
ftl_err ftl_sim_request_max(ftl_sim *sim, int i, uint32_t max_workers); /* ftl_node_request_max */
/* ftl_node_request_bench on node i, of node `benched`'s present life */
ftl_err ftl_sim_request_bench(ftl_sim *sim, int i, int benched);

/* Network. */
void ftl_sim_set_loss(ftl_sim *sim, double loss);
void ftl_sim_set_link(ftl_sim *sim, int from, int to, double loss, int64_t extra_delay_us);
void ftl_sim_set_group(ftl_sim *sim, int i, int group);
/* Datagrams, push-pulls and frames from group a to group b are dropped (one way) while blocked. */
void ftl_sim_block(ftl_sim *sim, int a, int b, bool is_blocked);
void ftl_sim_heal(ftl_sim *sim); /* unblock every pair */

/* Membership views. */
/* The state observer holds for subject's current life; false if it does not know it (or an older life). */
bool ftl_sim_view(ftl_sim *sim, int observer, int subject, ftl_member_state *state);
/* How many running nodes other than subject see subject in this state (current life). */
int ftl_sim_count_seeing(ftl_sim *sim, int subject, ftl_member_state state);
/* How many running nodes (paused included) there are, other than `except` (-1 for none). */
int ftl_sim_running_count(const ftl_sim *sim, int except);

typedef struct ftl_sim_stats {
	uint64_t delivered, lost, blocked, to_dead;
	uint64_t push_pulls;
	uint64_t refusals;        /* proof-of-death checks answered with a refusal (a crashed node's address) */
	uint64_t frames;          /* rendezvous frames delivered */
	uint64_t aborts;          /* node events that carried the abort verdict */
	uint64_t seed_joins;      /* joins the seed rule queued */
	uint64_t events_run;
} ftl_sim_stats;
const ftl_sim_stats *ftl_sim_get_stats(const ftl_sim *sim);

/* Rendezvous views (sim_views.c). One view taken by one node: */
typedef struct ftl_sim_record {
	int64_t at_us;
	int node;
	uint64_t epoch;
	uint64_t lineage;
	uint64_t digest;            /* of the whole view (members, epoch, lineage, blob) */
	uint32_t n;
	int rank;                   /* the node's rank in it, -1 when it is not a member */
	char rank0[FTL_NAME_MAX];
} ftl_sim_record;

const ftl_sim_record *ftl_sim_records(const ftl_sim *sim, int *n);
/* Epochs held by two different views of one lineage somewhere (each printed); 0 is the safety property.
 * Clusters started apart (first views made by nodes that could not see each other) are separate lineages;
 * ftl_sim_lineages() counts them. */
int ftl_sim_conflicts(const ftl_sim *sim);
int ftl_sim_lineages(const ftl_sim *sim);
/* Distinct epochs first taken at or after t. */
int ftl_sim_epochs_since(const ftl_sim *sim, int64_t t_us);
/* When a view of this epoch was first taken by anyone, and when the last running member of it took it
 * (-1 when not yet). */
int64_t ftl_sim_first_taken(const ftl_sim *sim, uint64_t epoch);
int64_t ftl_sim_all_members_took(ftl_sim *sim, uint64_t epoch);
/* When observer last had a membership change that its rendezvous sees (a join, death, leave: not a
 * suspicion), for measuring commit latency. */
int64_t ftl_sim_last_membership_change(const ftl_sim *sim, int observer);
/* True when every running node holds the same view, every member of that view runs (same generation),
 * and every running node's phase is training or spare. */
bool ftl_sim_converged(ftl_sim *sim);
/* Runs in steps until ftl_sim_converged or limit passes; returns the time it took, or -1. */
int64_t ftl_sim_run_until_converged(ftl_sim *sim, int64_t limit_us);

#endif
