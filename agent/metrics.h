/* /metrics: what the agent knows, in the Prometheus text exposition format (version 0.0.4).
 *
 * A snapshot is taken on the loop thread (which owns the membership core) with the views copied under the
 * agent's lock and the training layer's families rendered by it (agent_training.h); the text is then
 * built from the snapshot alone, a pure function that the unit test drives with made-up snapshots.
 * metrics_http.c serves it. Names follow Prometheus conventions: the
 * ftl_ prefix, base units in the name (_seconds, _bytes), _total on counters, histograms with cumulative
 * _bucket{le=...} series ending at +Inf, then _sum and _count. */
#ifndef FTL_AGENT_METRICS_H
#define FTL_AGENT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/metrics_text.h"
#include "node/node.h" /* membership's and the rendezvous's counters and phases, through the node */
#include "channel/tcp_frame.h"

/* Why the /metrics responder closed a connection before its request was complete (metrics_http.c). */
typedef enum ftl_http_drop {
	FTL_HTTP_DROP_EVICTED,   /* the slowest went to make room for a newer one */
	FTL_HTTP_DROP_TIMEOUT,   /* the head did not end within its deadline */
	FTL_HTTP_DROP_MAX
} ftl_http_drop;

extern const char *const ftl_http_drop_strs[FTL_HTTP_DROP_MAX];

typedef struct ftl_metrics_snapshot {
	char name[64];
	char cluster[64];
	/* membership, as this agent sees it */
	uint64_t members[FTL_MEMBER_STATE_MAX];
	ftl_swim_stats swim;
	ftl_keyring_stats keyring;
	uint64_t events[FTL_EVENT_TYPE_MAX];  /* membership events handed out here, by type */
	int health;                           /* Lifeguard local health: 0 is healthy, higher is worse */
	uint64_t tcp_timeouts;
	uint64_t control_followers_dropped;
	uint64_t tcp_dropped[FTL_TCP_DROP_MAX];   /* gossip-port TCP input dropped, by reason */
	uint64_t http_dropped[FTL_HTTP_DROP_MAX]; /* /metrics requests closed unanswered, by reason */
	/* training (is_training false: a bare agent, the rest is not shown) */
	bool is_training;
	uint64_t view_epoch;
	int rank;                             /* -1: not a member of the newest view */
	uint32_t world_size;
	ftl_rdv_phase phase;
	ftl_metrics_text training;            /* the training layer's families, rendered by it (empty: none) */
} ftl_metrics_snapshot;

struct ftl_agent;


/* Loop thread. */
void ftl_metrics_snapshot_take(struct ftl_agent *a, ftl_metrics_snapshot *out);
void ftl_metrics_snapshot_free(ftl_metrics_snapshot *s);
/* The exposition text (NUL-terminated, *len without the NUL), malloc'd; NULL when out of memory. */
char *ftl_metrics_render(const ftl_metrics_snapshot *s, size_t *len);

/* metrics_http.c: the listener on FTL_METRICS_ADDR (no-op when unset); an error with the diag naming it. */
ftl_err ftl_metrics_http_start(struct ftl_agent *a);
/* Before each poll for I/O (the agent's turn counter calls it): a connection that waited is accepted. */
void ftl_metrics_http_turn(struct ftl_agent *a);
/* Closes the listener and every open connection through their own path (before the loop's other handles). */
void ftl_metrics_http_close(struct ftl_agent *a);

#endif
