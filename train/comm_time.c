/* The union of the collectives' in-flight intervals (comm_time.h). */
#include "comm_time.h"

void ftl_comm_time_init(ftl_comm_time *t)
{
	*t = (ftl_comm_time){0};
	pthread_mutex_init(&t->mu, NULL);
}

void ftl_comm_time_destroy(ftl_comm_time *t)
{
	pthread_mutex_destroy(&t->mu);
}

uint64_t ftl_comm_time_begin(ftl_comm_time *t, int64_t now_us)
{
	pthread_mutex_lock(&t->mu);
	if (t->in_flight++ == 0)
		t->since_us = now_us;
	uint64_t era = t->era;
	pthread_mutex_unlock(&t->mu);
	return era;
}

void ftl_comm_time_end(ftl_comm_time *t, uint64_t era, int64_t now_us)
{
	pthread_mutex_lock(&t->mu);
	if (era == t->era && t->in_flight > 0 && --t->in_flight == 0)
		t->total_us += now_us - t->since_us;
	pthread_mutex_unlock(&t->mu);
}

int64_t ftl_comm_time_take(ftl_comm_time *t, int64_t now_us, bool forget)
{
	pthread_mutex_lock(&t->mu);
	int64_t total = t->total_us + (t->in_flight > 0 ? now_us - t->since_us : 0);
	t->total_us = 0;
	t->since_us = now_us;
	if (forget) {
		t->in_flight = 0;
		t->era++;
	}
	pthread_mutex_unlock(&t->mu);
	return total;
}
