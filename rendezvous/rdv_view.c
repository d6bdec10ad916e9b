/* View copies and digests (see rdv_view.h). */
#include "rdv_view.h"

#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV_PRIME;
	return h;
}

/* Hashes a number byte by byte from the low end, so the digest is the same on every host. */
static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	uint8_t bytes[8];
	for (int i = 0; i < 8; i++)
		bytes[i] = (uint8_t)(v >> (8 * i));
	return fnv(h, bytes, sizeof bytes);
}

uint64_t rdv_members_digest(const ftl_rdv_member *members, uint32_t n)
{
	uint64_t h = fnv_u64(FNV_OFFSET, n);
	for (uint32_t i = 0; i < n; i++) {
		h = fnv(h, members[i].name, strlen(members[i].name) + 1); /* the NUL separates names */
		h = fnv_u64(h, members[i].generation);
	}
	return h;
}

uint64_t rdv_view_digest(const ftl_rdv_view *v)
{
	if (v->epoch == 0)
		return 0;
	uint64_t h = fnv_u64(fnv_u64(rdv_members_digest(v->members, v->n), v->epoch), v->lineage);
	h = fnv(fnv_u64(h, v->blob_len), v->blob, v->blob_len);
	return h == 0 ? 1 : h;
}

rdv_view_id rdv_view_id_of(const ftl_rdv_view *v, uint64_t steps)
{
	return (rdv_view_id){.epoch = v->epoch, .lineage = v->lineage, .digest = rdv_view_digest(v), .n = v->n,
			     .steps = steps};
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

int rdv_view_id_cmp(const rdv_view_id *a, const rdv_view_id *b)
{
	if (a->lineage == b->lineage || a->epoch == 0 || b->epoch == 0)
		return a->epoch != b->epoch ? cmp_u64(a->epoch, b->epoch) : cmp_u64(a->digest, b->digest);
	if (a->steps != b->steps)
		return cmp_u64(a->steps, b->steps);
	if (a->n != b->n)
		return cmp_u64(a->n, b->n);
	return cmp_u64(a->lineage, b->lineage);
}

void ftl_rdv_view_clear(ftl_rdv_view *v)
{
	free(v->members);
	memset(v, 0, sizeof *v);
}

ftl_err ftl_rdv_view_copy(ftl_rdv_view *dst, const ftl_rdv_view *src)
{
	ftl_rdv_member *members = NULL;
	if (dst == src)
		return FTL_OK;
	if (src->n > 0) {
		members = malloc(src->n * sizeof *members);
		if (members == NULL) {
			ftl_rdv_view_clear(dst);
			return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory copying view %llu (%u members)",
					    (unsigned long long)src->epoch, src->n);
		}
		memcpy(members, src->members, src->n * sizeof *members);
	}
	free(dst->members);
	*dst = *src;
	dst->members = members;
	return FTL_OK;
}

int rdv_view_find(const ftl_rdv_view *v, const char *name, uint64_t generation)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (v->members[i].generation == generation && strcmp(v->members[i].name, name) == 0)
			return (int)i;
	return -1;
}
