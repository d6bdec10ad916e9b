/* The alive-member table (see rdv_peers.h). */
#include "rdv_peers.h"

#include <stdlib.h>
#include <string.h>

static int member_by_name(const void *a, const void *b)
{
	return strcmp(((const ftl_rdv_member *)a)->name, ((const ftl_rdv_member *)b)->name);
}

int rdv_peers_find(const rdv_peers *p, const char *name)
{
	uint32_t lo = 0, hi = p->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->members[mid].name, name);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Sorts by name and removes duplicate names, keeping the larger generation; returns the new count. */
static uint32_t sort_unique(ftl_rdv_member *m, uint32_t n)
{
	uint32_t out = 0;
	qsort(m, n, sizeof *m, member_by_name);
	for (uint32_t i = 0; i < n; i++) {
		if (out > 0 && strcmp(m[out - 1].name, m[i].name) == 0) {
			if (m[i].generation > m[out - 1].generation)
				m[out - 1] = m[i];
			continue;
		}
		m[out++] = m[i];
	}
	return out;
}

int rdv_peers_update(rdv_peers *p, int64_t now_us, const ftl_rdv_member *alive, size_t n_alive,
		     const ftl_rdv_member *self)
{
	size_t cap = n_alive + 1 < FTL_RDV_MAX_MEMBERS ? n_alive + 1 : FTL_RDV_MAX_MEMBERS;
	ftl_rdv_member *members = malloc(cap * sizeof *members);
	rdv_peer *state = malloc(cap * sizeof *state);
	uint32_t n = 0;

	if (members == NULL || state == NULL) {
		free(members);
		free(state);
		return -1;
	}
	members[n++] = *self;
	for (size_t i = 0; i < n_alive && n < cap; i++)
		if (strcmp(alive[i].name, self->name) != 0)
			members[n++] = alive[i];
	n = sort_unique(members, n);
	for (uint32_t i = 0; i < n; i++) {
		int old = rdv_peers_find(p, members[i].name);
		if (old >= 0 && p->members[old].generation == members[i].generation) {
			state[i] = p->state[old];
			continue;
		}
		memset(&state[i], 0, sizeof state[i]);
		state[i].seen_since_us = now_us;
		state[i].polled_us = INT64_MIN;
	}
	rdv_peers_free(p);
	p->members = members;
	p->state = state;
	p->n = n;
	return 0;
}

void rdv_peers_free(rdv_peers *p)
{
	free(p->members);
	free(p->state);
	memset(p, 0, sizeof *p);
}
