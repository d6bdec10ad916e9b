/* Member keys of a communicator's view (comm_members.h). */
#include "comm_members.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

static uint64_t key_of(const ftl_rdv_member *m)
{
	return XXH3_64bits_withSeed(m->name, strlen(m->name), m->generation);
}

uint64_t *ftl_comm_member_keys(const ftl_rdv_view *w)
{
	uint64_t *keys = malloc(sizeof(*keys) * (w->n ? w->n : 1));
	for (uint32_t i = 0; keys && i < w->n; i++)
		keys[i] = key_of(&w->members[i]);
	return keys;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

bool ftl_comm_members_all_in(const uint64_t *keys, uint32_t n, const ftl_rdv_view *v)
{
	if (n > v->n)
		return false;
	uint64_t *theirs = ftl_comm_member_keys(v); /* sorted once: a view of thousands, under the agent's lock */
	if (!theirs)
		return false;
	qsort(theirs, v->n, sizeof(*theirs), by_value);
	bool all = true;
	for (uint32_t i = 0; all && i < n; i++)
		all = bsearch(&keys[i], theirs, v->n, sizeof(*theirs), by_value) != NULL;
	free(theirs);
	return all;
}
