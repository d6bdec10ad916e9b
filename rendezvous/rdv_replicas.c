/* Whole replicas (rdv_replicas.h): which members of a sharded job may train, and in what order. */
#include "rdv_replicas.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One member that may count toward its replica, by its place in the ordered list. */
typedef struct claim {
	const ftl_rdv_member *m;
	uint32_t pos;
} claim;

/* A whole replica: its members' claims in index order, from claims[first]. */
typedef struct replica {
	uint32_t first;
	uint32_t first_pos;           /* the smallest place of its members in the ordered list */
	bool is_survivor;             /* every member survives from the view */
	const ftl_rdv_member *newest; /* its member of the largest (generation, name): when it became whole */
} replica;

/* By replica name, then index, then place (so the first claim of an index is the one kept). */
static int by_replica_index_place(const void *a, const void *b)
{
	const claim *x = a, *y = b;
	int c = strcmp(x->m->replica, y->m->replica);
	if (c != 0)
		return c;
	if (x->m->replica_index != y->m->replica_index)
		return x->m->replica_index < y->m->replica_index ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_join(const ftl_rdv_member *x, const ftl_rdv_member *y)
{
	if (x->generation != y->generation)
		return x->generation < y->generation ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Surviving replicas first in view order, then the others by when they became whole, then by name. */
static int by_replica_order(const void *a, const void *b)
{
	const replica *x = a, *y = b;
	if (x->is_survivor != y->is_survivor)
		return x->is_survivor ? -1 : 1;
	if (x->is_survivor)
		return x->first_pos < y->first_pos ? -1 : x->first_pos > y->first_pos;
	int c = by_join(x->newest, y->newest);
	return c != 0 ? c : strcmp(x->newest->replica, y->newest->replica);
}

/* Collects the claims of members that declare this size and a valid index, sorted; returns their count. */
static uint32_t collect_claims(const ftl_rdv_member *members, uint32_t n, uint32_t size, claim *claims)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (members[i].replica_size == size && members[i].replica[0] && members[i].replica_index < size)
			claims[k++] = (claim){&members[i], i};
	qsort(claims, k, sizeof *claims, by_replica_index_place);
	return k;
}

/* Drops repeated claims of one (replica, index), keeping the first; groups them into the whole replicas.
 * Returns how many replicas are whole; claims[] is compacted so each replica's members are contiguous. */
static uint32_t find_whole(claim *claims, uint32_t k, uint32_t size, uint32_t n_survivors, replica *out)
{
	uint32_t n_kept = 0, n_whole = 0;
	for (uint32_t i = 0; i < k;) {
		uint32_t start = n_kept, expected = 0;
		const char *name = claims[i].m->replica;
		for (; i < k && strcmp(claims[i].m->replica, name) == 0; i++) {
			if (claims[i].m->replica_index != expected)
				continue; /* a repeated claim of an index, or after a missing one */
			claims[n_kept++] = claims[i];
			expected++;
		}
		if (expected != size) {
			n_kept = start; /* not whole: none of it is kept */
			continue;
		}
		replica r = {.first = start, .first_pos = UINT32_MAX, .is_survivor = true, .newest = claims[start].m};
		for (uint32_t j = start; j < n_kept; j++) {
			r.first_pos = claims[j].pos < r.first_pos ? claims[j].pos : r.first_pos;
			r.is_survivor = r.is_survivor && claims[j].pos < n_survivors;
			r.newest = by_join(claims[j].m, r.newest) > 0 ? claims[j].m : r.newest;
		}
		out[n_whole++] = r;
	}
	return n_whole;
}

/* A job without replicas: keeps, in place and in order, the members that declare none. */
static void keep_unreplicated(ftl_rdv_member *members, uint32_t *alive_index, uint32_t *n, uint32_t *n_survivors)
{
	uint32_t k = 0, surviving = 0;
	for (uint32_t i = 0; i < *n; i++) {
		if (members[i].replica_size != 0)
			continue;
		surviving += i < *n_survivors;
		alive_index[k] = alive_index[i];
		members[k++] = members[i];
	}
	*n = k;
	*n_survivors = surviving;
}

ftl_err rdv_keep_whole_replicas(ftl_rdv_member *members, uint32_t *alive_index, uint32_t *n, uint32_t *n_survivors,
				uint32_t *job_size)
{
	uint32_t count = *n, size = count > 0 ? members[0].replica_size : 0;
	*job_size = size;
	if (size == 0) {
		keep_unreplicated(members, alive_index, n, n_survivors);
		return FTL_OK;
	}
	claim *claims = malloc((count + 1) * sizeof *claims);
	replica *replicas = malloc((count + 1) * sizeof *replicas);
	ftl_rdv_member *kept = malloc((count + 1) * sizeof *kept);
	uint32_t *kept_index = malloc((count + 1) * sizeof *kept_index);
	ftl_err err = FTL_OK;

	if (!claims || !replicas || !kept || !kept_index) {
		err = ftl_diag_set(FTL_ERR_SYSTEM, "rendezvous: out of memory sorting %u members into replicas", count);
		goto out;
	}
	uint32_t n_whole = find_whole(claims, collect_claims(members, count, size, claims), size, *n_survivors,
				      replicas);
	qsort(replicas, n_whole, sizeof *replicas, by_replica_order);
	uint32_t k = 0, surviving = 0;
	for (uint32_t r = 0; r < n_whole; r++) {
		surviving += replicas[r].is_survivor ? size : 0;
		for (uint32_t j = 0; j < size; j++) {
			uint32_t pos = claims[replicas[r].first + j].pos;
			kept[k] = members[pos];
			kept_index[k++] = alive_index[pos];
		}
	}
	memcpy(members, kept, k * sizeof *kept);
	memcpy(alive_index, kept_index, k * sizeof *kept_index);
	*n = k;
	*n_survivors = surviving;
out:
	free(claims);
	free(replicas);
	free(kept);
	free(kept_index);
	return err;
}
