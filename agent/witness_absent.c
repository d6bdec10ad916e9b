/* The lives not on this host (witness_absent.h): a growing open-addressing set of 64-bit keys. */
#include "witness_absent.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static uint64_t key_of(const char *name, uint64_t generation)
{
	uint64_t k = XXH3_64bits_withSeed(name, strlen(name), generation);
	return k ? k : 1; /* 0 marks an empty slot */
}

static uint64_t *slot_of(uint64_t *slots, uint32_t n_slots, uint64_t key)
{
	uint32_t i = (uint32_t)key & (n_slots - 1);
	while (slots[i] && slots[i] != key)
		i = (i + 1) & (n_slots - 1);
	return &slots[i];
}

bool ftl_absent_has(const ftl_absent_lives *s, const char *name, uint64_t generation)
{
	return s->n_slots && *slot_of(s->slots, s->n_slots, key_of(name, generation)) != 0;
}

static bool grow(ftl_absent_lives *s)
{
	uint32_t n = s->n_slots ? s->n_slots * 2 : 64;
	uint64_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return false;
	for (uint32_t i = 0; i < s->n_slots; i++)
		if (s->slots[i])
			*slot_of(slots, n, s->slots[i]) = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->n_slots = n;
	return true;
}

void ftl_absent_add(ftl_absent_lives *s, const char *name, uint64_t generation)
{
	if ((s->len + 1) * 2 > s->n_slots && !grow(s))
		return;
	uint64_t key = key_of(name, generation);
	uint64_t *slot = slot_of(s->slots, s->n_slots, key);
	if (!*slot) {
		*slot = key;
		s->len++;
	}
}

void ftl_absent_trim(ftl_absent_lives *s, uint32_t members)
{
	if (s->len <= 64 || s->len <= 2 * (uint64_t)members)
		return;
	memset(s->slots, 0, s->n_slots * sizeof(*s->slots));
	s->len = 0;
}

void ftl_absent_free(ftl_absent_lives *s)
{
	free(s->slots);
	*s = (ftl_absent_lives){0};
}
