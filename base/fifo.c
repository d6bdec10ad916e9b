/* The FIFO of fifo.h. */
#include "fifo.h"

#include <stdlib.h>
#include <string.h>

#define FIFO_FIRST_CAP 16

void ftl_fifo_create(ftl_fifo *q, size_t item_size)
{
	memset(q, 0, sizeof(*q));
	q->item_size = item_size;
}

void ftl_fifo_destroy(ftl_fifo *q)
{
	free(q->items);
	ftl_fifo_create(q, q->item_size);
}

void *ftl_fifo_push(ftl_fifo *q)
{
	if (q->head + q->len == q->cap && q->head > 0) { /* slide the pending items to the front */
		memmove(q->items, (char *)q->items + q->head * q->item_size, q->len * q->item_size);
		q->head = 0;
	}
	if (q->len == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : FIFO_FIRST_CAP;
		void *grown = realloc(q->items, cap * q->item_size);
		if (!grown)
			return NULL;
		q->items = grown;
		q->cap = cap;
	}
	return (char *)q->items + (q->head + q->len++) * q->item_size;
}

void *ftl_fifo_pop(ftl_fifo *q)
{
	if (q->len == 0)
		return NULL;
	void *item = (char *)q->items + q->head * q->item_size;
	q->head++;
	if (--q->len == 0)
		q->head = 0; /* the next push reuses the front: the item stays valid until then */
	return item;
}
