/* Which rank the others wait for: the pace of each rank of a view, and the slow one, from figures every
 * rank measures of itself (issue "Failures as they come in a cluster", slow workers).
 *
 * A synchronous job runs at its slowest rank's pace, and every rank's step takes as long; what tells the
 * slow rank apart is where the time goes. Each rank counts, per step, the wall time during which it had a
 * collective in flight (comm_time.h: the union of the collectives' intervals, so overlapped requests count
 * once). A rank that arrives last finds its peers waiting and its collectives end at once; the others'
 * collectives last until it arrives. So a rank's lead, the median of the other ranks' in-flight time minus
 * its own, is how long the others waited for it per step (about 0 for every rank of a balanced job, even
 * when collectives overlap compute, since then every rank overlaps alike). The slow rank is the one with
 * the largest lead, when that lead is at least FTL_PACE_SLOW_SHARE of the median step time, in
 * FTL_PACE_SLOW_WINDOWS windows in a row.
 *
 * Every FTL_PACE_WINDOW_STEPS steps the ranks exchange their window's sums (pace_exchange.c, one small
 * allgather before the step runs, so a failure of it never runs a step twice), so every rank holds the
 * same table and reaches the same verdict. Pure: no clock, no I/O. */
#ifndef FTL_TRAIN_PACE_H
#define FTL_TRAIN_PACE_H

#include <stdbool.h>
#include <stdint.h>

#include "ftl/error.h"

#define FTL_PACE_WINDOW_STEPS 16
#define FTL_PACE_SLOW_SHARE 0.25
#define FTL_PACE_SLOW_WINDOWS 3

/* One rank's sums over its window, as exchanged (four uint64 on the wire, in this order). */
typedef struct ftl_pace_window {
	uint64_t view_epoch;            /* the view the window was measured in (0: no window) */
	uint64_t steps;
	uint64_t step_us;               /* the steps' wall time */
	uint64_t comm_us;               /* ... with a collective in flight */
} ftl_pace_window;
#define FTL_PACE_WIRE_WORDS 4

/* One rank's row of the verdict, per step (means over its window). */
typedef struct ftl_pace_row {
	double step_ms;
	double comm_ms;
	double lead_ms;                 /* how long the others waited for this rank per step */
	double share;                   /* FTL_SLOW_POLICY=rebalance: its share of the global batch from now on
					 * (rebalance.h); 0 under the other policies */
} ftl_pace_row;

/* What the ranks agree on after each exchange. */
typedef struct ftl_pace {
	uint64_t view_epoch;            /* the view of the rows (0: none yet) */
	uint32_t n;
	ftl_pace_row *rows;             /* [n], by rank; owned */
	int suspect;                    /* the rank over the share in the latest window, -1: none */
	uint32_t suspect_windows;       /* ... in that many windows in a row */
	int slow;                       /* suspect for FTL_PACE_SLOW_WINDOWS windows or more; -1: none */
	uint64_t exchanges;
} ftl_pace;

/* Adds windows[n] (every rank's, by rank, for the view view_epoch) to p: the rows are replaced, the suspect
 * and slow rank follow the rule above. A rank whose window is of another view or has fewer than half the
 * window's steps (a joiner) has no verdict this time: rows of 0 and no suspect. FTL_ERR_SYSTEM when out of
 * memory (p is then as it was). */
ftl_err ftl_pace_add(ftl_pace *p, uint64_t view_epoch, const ftl_pace_window *windows, uint32_t n);
/* An empty verdict (no rows, no suspect); ftl_pace_free frees the rows and leaves p so. */
void ftl_pace_init(ftl_pace *p);
void ftl_pace_free(ftl_pace *p);

#endif
