/* How long this worker had a collective in flight: the figure each rank measures of itself for the pace
 * verdict (pace.h). The union of the collectives' intervals, not their sum: DDP's gradient buckets and any
 * requests a program posts overlap each other, and a rank that waits for a slow peer waits once, however
 * many requests wait with it. A blocking collective is in flight for its call; a request from its post to
 * its consumption (ftl_wait, ftl_test). Called from any thread (a program's completion thread waits its
 * requests), so it has a lock of its own, held for a few instructions. */
#ifndef FTL_TRAIN_COMM_TIME_H
#define FTL_TRAIN_COMM_TIME_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ftl_comm_time {
	pthread_mutex_t mu;
	uint32_t in_flight;              /* collectives begun and not yet ended */
	int64_t since_us;                /* when in_flight last went from 0 to 1 */
	int64_t total_us;                /* completed in-flight time since the last take */
	uint64_t era;                    /* bumped by a take that forgets: older collectives end uncounted */
} ftl_comm_time;

void ftl_comm_time_init(ftl_comm_time *t);
void ftl_comm_time_destroy(ftl_comm_time *t);
/* A collective begins; returns the era to hand to its end. */
uint64_t ftl_comm_time_begin(ftl_comm_time *t, int64_t now_us);
void ftl_comm_time_end(ftl_comm_time *t, uint64_t era, int64_t now_us);
/* The in-flight time since the last take, a collective still in flight counted up to now; starts over.
 * forget: also forget the collectives in flight (a new view: its communicator aborted the old one's
 * requests, some never to be consumed). */
int64_t ftl_comm_time_take(ftl_comm_time *t, int64_t now_us, bool forget);

#endif
