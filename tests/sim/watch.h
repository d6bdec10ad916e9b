/* A recorder for simulator tests: when each observer first reported an event of one type about one
 * subject, and every dead (or left) event about a node that was never allowed to die: a false death. */
#ifndef FTL_TESTS_WATCH_H
#define FTL_TESTS_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

typedef struct ftl_watch {
	int capacity;
	int subject;                 /* node index watched, -1 for none */
	ftl_swim_event_type type;    /* the event watched about the subject */
	int64_t *seen_at;            /* per observer: first time it reported it, -1 if never */
	bool *may_die;               /* per node: dead/left events about it are expected */
	int false_deaths;
	int false_lefts;
	const char *trace;           /* FTL_SIM_TRACE: a member whose every event is printed, or NULL */
	int subject_deaths;          /* dead events about the subject, any observer */
	int subject_deaths_by[FTL_DEATH_REASON_MAX]; /* ... by the path that declared it */
	int subject_lefts;
} ftl_watch;

void ftl_watch_init(ftl_watch *w, ftl_sim *sim, int subject, ftl_swim_event_type type);
void ftl_watch_free(ftl_watch *w);
void ftl_watch_reset(ftl_watch *w, int subject, ftl_swim_event_type type);
/* The event callback: pass the watch as ctx. */
void ftl_watch_cb(void *ctx, ftl_sim *sim, int observer, const ftl_swim_event *ev);
/* How many running observers (other than the subject) reported it, and when the last of them did. */
int ftl_watch_count(const ftl_watch *w, ftl_sim *sim);
int64_t ftl_watch_last(const ftl_watch *w, ftl_sim *sim);

#endif
