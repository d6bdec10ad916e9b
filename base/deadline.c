/* The deadline conversions of deadline.h. */
#include "deadline.h"

struct timespec ftl_deadline_monotonic_in(int64_t in_us)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (in_us < 0)
		in_us = 0;
	t.tv_sec += (time_t)(in_us / 1000000);
	t.tv_nsec += (long)(in_us % 1000000) * 1000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

uint64_t ftl_deadline_timer_ms(int64_t deadline_us, int64_t now_us, uint64_t max_ms)
{
	if (deadline_us <= now_us)
		return 0;
	uint64_t wait_us = (uint64_t)deadline_us - (uint64_t)now_us; /* no overflow: deadline_us > now_us */
	uint64_t ms = wait_us / 1000 + (wait_us % 1000 != 0);
	return ms < max_ms ? ms : max_ms;
}
