/* Copies of views (ftl_rdv_view_copy: rendezvous.h, with the ownership rules), and the 64-bit digests
 * that let peers compare candidates and views without sending them. A digest is FNV-1a over the ordered
 * (name, generation) pairs (and, for a view, the epoch and blob): not collision-proof against an attacker,
 * but every message is authenticated by the cluster key before it gets here. Internal to rendezvous/. */
#ifndef FTL_RDV_VIEW_H
#define FTL_RDV_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "rendezvous.h"

/* The index of (name, generation) in v, or -1 when absent. O(n). */
int rdv_view_find(const ftl_rdv_view *v, const char *name, uint64_t generation);

uint64_t rdv_members_digest(const ftl_rdv_member *members, uint32_t n);
/* 0 for "no view" (epoch 0), so that two members without a view agree. */
uint64_t rdv_view_digest(const ftl_rdv_view *v);

/* What two nodes compare to find out whose view supersedes whose (every message carries the sender's). */
typedef struct rdv_view_id {
	uint64_t epoch;             /* 0: no view, superseded by any */
	uint64_t lineage;           /* the cluster the view descends from */
	uint64_t digest;            /* rdv_view_digest */
	uint32_t n;                 /* members */
	uint64_t steps;             /* the lineage's completed training steps, as its holder knows them */
} rdv_view_id;

rdv_view_id rdv_view_id_of(const ftl_rdv_view *v, uint64_t steps);
/* > 0 when a supersedes b, 0 when they are the same view. Within one lineage (or when either has no view):
 * by epoch, then digest (a tie-break that Paxos makes unnecessary). Across lineages, whichever has done more
 * work: by steps, then size, then lineage (rendezvous.h); epochs of two lineages say nothing. */
int rdv_view_id_cmp(const rdv_view_id *a, const rdv_view_id *b);

#endif
