/* Deadlines and timers. The pure cores speak in absolute microseconds on the caller's clock ("the next
 * thing is due at t", INT64_MAX for nothing due); an event loop's timer wants a relative wait in
 * milliseconds, and a condition variable on the monotonic clock an absolute timespec. These are the
 * conversions every core and shell needs, written once. */
#ifndef FTL_BASE_DEADLINE_H
#define FTL_BASE_DEADLINE_H

#include <stdint.h>
#include <time.h>

#define FTL_NO_DEADLINE INT64_MAX

/* The earlier of two deadlines. */
static inline int64_t ftl_deadline_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* The milliseconds a loop timer armed at now_us should wait for deadline_us: rounded up, so that it never
 * fires before the deadline; 0 for a deadline already past; never more than max_ms (a timer that wakes
 * for nothing now and then costs less than one that sleeps through a clock surprise). */
uint64_t ftl_deadline_timer_ms(int64_t deadline_us, int64_t now_us, uint64_t max_ms);

/* CLOCK_MONOTONIC now plus in_us (a negative wait counts as 0): the absolute time pthread_cond_timedwait
 * wants on a condition variable made with that clock. */
struct timespec ftl_deadline_monotonic_in(int64_t in_us);

#endif
