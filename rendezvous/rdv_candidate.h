/* The candidate view and the quorum rule, as pure functions of (current view, alive members, left names).
 *
 * Ordering (docs/concepts/views.md, Ranks): the view's survivors first, in their order in the view (so rank 0 is the
 * oldest survivor and survivors keep their relative order), then joiners in join order: smaller
 * generation first (started earlier), ties by name. A member is a survivor when the alive list has its
 * name with the same generation; a restarted member (same name, new generation) is a joiner. At most
 * max_workers are in the candidate; the rest are hot spares, first in line being the oldest joiner, so a
 * spare takes a dead member's place (as the last rank) in the next view. Never ordered by address.
 *
 * Benched (the view's `benched`: a member the others waited for, ftl_rdv_request_bench): that life of it is
 * neither a survivor nor a joiner in its order but the last of all, after every joiner; it still counts
 * in the quorum as alive. So a spare takes its place in the next view, and it waits as the last spare.
 *
 * Spares kept (FTL_SPARES = k): the candidate also leaves out the k youngest alive members, but never has
 * fewer members than the view while there are enough alive. So a new member makes the oldest spare a
 * member and waits in its place (the job grows by a warm worker, at once), and a member that dies or
 * leaves (a drained node) is replaced by a spare. Kubernetes removes the newest pods first when scaled
 * down, which are the spares: the view shrinks once they are gone. With fewer than k+1 alive, the
 * candidate keeps one, so a job never stands still with only spares.
 *
 * Quorum: the electorate is the view's members that did not leave gracefully; a new view needs a strict
 * majority of them alive (none needed when the electorate is empty: no view yet, or all others left).
 * Internal to rendezvous/. */
#ifndef FTL_RDV_CANDIDATE_H
#define FTL_RDV_CANDIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rendezvous.h"

typedef struct rdv_candidate {
	ftl_rdv_member *members;    /* [n], owned: survivors in view order, then joiners in join order */
	uint32_t *alive_index;      /* [n], owned: where each member stands in the alive list it was built from */
	uint32_t n;                 /* at most max_workers */
	uint32_t n_survivors;       /* members[0..n_survivors) are the view's survivors */
	uint32_t n_spares;          /* alive members left out by max_workers */
	uint32_t electorate;        /* view members that did not leave gracefully: the quorum denominator */
	uint32_t electorate_alive;  /* of them, alive now */
	uint64_t digest;            /* of members[0..n) */
	uint64_t survivors_digest;  /* of members[0..n_survivors) */
} rdv_candidate;

/* Builds c (freeing what it held) from the view, the alive members (names unique, any order) and the names
 * of members that left gracefully, with at most max_workers members and `spares` kept (above).
 * O((n_alive + n_left) log n + view). FTL_OK, or FTL_ERR_SYSTEM when out of memory (c empty). */
ftl_err rdv_candidate_build(rdv_candidate *c, const ftl_rdv_view *view, const ftl_rdv_member *alive,
			    size_t n_alive, const char *const *left, size_t n_left, uint32_t max_workers,
			    uint32_t spares);
void rdv_candidate_free(rdv_candidate *c);

/* Strict majority of the electorate; 0 for an empty one. */
uint32_t rdv_quorum_needed(uint32_t electorate);
bool rdv_candidate_has_quorum(const rdv_candidate *c);
/* The index of (name, generation) in the candidate, or -1 when absent. O(n). */
int rdv_candidate_find(const rdv_candidate *c, const char *name, uint64_t generation);

#endif
