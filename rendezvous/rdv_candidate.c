/* The candidate view and the quorum arithmetic (see rdv_candidate.h): the one place that decides ranks. */
#include "rdv_candidate.h"

#include <stdlib.h>
#include <string.h>

#include "rdv_replicas.h"
#include "rdv_view.h"

static int by_name(const void *a, const void *b)
{
	const ftl_rdv_member *x = *(const ftl_rdv_member *const *)a, *y = *(const ftl_rdv_member *const *)b;
	return strcmp(x->name, y->name);
}

/* Join order: smaller generation first, ties by name. */
static int by_join_order(const void *a, const void *b)
{
	const ftl_rdv_member *x = *(const ftl_rdv_member *const *)a, *y = *(const ftl_rdv_member *const *)b;
	if (x->generation != y->generation)
		return x->generation < y->generation ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const ftl_rdv_member *find_alive(const ftl_rdv_member **sorted, size_t n, const char *name)
{
	ftl_rdv_member key;
	const ftl_rdv_member *k = &key, **hit;
	ftl_copy_str(key.name, name, sizeof key.name);
	hit = bsearch(&k, sorted, n, sizeof *sorted, by_name);
	return hit != NULL ? *hit : NULL;
}

static bool is_benched(const ftl_rdv_view *view, const ftl_rdv_member *m)
{
	return view->benched.name[0] && m->generation == view->benched.generation &&
	       strcmp(m->name, view->benched.name) == 0;
}

static bool has_left(const char **sorted_left, size_t n, const char *name)
{
	return bsearch(&name, sorted_left, n, sizeof *sorted_left, by_string) != NULL;
}

void rdv_candidate_free(rdv_candidate *c)
{
	free(c->members);
	free(c->alive_index);
	memset(c, 0, sizeof *c);
}

/* Scratch arrays of one build: the alive list and the left names sorted for lookup, which alive members
 * survive, and the joiners to sort. */
typedef struct build_scratch {
	const ftl_rdv_member **alive_by_name; /* [n_alive] */
	const char **left_sorted;             /* [n_left] */
	bool *is_survivor;                    /* [n_alive], by index into alive */
	const ftl_rdv_member **joiners;       /* alive members that are not survivors */
} build_scratch;

static void scratch_free(build_scratch *s)
{
	free(s->alive_by_name);
	free(s->left_sorted);
	free(s->is_survivor);
	free(s->joiners);
}

/* Starts one build: allocates c's arrays and the scratch, and sorts the lookups. */
static ftl_err build_init(rdv_candidate *c, build_scratch *s, const ftl_rdv_member *alive, size_t n_alive,
			  const char *const *left, size_t n_left)
{
	c->members = malloc((n_alive + 1) * sizeof *c->members);
	c->alive_index = malloc((n_alive + 1) * sizeof *c->alive_index);
	s->alive_by_name = malloc((n_alive + 1) * sizeof *s->alive_by_name);
	s->left_sorted = malloc((n_left + 1) * sizeof *s->left_sorted);
	s->is_survivor = calloc(n_alive + 1, sizeof *s->is_survivor);
	s->joiners = malloc((n_alive + 1) * sizeof *s->joiners);
	if (!c->members || !c->alive_index || !s->alive_by_name || !s->left_sorted || !s->is_survivor || !s->joiners)
		return ftl_diag_set(FTL_ERR_SYSTEM, "rendezvous: out of memory building the candidate view of %zu alive "
				    "members", n_alive);
	for (size_t i = 0; i < n_alive; i++)
		s->alive_by_name[i] = &alive[i];
	qsort(s->alive_by_name, n_alive, sizeof *s->alive_by_name, by_name);
	for (size_t i = 0; i < n_left; i++)
		s->left_sorted[i] = left[i];
	qsort(s->left_sorted, n_left, sizeof *s->left_sorted, by_string);
	return 0;
}

/* How many of n ordered alive members the candidate takes (rdv_candidate.h): max_workers at most, and with
 * spares kept, n - spares (at least 1) unless the view was bigger: its lost members are replaced. */
static uint32_t members_taken(uint32_t n, uint32_t view_n, uint32_t max_workers, uint32_t spares)
{
	uint32_t keep = n;
	if (spares > 0) {
		keep = n > spares ? n - spares : 1;
		keep = keep > view_n ? keep : view_n;
	}
	keep = keep < n ? keep : n;
	return keep < max_workers ? keep : max_workers;
}

ftl_err rdv_candidate_build(rdv_candidate *c, const ftl_rdv_view *view, const ftl_rdv_member *alive,
			    size_t n_alive, const char *const *left, size_t n_left, uint32_t max_workers,
			    uint32_t spares)
{
	build_scratch s = {0};
	size_t n_joiners = 0;
	uint32_t n = 0;
	const ftl_rdv_member *benched = NULL; /* alive and benched: taken last */

	rdv_candidate_free(c);
	ftl_err err = build_init(c, &s, alive, n_alive, left, n_left);
	if (err) {
		rdv_candidate_free(c);
		scratch_free(&s);
		return err;
	}
	for (uint32_t i = 0; i < view->n; i++) {
		const ftl_rdv_member *v = &view->members[i];
		const ftl_rdv_member *a = find_alive(s.alive_by_name, n_alive, v->name);
		bool is_survivor = a != NULL && a->generation == v->generation && !s.is_survivor[a - alive];
		bool is_voter = !has_left(s.left_sorted, n_left, v->name);
		c->electorate += is_voter;
		c->electorate_alive += is_voter && is_survivor; /* benched or not: it is alive, it votes */
		if (is_survivor) {
			s.is_survivor[a - alive] = true;
			if (is_benched(view, a)) {
				benched = a;
				continue;
			}
			c->alive_index[n] = (uint32_t)(a - alive);
			c->members[n++] = *a; /* the alive entry: its address is the current one */
		}
	}
	c->n_survivors = n;
	for (size_t i = 0; i < n_alive; i++)
		if (!s.is_survivor[i]) {
			if (is_benched(view, &alive[i]))
				benched = &alive[i];
			else
				s.joiners[n_joiners++] = &alive[i];
		}
	qsort(s.joiners, n_joiners, sizeof *s.joiners, by_join_order);
	if (benched != NULL)
		s.joiners[n_joiners++] = benched; /* after every joiner: the last spare */
	for (size_t i = 0; i < n_joiners; i++) {
		c->alive_index[n] = (uint32_t)(s.joiners[i] - alive);
		c->members[n++] = *s.joiners[i];
	}
	uint32_t n_alive_ordered = n, replica_size = 0;
	err = rdv_keep_whole_replicas(c->members, c->alive_index, &n, &c->n_survivors, &replica_size);
	if (err) {
		rdv_candidate_free(c);
		scratch_free(&s);
		return err;
	}
	c->n = members_taken(n, view->n, max_workers, spares);
	if (replica_size > 1)
		c->n -= c->n % replica_size; /* whole replicas only */
	c->n_survivors = c->n_survivors < c->n ? c->n_survivors : c->n;
	c->n_spares = n_alive_ordered - c->n;
	c->digest = rdv_members_digest(c->members, c->n);
	c->survivors_digest = rdv_members_digest(c->members, c->n_survivors);
	scratch_free(&s);
	return FTL_OK;
}

uint32_t rdv_quorum_needed(uint32_t electorate)
{
	return electorate == 0 ? 0 : electorate / 2 + 1;
}

bool rdv_candidate_has_quorum(const rdv_candidate *c)
{
	return c->electorate_alive >= rdv_quorum_needed(c->electorate);
}

int rdv_candidate_find(const rdv_candidate *c, const char *name, uint64_t generation)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->members[i].generation == generation && strcmp(c->members[i].name, name) == 0)
			return (int)i;
	return -1;
}
