/* A first-in first-out queue of fixed-size items in one growable array: the output, event and inbox
 * queues of the protocol cores. Push and pop are O(1) amortised; a push into a full array first slides
 * the pending items to the front, and only grows (doubling) when they fill it, so a queue drained as fast
 * as it fills allocates nothing in steady state. */
#ifndef FTL_BASE_FIFO_H
#define FTL_BASE_FIFO_H

#include <stddef.h>

typedef struct ftl_fifo {
	void *items;       /* [cap] items of item_size bytes */
	size_t item_size;
	size_t head;       /* the oldest pending item */
	size_t len;        /* pending: items[head .. head+len) */
	size_t cap;
} ftl_fifo;

void ftl_fifo_create(ftl_fifo *q, size_t item_size);
/* Frees the array; pending items are dropped (the caller releases what they own first). */
void ftl_fifo_destroy(ftl_fifo *q);
/* A new slot at the back (its bytes undefined), or NULL when out of memory. Pointers into the queue
 * are valid until the next push. */
void *ftl_fifo_push(ftl_fifo *q);
/* The oldest item, removed, or NULL when the queue is empty; valid until the next push. */
void *ftl_fifo_pop(ftl_fifo *q);
static inline size_t ftl_fifo_len(const ftl_fifo *q) { return q->len; }

#endif
