/* Deferred log records: the agent's loop thread never runs a log callback itself.
 *
 * Why: a callback is the embedding program's code. Python's (ftl.Agent(logger=...)) takes the GIL for each
 * record, and a handler may block (a slow sink, a lock); run on the loop thread, either stops gossip, and
 * peers declare a live worker dead by suspicion while it sits in state R with no line out (issue 24, item
 * 10). So a thread that marks itself (ftl_log_defer_here: the loop thread, at its start) only copies its
 * records into a bounded queue, and one delivery thread per process, started at the first such record,
 * hands them to their callbacks in order. A full queue drops the newest and counts them; the next record
 * delivered is preceded by a warning saying how many were lost. ftl_log_drain waits until no record of a
 * logger is queued or being delivered, so an agent's callback is never called after its agent stopped. */
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_MAX 4096

typedef struct deferred {
	struct deferred *next;
	ftl_log_cb cb;
	void *user;
	ftl_log_record rec;
	ftl_log_field fields[FTL_LOG_FIELDS_MAX];
	char text[]; /* agent, component, message, then each field's key and string value, NUL-terminated */
} deferred;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER, delivered = PTHREAD_COND_INITIALIZER;
static deferred *head, *tail;
static size_t n_queued;
static uint64_t n_dropped;
static const deferred *in_delivery;
static bool has_thread;
static _Thread_local bool is_deferring;

void ftl_log_defer_here(void) { is_deferring = true; }

bool ftl_log_is_deferred_here(void) { return is_deferring; }

static size_t text_bytes(const ftl_log_record *rec)
{
	size_t n = strlen(rec->agent) + strlen(rec->component) + strlen(rec->message) + 3;
	for (size_t i = 0; i < rec->n_fields; i++)
		n += strlen(rec->fields[i].key) + 1 +
		     (rec->fields[i].type == FTL_LOG_FIELD_STR ? strlen(rec->fields[i].value.str) + 1 : 0);
	return n;
}

static const char *keep(char **at, const char *s)
{
	size_t n = strlen(s) + 1;
	memcpy(*at, s, n);
	*at += n;
	return *at - n;
}

static deferred *copy(const ftl_logger *l, const ftl_log_record *rec)
{
	deferred *d = malloc(sizeof(*d) + text_bytes(rec));
	if (!d)
		return NULL;
	char *at = d->text;
	d->next = NULL;
	d->cb = l->cb;
	d->user = l->user;
	d->rec = *rec;
	d->rec.agent = keep(&at, rec->agent);
	d->rec.component = keep(&at, rec->component);
	d->rec.message = keep(&at, rec->message);
	for (size_t i = 0; i < rec->n_fields; i++) {
		d->fields[i] = rec->fields[i];
		d->fields[i].key = keep(&at, rec->fields[i].key);
		if (rec->fields[i].type == FTL_LOG_FIELD_STR)
			d->fields[i].value.str = keep(&at, rec->fields[i].value.str);
	}
	d->rec.fields = d->fields;
	return d;
}

/* The warning that stands for records a full queue dropped, in the next record's place and voice. */
static void tell_dropped(const deferred *next, uint64_t dropped)
{
	ftl_log_field f = {.key = "dropped", .type = FTL_LOG_FIELD_UINT, .value.u = dropped};
	ftl_log_record rec = {
		.time_us = next->rec.time_us,
		.level = FTL_LOG_WARN,
		.agent = next->rec.agent,
		.component = "log",
		.message = "log records dropped: the log callback fell behind the agent's loop thread",
		.fields = &f,
		.n_fields = 1,
	};
	next->cb(&rec, next->user);
}

static void *deliver(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!head)
			pthread_cond_wait(&queued, &mu);
		deferred *d = head;
		head = d->next;
		if (!head)
			tail = NULL;
		n_queued--;
		uint64_t dropped = n_dropped;
		n_dropped = 0;
		in_delivery = d;
		pthread_mutex_unlock(&mu);
		if (dropped)
			tell_dropped(d, dropped);
		d->cb(&d->rec, d->user);
		pthread_mutex_lock(&mu);
		in_delivery = NULL;
		free(d);
		pthread_cond_broadcast(&delivered);
	}
	return NULL;
}

void ftl_log_defer(const ftl_logger *l, const ftl_log_record *rec)
{
	deferred *d = copy(l, rec);
	pthread_mutex_lock(&mu);
	if (!has_thread) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		has_thread = pthread_create(&t, &attr, deliver, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!d || !has_thread || n_queued == QUEUE_MAX) {
		n_dropped++;
		pthread_mutex_unlock(&mu);
		free(d);
		return;
	}
	if (tail)
		tail->next = d;
	else
		head = d;
	tail = d;
	n_queued++;
	pthread_cond_signal(&queued);
	pthread_mutex_unlock(&mu);
}

static bool holds(const ftl_logger *l)
{
	if (in_delivery && in_delivery->cb == l->cb && in_delivery->user == l->user)
		return true;
	for (const deferred *d = head; d; d = d->next)
		if (d->cb == l->cb && d->user == l->user)
			return true;
	return false;
}

void ftl_log_drain(const ftl_logger *l)
{
	if (!l->cb)
		return;
	pthread_mutex_lock(&mu);
	while (holds(l))
		pthread_cond_wait(&delivered, &mu);
	pthread_mutex_unlock(&mu);
}
