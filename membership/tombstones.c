/* Tombstones of reaped members (tombstones.h): a bounded list, grown on demand, oldest overwritten. */
#include "tombstones.h"

#include <stdlib.h>
#include <string.h>

void ftl_tombstones_init(ftl_tombstones *t) { memset(t, 0, sizeof(*t)); }

void ftl_tombstones_free(ftl_tombstones *t)
{
	free(t->arr);
	memset(t, 0, sizeof(*t));
}

static ftl_tombstone *find(const ftl_tombstones *t, const char *name)
{
	for (size_t i = 0; i < t->len; i++)
		if (strcmp(t->arr[i].name, name) == 0)
			return &t->arr[i];
	return NULL;
}

void ftl_tombstones_add(ftl_tombstones *t, const char *name, uint64_t generation)
{
	ftl_tombstone *stone = find(t, name);
	if (stone) {
		if (generation > stone->generation)
			stone->generation = generation;
		return;
	}
	if (t->len == t->cap && t->cap < FTL_TOMBSTONES_MAX) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		if (cap > FTL_TOMBSTONES_MAX)
			cap = FTL_TOMBSTONES_MAX;
		ftl_tombstone *arr = realloc(t->arr, cap * sizeof(*arr));
		if (arr) {
			t->arr = arr;
			t->cap = cap;
		}
	}
	if (t->len < t->cap) {
		stone = &t->arr[t->len++];
	} else if (t->len > 0) { /* full (or out of memory): the oldest makes room */
		stone = &t->arr[t->next];
		t->next = (t->next + 1) % t->len;
	} else {
		return;
	}
	ftl_copy_str(stone->name, name, FTL_NAME_MAX);
	stone->generation = generation;
}

void ftl_tombstones_unbury(ftl_tombstones *t, const char *name)
{
	ftl_tombstone *stone = find(t, name);
	if (stone)
		stone->generation = 0; /* generations start at 1: buries nothing, and the slot ages out */
}

bool ftl_tombstones_buried(const ftl_tombstones *t, const char *name, uint64_t generation)
{
	const ftl_tombstone *stone = find(t, name);
	return stone && generation <= stone->generation;
}
