/* The key census of key_census.h: one pass over the member table. */
#include "key_census.h"

#include "members.h"

#include <string.h>

static bool is_live(const ftl_member *m)
{
	return m->state == FTL_MEMBER_ALIVE || m->state == FTL_MEMBER_SUSPECT;
}

static ftl_key_census_row *row_of(ftl_key_census *c, const uint8_t fp[FTL_KEY_FP_SIZE])
{
	for (size_t i = 0; i < c->n_rows; i++)
		if (memcmp(c->rows[i].fp, fp, FTL_KEY_FP_SIZE) == 0)
			return &c->rows[i];
	if (c->n_rows == FTL_KEY_CENSUS_ROWS) {
		c->is_truncated = true;
		return NULL;
	}
	ftl_key_census_row *r = &c->rows[c->n_rows++];
	memcpy(r->fp, fp, FTL_KEY_FP_SIZE);
	r->local = -1;
	return r;
}

void ftl_key_census_take(ftl_key_census *c, const ftl_members *t, const ftl_key_fps *ours)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < ours->count && i < FTL_KEY_FPS_MAX; i++) {
		ftl_key_census_row *r = row_of(c, ours->fp[i]);
		if (r && r->local < 0)
			r->local = i;
	}
	for (uint32_t i = 0; i < t->len; i++) {
		const ftl_member *m = &t->arr[i];
		if (!is_live(m))
			continue;
		c->members++;
		if (!m->key_fps) {
			c->unreported++;
			continue;
		}
		for (int k = 0; k < m->key_fps->count && k < FTL_KEY_FPS_MAX; k++) {
			/* A fingerprint a member lists twice is counted once. */
			if (ftl_key_fps_find(m->key_fps, m->key_fps->fp[k]) != k)
				continue;
			ftl_key_census_row *r = row_of(c, m->key_fps->fp[k]);
			if (!r)
				continue;
			r->holders++;
			r->primaries += k == 0;
		}
	}
}

const ftl_key_census_row *ftl_key_census_find(const ftl_key_census *c, const uint8_t fp[FTL_KEY_FP_SIZE])
{
	for (size_t i = 0; i < c->n_rows; i++)
		if (memcmp(c->rows[i].fp, fp, FTL_KEY_FP_SIZE) == 0)
			return &c->rows[i];
	return NULL;
}

uint32_t ftl_key_census_lacking(const ftl_members *t, const uint8_t fp[FTL_KEY_FP_SIZE], const char **names,
				uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->len; i++) {
		const ftl_member *m = &t->arr[i];
		if (!is_live(m) || ftl_key_fps_find(m->key_fps, fp) >= 0)
			continue;
		if (n < max)
			names[n] = m->name;
		n++;
	}
	return n;
}
