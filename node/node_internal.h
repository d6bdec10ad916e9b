/* The inside of ftl_node, shared by node.c (lifecycle, inputs, outputs), node_feed.c (the member feed and
 * the abort rules, run after every input) and node_seeds.c (the seed rule). */
#ifndef FTL_NODE_INTERNAL_H
#define FTL_NODE_INTERNAL_H

#include "node.h"

#include "membership/swim.h"
#include "rendezvous/rendezvous.h"

/* Membership changes reach the rendezvous at most once per window: a burst of joins or deaths (a rack, a
 * scale-up of hundreds) costs one candidate per window, not one per event. A feed costs O(n log n), so the
 * window grows by this much per FTL_NODE_FEED_MEMBERS_PER_WINDOW members (10 ms up to 128, 80 ms at 1,000):
 * feeding stays a bounded share of the node's work. The first change after a quiet window is fed at once,
 * and abort verdicts are never delayed. */
#define FTL_NODE_FEED_WINDOW_US 10000
#define FTL_NODE_FEED_MEMBERS_PER_WINDOW 128
#define FTL_NODE_EVENTS_MAX 65536 /* events the caller has not taken; past it, member events are dropped */

struct ftl_node {
	ftl_swim *swim;
	ftl_rdv *rdv;                 /* NULL when not training */
	ftl_node_event *events;       /* a FIFO ring of events not yet taken */
	size_t ev_head, ev_len, ev_cap;
	uint64_t events_lost;         /* member events dropped because the caller did not take them */
	bool is_left_told;            /* FTL_NODE_EVENT_LEFT was queued */
	bool is_fed;                  /* the rendezvous has had its first member list */
	int64_t fed_at_us;            /* the last feed (node_feed.c) */
	int64_t feed_due_us;          /* a change waits for its feed until then; INT64_MAX when none waits */
	uint32_t fed_alive, fed_left; /* alive+suspect and left members at the last feed */
	uint64_t fed_proven_later;    /* the swim's deaths_proven_later then: a proof that came late feeds again */
	int64_t seeds_alone_wait_us;  /* the next wait between seed lookups while alone (node_seeds.c) */
};

/* Takes what the parts produced after an input: membership events (with the abort rule), the member feed
 * into the rendezvous, a new view, the end of a leave. */
void ftl_node_settle(ftl_node *n, int64_t now_us);
void ftl_node_push_event(ftl_node *n, const ftl_node_event *ev);

#endif
