/* A binary min-heap of fixed-size items in one growable array, ordered by the caller's comparison: the
 * event queue of a simulator on virtual time (the earliest event first; ties broken by the comparison,
 * for example by a sequence number, so a run is deterministic). Push and pop are O(log n), peek O(1). */
#ifndef FTL_BASE_HEAP_H
#define FTL_BASE_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#include "ftl/error.h"

/* Negative when a must come out before b, positive when after, 0 when either may. */
typedef int (*ftl_heap_cmp_cb)(const void *a, const void *b);

typedef struct ftl_heap {
	void *items;       /* [cap] items of item_size bytes; items[0] is the least */
	size_t item_size;
	size_t len, cap;
	ftl_heap_cmp_cb cmp;
} ftl_heap;

void ftl_heap_create(ftl_heap *h, size_t item_size, ftl_heap_cmp_cb cmp);
/* Frees the array; items still in it are dropped (the caller releases what they own first). */
void ftl_heap_destroy(ftl_heap *h);
/* Copies item in; FTL_ERR_SYSTEM when out of memory (the heap is unchanged). */
ftl_err ftl_heap_push(ftl_heap *h, const void *item);
/* Copies the least item out and removes it; false when the heap is empty. */
bool ftl_heap_pop(ftl_heap *h, void *out);
/* The least item (valid until the next push or pop), or NULL when empty. */
const void *ftl_heap_peek(const ftl_heap *h);
static inline size_t ftl_heap_len(const ftl_heap *h) { return h->len; }

#endif
