/* Lifeguard's local health: a node that misses acks and nacks it should have heard is probably the sick
 * one (overloaded, paused, slow network card), so it stretches its own probe timeouts instead of
 * accusing healthy peers. The score runs from 0 (healthy) to max-1; timeouts scale by score+1. */
#ifndef FTL_MEMBERSHIP_AWARENESS_H
#define FTL_MEMBERSHIP_AWARENESS_H

#include <stdint.h>

typedef struct ftl_awareness {
	int max;   /* the multiplier never exceeds this */
	int score; /* 0 .. max-1 */
} ftl_awareness;

static inline void ftl_awareness_init(ftl_awareness *a, int max)
{
	a->max = max;
	a->score = 0;
}

/* Adds delta (positive: worse health), clamped to 0 .. max-1. */
static inline void ftl_awareness_apply(ftl_awareness *a, int delta)
{
	int s = a->score + delta;
	a->score = s < 0 ? 0 : (s > a->max - 1 ? a->max - 1 : s);
}

static inline int64_t ftl_awareness_scale(const ftl_awareness *a, int64_t timeout_us)
{
	return timeout_us * (a->score + 1);
}

#endif
