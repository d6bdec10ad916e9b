/* The deadline conversions of deadline.h. */
#include "deadline.h"

uint64_t ftl_deadline_timer_ms(int64_t deadline_us, int64_t now_us, uint64_t max_ms)
{
	if (deadline_us <= now_us)
		return 0;
	uint64_t wait_us = (uint64_t)deadline_us - (uint64_t)now_us; /* no overflow: deadline_us > now_us */
	uint64_t ms = wait_us / 1000 + (wait_us % 1000 != 0);
	return ms < max_ms ? ms : max_ms;
}
