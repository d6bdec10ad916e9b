/* The member table of members.h: a dense array, an open-addressing name index and a probe order. */
#include "members.h"

#include <stdlib.h>
#include <string.h>

void ftl_members_init(ftl_members *t) { memset(t, 0, sizeof(*t)); }

static void free_member(ftl_member *m)
{
	free(m->name);
	free(m->meta);
	free(m->key_fps);
	free(m->suspicion);
}

void ftl_members_free(ftl_members *t)
{
	for (uint32_t i = 0; i < t->len; i++)
		free_member(&t->arr[i]);
	free(t->arr);
	free(t->slots);
	free(t->order);
	memset(t, 0, sizeof(*t));
}

static uint64_t *slot_of(const ftl_members *t, const char *name, uint32_t hash)
{
	uint32_t mask = t->n_slots - 1;
	for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
		uint64_t v = t->slots[i];
		if (v == 0 || ((uint32_t)(v >> 32) == hash && strcmp(t->arr[(uint32_t)v - 1].name, name) == 0))
			return &t->slots[i];
	}
}

static void set_slot(ftl_members *t, const char *name, uint32_t idx)
{
	uint32_t hash = ftl_hash_str(name);
	*slot_of(t, name, hash) = (uint64_t)hash << 32 | (idx + 1);
}

ftl_member *ftl_members_find(const ftl_members *t, const char *name)
{
	if (t->n_slots == 0)
		return NULL;
	uint64_t v = *slot_of(t, name, ftl_hash_str(name));
	return v ? &t->arr[(uint32_t)v - 1] : NULL;
}

static void reindex(ftl_members *t)
{
	memset(t->slots, 0, t->n_slots * sizeof(*t->slots));
	for (uint32_t i = 0; i < t->len; i++)
		set_slot(t, t->arr[i].name, i);
}

static ftl_err rehash(ftl_members *t, uint32_t n_slots)
{
	uint64_t *slots = calloc(n_slots, sizeof(*slots));
	if (!slots)
		return ftl_diag_set(FTL_ERR_SYSTEM, "member table: out of memory for an index of %u slots", n_slots);
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	reindex(t);
	return FTL_OK;
}

static void shuffle_order(ftl_members *t, ftl_rng *rng)
{
	for (uint32_t i = 0; i < t->len; i++)
		t->order[i] = i;
	for (uint32_t i = t->len; i > 1; i--) {
		uint32_t j = ftl_rng_below(rng, i);
		uint32_t tmp = t->order[i - 1];
		t->order[i - 1] = t->order[j];
		t->order[j] = tmp;
	}
	t->order_len = t->len;
	t->order_pos = 0;
}

static ftl_err grow(ftl_members *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 8;
	ftl_member *arr = realloc(t->arr, cap * sizeof(*arr));
	if (arr)
		t->arr = arr;
	uint32_t *order = arr ? realloc(t->order, cap * sizeof(*order)) : NULL;
	if (!order)
		return ftl_diag_set(FTL_ERR_SYSTEM, "member table: out of memory growing to %u members", cap);
	t->order = order;
	t->cap = cap;
	return FTL_OK;
}

static char *name_block(const char *name, const char *addr)
{
	size_t nl = strlen(name), al = strlen(addr);
	char *b = malloc(nl + al + 2);
	if (b) {
		memcpy(b, name, nl + 1);
		memcpy(b + nl + 1, addr, al + 1);
	}
	return b;
}

ftl_member *ftl_members_add(ftl_members *t, ftl_rng *rng, const char *name, const char *addr,
			    ftl_member_state state, int64_t now_us)
{
	if (t->len == t->cap && grow(t) != FTL_OK)
		return NULL;
	if ((t->len + 1) * 2 > t->n_slots && rehash(t, t->n_slots ? t->n_slots * 2 : 16) != FTL_OK)
		return NULL;
	char *block = name_block(name, addr);
	if (!block) {
		ftl_diag_set(FTL_ERR_SYSTEM, "member %s: out of memory for its name and address", name);
		return NULL;
	}
	uint32_t idx = t->len++;
	ftl_member *m = &t->arr[idx];
	memset(m, 0, sizeof(*m));
	m->name = block;
	m->addr = block + strlen(name) + 1;
	m->addr_hash = ftl_hash_str(m->addr);
	m->state = state;
	m->state_since_us = now_us;
	m->last_heard_us = now_us;
	set_slot(t, name, idx);
	/* Insert at a random point of what is left of this round, so a joiner is probed soon but not first. */
	uint32_t left = t->order_len - t->order_pos;
	uint32_t at = t->order_pos + (left ? ftl_rng_below(rng, left + 1) : 0);
	if (at < t->order_len)
		t->order[t->order_len] = t->order[at];
	t->order[at] = idx;
	t->order_len++;
	return m;
}

void ftl_members_remove(ftl_members *t, ftl_rng *rng, ftl_member *m)
{
	uint32_t idx = (uint32_t)(m - t->arr);
	free_member(m);
	uint32_t last = t->len - 1;
	if (idx != last)
		t->arr[idx] = t->arr[last];
	t->len--;
	/* Rebuild the index: deletion from linear probing is easiest done this way and is rare (reaping). */
	reindex(t);
	shuffle_order(t, rng);
}

ftl_err ftl_members_set_addr(ftl_member *m, const char *addr)
{
	if (strcmp(m->addr, addr) == 0)
		return FTL_OK;
	char *block = name_block(m->name, addr);
	if (!block)
		return ftl_diag_set(FTL_ERR_SYSTEM, "member %s: out of memory for its new address %s", m->name,
				    addr);
	free(m->name);
	m->name = block;
	m->addr = block + strlen(block) + 1;
	m->addr_hash = ftl_hash_str(m->addr);
	return FTL_OK;
}

ftl_err ftl_members_set_meta(ftl_member *m, const uint8_t *meta, uint16_t len)
{
	uint8_t *copy = NULL;
	if (len > 0) {
		copy = malloc(len);
		if (!copy)
			return ftl_diag_set(FTL_ERR_SYSTEM, "member %s: out of memory for its metadata (%u bytes)",
					    m->name, (unsigned)len);
		memcpy(copy, meta, len);
	}
	free(m->meta);
	m->meta = copy;
	m->meta_len = len;
	return FTL_OK;
}

ftl_err ftl_members_set_key_fps(ftl_member *m, const ftl_key_fps *fps)
{
	ftl_key_fps *copy = NULL;
	if (fps->count > 0) {
		copy = malloc(sizeof(*copy));
		if (!copy)
			return ftl_diag_set(FTL_ERR_SYSTEM, "member %s: out of memory for its key fingerprints",
					    m->name);
		*copy = *fps;
	}
	free(m->key_fps);
	m->key_fps = copy;
	return FTL_OK;
}

ftl_member *ftl_members_next_in_round(ftl_members *t, ftl_rng *rng)
{
	if (t->order_pos >= t->order_len) {
		shuffle_order(t, rng);
		return NULL;
	}
	return &t->arr[t->order[t->order_pos++]];
}
