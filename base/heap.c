/* The binary heap of heap.h: items[i]'s children are items[2i+1] and items[2i+2], and no child is less
 * than its parent. */
#include "heap.h"

#include "diag.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEAP_FIRST_CAP 64

static void *at(const ftl_heap *h, size_t i) { return (char *)h->items + i * h->item_size; }

static void swap(ftl_heap *h, size_t i, size_t j)
{
	uint8_t tmp[256];
	char *a = at(h, i), *b = at(h, j);
	for (size_t off = 0; off < h->item_size; off += sizeof(tmp)) { /* any item size, a chunk at a time */
		size_t n = h->item_size - off < sizeof(tmp) ? h->item_size - off : sizeof(tmp);
		memcpy(tmp, a + off, n);
		memcpy(a + off, b + off, n);
		memcpy(b + off, tmp, n);
	}
}

void ftl_heap_create(ftl_heap *h, size_t item_size, ftl_heap_cmp_cb cmp)
{
	memset(h, 0, sizeof(*h));
	h->item_size = item_size;
	h->cmp = cmp;
}

void ftl_heap_destroy(ftl_heap *h)
{
	free(h->items);
	ftl_heap_create(h, h->item_size, h->cmp);
}

ftl_err ftl_heap_push(ftl_heap *h, const void *item)
{
	if (h->len == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : HEAP_FIRST_CAP;
		void *grown = realloc(h->items, cap * h->item_size);
		if (!grown)
			return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory growing a heap to %zu items", cap);
		h->items = grown;
		h->cap = cap;
	}
	size_t i = h->len++;
	memcpy(at(h, i), item, h->item_size);
	while (i > 0 && h->cmp(at(h, i), at(h, (i - 1) / 2)) < 0) { /* sift up */
		swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return FTL_OK;
}

bool ftl_heap_pop(ftl_heap *h, void *out)
{
	if (h->len == 0)
		return false;
	memcpy(out, at(h, 0), h->item_size);
	if (--h->len == 0)
		return true;
	memcpy(at(h, 0), at(h, h->len), h->item_size);
	for (size_t i = 0;;) { /* sift down */
		size_t least = i, l = 2 * i + 1, r = l + 1;
		if (l < h->len && h->cmp(at(h, l), at(h, least)) < 0)
			least = l;
		if (r < h->len && h->cmp(at(h, r), at(h, least)) < 0)
			least = r;
		if (least == i)
			break;
		swap(h, i, least);
		i = least;
	}
	return true;
}

const void *ftl_heap_peek(const ftl_heap *h)
{
	return h->len ? h->items : NULL;
}
