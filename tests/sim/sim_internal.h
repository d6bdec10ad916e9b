/* The inside of the simulator, shared by sim.c (nodes, network, the event loop) and sim_views.c (the record
 * of rendezvous views and the checks on it). */
#ifndef FTL_TESTS_SIM_INTERNAL_H
#define FTL_TESTS_SIM_INTERNAL_H

#include "base/heap.h"
#include "membership/rng.h"
#include "sim.h"

typedef enum ev_kind { EV_TICK, EV_DATAGRAM, EV_FRAME, EV_PP_REQUEST, EV_PP_REPLY, EV_SEEDS, EV_CHECK_DONE } ev_kind;

typedef struct sim_event {
	int64_t at;
	uint64_t seq;       /* ties broken by insertion order: determinism */
	ev_kind kind;
	int node;           /* who handles it */
	int from;           /* who sent it (push-pull) */
	uint32_t life;      /* the node's life when scheduled (stale after a crash or restart) */
	bool is_join;
	size_t len;
	uint8_t *data;      /* owned */
} sim_event;

typedef struct link_override {
	int from, to;
	double loss;
	int64_t extra_delay_us;
} link_override;

typedef struct sim_node {
	ftl_node *node;      /* NULL when crashed */
	ftl_keyring *keyring;
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	char data_addr[FTL_ADDR_MAX];
	uint64_t generation;
	uint32_t life;       /* bumped by crash and restart */
	int group;
	bool is_paused;
	int64_t slow_us;
	int64_t tick_at;     /* earliest tick scheduled; INT64_MAX when none */
	sim_event *backlog;  /* datagrams and frames held while paused */
	int n_backlog;
	int crash_type;      /* rdv_msg_type whose sends are counted for a crash mid-broadcast, -1 for none */
	int crash_after;     /* sends of that type left before the crash */
	int64_t membership_changed_us; /* the last membership event its rendezvous sees */
	uint64_t view_digest;          /* of the view it holds (0: none) */
} sim_node;

struct ftl_sim {
	ftl_sim_options opt;
	ftl_rng net_rng;
	ftl_rng dns_rng;          /* the DNS answers' samples: apart, so seeds do not shift the network's draws */
	int64_t now;
	uint64_t next_seq;
	uint64_t next_generation; /* each start or restart takes the next: join order is start order */
	ftl_heap events;          /* sim_event, earliest first */
	sim_node *nodes;
	int n_nodes;
	bool blocked[FTL_SIM_MAX_GROUPS][FTL_SIM_MAX_GROUPS];
	link_override *links;
	int n_links;
	ftl_sim_event_cb cb;
	void *cb_ctx;
	uint8_t key[FTL_KEY_SIZE];
	ftl_sim_stats stats;
	ftl_sim_record *records;  /* every view taken, in order */
	int n_records, cap_records;
};

/* sim_views.c: logs the view node i just took. */
void ftl_sim_record_view(ftl_sim *sim, int i);
/* The node named `name` ("n<index>"), or -1. O(1). */
int ftl_sim_index_of_name(const ftl_sim *sim, const char *name);

#endif
