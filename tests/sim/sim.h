/* The deterministic simulator: many ftl_swim instances on one virtual clock and a simulated network.
 *
 * Tarantool's SWIM tests do the same with a fake event loop; ours needs no fakes because the protocol
 * core is sans-I/O. One seeded PRNG drives the network (loss, jitter) and seeds every node, events are
 * ordered by (time, sequence), so the same seed gives the same run, packet for packet. The seed is
 * printed; FTL_SIM_SEED replays a run.
 *
 * Network model: every datagram is delayed by delay + uniform jitter (plus a per-link delay), dropped
 * with the uniform loss or a per-link loss, and dropped when the sender's group may not reach the
 * receiver's (partitions, one-way or two-way). Push-pull is reliable (TCP) but cut by partitions. A
 * proof-of-death check (a TCP connect) is accepted by a running or paused node, refused by a crashed
 * node's address, and unanswered across a partition (the core's timeout). Faults:
 * crash (the instance is gone), pause (it stops processing: datagrams queue as in a socket buffer, up to
 * a limit, and are handled on resume), slow (every datagram to it is handled late), restart (same name,
 * next generation, joins through a live node), graceful leave. */
#ifndef FTL_TESTS_SIM_H
#define FTL_TESTS_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "swim.h"

#define FTL_SIM_MAX_GROUPS 8
#define FTL_SIM_PAUSE_BACKLOG 256 /* datagrams a paused node holds, like a socket buffer */

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
	bool is_cold_start;       /* nodes start alone and join through node 0, instead of converged */
	bool is_quiet;            /* do not print the seed */
	/* The agent's seed rule, modelled: every rejoin_interval each node that sees fewer live members than
	 * the "DNS answer" (every running node, as a headless Service returns every pod) push-pulls with one
	 * it does not see alive. 0 = off. This is what heals a partition once gossip has given up. */
	int64_t rejoin_interval_us;
} ftl_sim_options;

/* Fills defaults: the given profile, 200 us delay, 100 us jitter, no loss, sealed, converged. */
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
ftl_swim *ftl_sim_node(ftl_sim *sim, int i);          /* NULL when crashed */
const char *ftl_sim_name(const ftl_sim *sim, int i);
bool ftl_sim_is_running(const ftl_sim *sim, int i);   /* not crashed (a paused node is running) */
void ftl_sim_crash(ftl_sim *sim, int i);
void ftl_sim_pause(ftl_sim *sim, int i);
void ftl_sim_resume(ftl_sim *sim, int i);
void ftl_sim_set_slow(ftl_sim *sim, int i, int64_t extra_delay_us);
void ftl_sim_leave(ftl_sim *sim, int i);
/* What a comm connection reset does in the agent: observer hints subject to its membership. */
void ftl_sim_hint(ftl_sim *sim, int observer, int subject);
/* Restarts a crashed (or running) node: same name, next generation, joins through a live node. */
void ftl_sim_restart(ftl_sim *sim, int i);
/* Adds a node that joins through a live node; returns its index or -1 when at capacity. */
int ftl_sim_add_node(ftl_sim *sim);

/* Network. */
void ftl_sim_set_loss(ftl_sim *sim, double loss);
void ftl_sim_set_link(ftl_sim *sim, int from, int to, double loss, int64_t extra_delay_us);
void ftl_sim_set_group(ftl_sim *sim, int i, int group);
/* Datagrams and push-pulls from group a to group b are dropped (one way) while blocked. */
void ftl_sim_block(ftl_sim *sim, int a, int b, bool is_blocked);
void ftl_sim_heal(ftl_sim *sim); /* unblock every pair */

/* Views. */
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
	uint64_t events_run;
} ftl_sim_stats;
const ftl_sim_stats *ftl_sim_get_stats(const ftl_sim *sim);

#endif
