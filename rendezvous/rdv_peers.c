/* The alive-member table (see rdv_peers.h). */
#include "rdv_peers.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A name to sort by: its first eight bytes as a big-endian integer decide most comparisons in one step;
 * names that share them fall back to strcmp. Both compare bytes as unsigned, so the order is strcmp's. */
struct rdv_name_key {
	uint64_t prefix;
	const ftl_rdv_member *m;
};

static rdv_name_key key_of(const ftl_rdv_member *m)
{
	rdv_name_key k = {0, m};
	const char *s = m->name;
	for (int i = 0; i < 8; i++) {
		k.prefix = k.prefix << 8 | (uint8_t)*s;
		s += *s != '\0'; /* past the end: zero bytes, as a shorter name sorts first */
	}
	return k;
}

static bool goes_before(const rdv_name_key *x, const rdv_name_key *y)
{
	return x->prefix != y->prefix ? x->prefix < y->prefix : strcmp(x->m->name, y->m->name) < 0;
}

/* A stable bottom-up merge sort of keys[0..n) into keys, with tmp[0..n) as scratch: no allocation, where
 * qsort would allocate its own buffer on every update. */
static void sort_keys(rdv_name_key *keys, rdv_name_key *tmp, uint32_t n)
{
	rdv_name_key *from = keys, *to = tmp;
	for (uint32_t width = 1; width < n; width *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * width) {
			uint32_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
			uint32_t a = lo, b = mid, out = lo;
			while (a < mid && b < hi)
				to[out++] = goes_before(&from[b], &from[a]) ? from[b++] : from[a++];
			while (a < mid)
				to[out++] = from[a++];
			while (b < hi)
				to[out++] = from[b++];
		}
		rdv_name_key *t = from;
		from = to;
		to = t;
	}
	if (from != keys)
		memcpy(keys, from, n * sizeof *keys);
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

static ftl_err out_of_memory(uint32_t n)
{
	return ftl_diag_set(FTL_ERR_SYSTEM, "rendezvous: out of memory for the table of %u alive members", n);
}

/* A capacity of at least n that grows by half again at least, so that a list growing one member at a time
 * is not reallocated at every update. */
static uint32_t grown(uint32_t cap, uint32_t n)
{
	return n <= cap ? cap : (n > cap + cap / 2 ? n : cap + cap / 2);
}

/* Room for n in the spare arrays and the keys, and n more keys of scratch (old contents are not kept). */
static ftl_err reserve(rdv_peers *p, uint32_t n)
{
	if (n > p->spare_cap) {
		uint32_t cap = grown(p->spare_cap, n);
		free(p->spare_members);
		free(p->spare_state);
		p->spare_members = malloc(cap * sizeof *p->spare_members);
		p->spare_state = malloc(cap * sizeof *p->spare_state);
		p->spare_cap = p->spare_members && p->spare_state ? cap : 0;
		if (p->spare_cap == 0)
			return out_of_memory(n);
	}
	if (n > p->keys_cap) {
		uint32_t cap = grown(p->keys_cap, n);
		free(p->keys);
		p->keys = malloc(2 * (size_t)cap * sizeof *p->keys); /* the second half: the sort's scratch */
		p->keys_cap = p->keys ? cap : 0;
		if (p->keys == NULL)
			return out_of_memory(n);
	}
	return FTL_OK;
}

/* Copies the sorted keys into members, removing duplicate names (keeping the larger generation); returns
 * the new count. */
static uint32_t copy_unique(ftl_rdv_member *members, const rdv_name_key *keys, uint32_t n)
{
	uint32_t out = 0;
	for (uint32_t i = 0; i < n; i++) {
		const ftl_rdv_member *m = keys[i].m;
		if (out > 0 && strcmp(members[out - 1].name, m->name) == 0) {
			if (m->generation > members[out - 1].generation)
				members[out - 1] = *m;
			continue;
		}
		members[out++] = *m;
	}
	return out;
}

/* Fills state[0..n) for the new sorted list: the old state of every (name, generation) that stays, fresh
 * state for the rest. Both lists are sorted by name: one walk. */
static void carry_state(const rdv_peers *old, const ftl_rdv_member *members, rdv_peer *state, uint32_t n,
			int64_t now_us)
{
	uint32_t j = 0;
	for (uint32_t i = 0; i < n; i++) {
		int c = -1;
		while (j < old->n && (c = strcmp(old->members[j].name, members[i].name)) < 0)
			j++;
		if (j < old->n && c == 0 && old->members[j].generation == members[i].generation) {
			state[i] = old->state[j];
			continue;
		}
		memset(&state[i], 0, sizeof state[i]);
		state[i].seen_since_us = now_us;
		state[i].polled_us = INT64_MIN;
	}
}

ftl_err rdv_peers_update(rdv_peers *p, int64_t now_us, const ftl_rdv_member *alive, size_t n_alive,
			 const ftl_rdv_member *self)
{
	uint32_t cap = n_alive + 1 < FTL_RDV_MAX_MEMBERS ? (uint32_t)n_alive + 1 : FTL_RDV_MAX_MEMBERS;
	uint32_t n = 0;
	ftl_err err = reserve(p, cap);

	if (err)
		return err;
	p->keys[n++] = key_of(self);
	for (size_t i = 0; i < n_alive && n < cap; i++)
		if (strcmp(alive[i].name, self->name) != 0)
			p->keys[n++] = key_of(&alive[i]);
	sort_keys(p->keys, p->keys + p->keys_cap, n);
	n = copy_unique(p->spare_members, p->keys, n);
	carry_state(p, p->spare_members, p->spare_state, n, now_us);

	ftl_rdv_member *members = p->members;
	rdv_peer *state = p->state;
	uint32_t old_cap = p->cap;
	p->members = p->spare_members;
	p->state = p->spare_state;
	p->cap = p->spare_cap;
	p->n = n;
	p->spare_members = members;
	p->spare_state = state;
	p->spare_cap = old_cap;
	return FTL_OK;
}

void rdv_peers_free(rdv_peers *p)
{
	free(p->members);
	free(p->state);
	free(p->spare_members);
	free(p->spare_state);
	free(p->keys);
	memset(p, 0, sizeof *p);
}
