/* The piggyback queue of broadcast.h. */
#include "broadcast.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

struct ftl_bcast_item {
	char about[FTL_NAME_MAX];
	uint64_t id;
	int transmits;
	size_t len;
	uint8_t msg[];
};

void ftl_bcast_init(ftl_bcast_queue *q) { memset(q, 0, sizeof(*q)); }

void ftl_bcast_free(ftl_bcast_queue *q)
{
	for (size_t i = 0; i < q->len; i++)
		free(q->items[i]);
	free(q->items);
	memset(q, 0, sizeof(*q));
}

static void remove_at(ftl_bcast_queue *q, size_t i)
{
	free(q->items[i]);
	q->items[i] = q->items[--q->len];
	q->is_sorted = false;
}

static ssize_t find_about(const ftl_bcast_queue *q, const char *about)
{
	for (size_t i = 0; i < q->len; i++)
		if (strcmp(q->items[i]->about, about) == 0)
			return (ssize_t)i;
	return -1;
}

int ftl_bcast_push(ftl_bcast_queue *q, const char *about, const uint8_t *msg, size_t len)
{
	if (len > FTL_WIRE_MSG_MAX)
		return -1;
	ssize_t old = find_about(q, about);
	if (old >= 0)
		remove_at(q, (size_t)old);
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		ftl_bcast_item **items = realloc(q->items, cap * sizeof(*items));
		if (!items)
			return -1;
		q->items = items;
		q->cap = cap;
	}
	ftl_bcast_item *it = malloc(sizeof(*it) + len);
	if (!it)
		return -1;
	ftl_copy_str(it->about, about, FTL_NAME_MAX);
	it->id = q->next_id++;
	it->transmits = 0;
	it->len = len;
	memcpy(it->msg, msg, len);
	q->items[q->len++] = it;
	q->is_sorted = false;
	return 0;
}

/* Least-sent first; among equals, newest first. */
static int by_priority(const void *a, const void *b)
{
	const ftl_bcast_item *x = *(ftl_bcast_item *const *)a, *y = *(ftl_bcast_item *const *)b;
	if (x->transmits != y->transmits)
		return x->transmits < y->transmits ? -1 : 1;
	return x->id > y->id ? -1 : (x->id < y->id ? 1 : 0);
}

size_t ftl_bcast_fill(ftl_bcast_queue *q, ftl_wire_packet *p, int limit)
{
	if (q->len == 0)
		return 0;
	if (!q->is_sorted)
		qsort(q->items, q->len, sizeof(*q->items), by_priority);
	size_t added = 0;
	for (size_t i = 0; i < q->len && ftl_wire_packet_room(p) > 0; i++) {
		ftl_bcast_item *it = q->items[i];
		if (ftl_wire_packet_add_raw(p, it->msg, it->len) != 0)
			continue;
		it->transmits++;
		added++;
	}
	/* Drop what reached the limit; order is restored lazily on the next fill. */
	for (size_t i = q->len; i-- > 0;)
		if (q->items[i]->transmits >= limit)
			remove_at(q, i);
	q->is_sorted = false;
	return added;
}

bool ftl_bcast_has(const ftl_bcast_queue *q, const char *about) { return find_about(q, about) >= 0; }
