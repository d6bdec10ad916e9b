/* The alive members as this node last heard from membership, sorted by name, each with what the
 * rendezvous remembers about it: since when it is alive (a joiner's settle clock), and, on the
 * coordinator, its latest ready and when it was last asked for one. Internal to rendezvous/. */
#ifndef FTL_RDV_PEERS_H
#define FTL_RDV_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rendezvous.h"

typedef struct rdv_peer {
	int64_t seen_since_us;       /* first seen alive (this generation): its settle time starts here */
	int64_t polled_us;           /* the coordinator last asked it for a ready (INT64_MIN: never) */
	bool is_reported;            /* the report fields below hold its latest ready */
	uint64_t report_epoch;       /* the view epoch that ready was sent from */
	uint64_t report_view_digest; /* and that view's digest */
	uint64_t report_candidate;   /* its candidate's digest */
	uint64_t report_survivors;   /* the digest of its candidate's survivors alone */
} rdv_peer;

typedef struct rdv_name_key rdv_name_key;

typedef struct rdv_peers {
	ftl_rdv_member *members;     /* [n], sorted by name, names unique; self included */
	rdv_peer *state;             /* [n], parallel to members */
	uint32_t n;
	uint32_t cap;                /* of members and state */
	/* Kept between updates (a node of a thousand members is fed many times a second): the previous list's
	 * arrays, which the next update fills, and the sort's scratch. */
	ftl_rdv_member *spare_members;
	rdv_peer *spare_state;
	uint32_t spare_cap;
	rdv_name_key *keys;
	uint32_t keys_cap;
} rdv_peers;

/* Replaces the list with alive[0..n_alive) plus self (when absent), keeping the state of every member
 * whose (name, generation) stays; a duplicate name keeps the larger generation; at most
 * FTL_RDV_MAX_MEMBERS are kept (self first, then in the order given). O(n log n) integer comparisons (a
 * name's first bytes decide most) and one pass over the old list; no allocation once the arrays are large
 * enough. FTL_OK, or FTL_ERR_SYSTEM when out of memory (the list is unchanged). */
ftl_err rdv_peers_update(rdv_peers *p, int64_t now_us, const ftl_rdv_member *alive, size_t n_alive,
			 const ftl_rdv_member *self);
/* The index of name, or -1 when absent. O(log n). */
int rdv_peers_find(const rdv_peers *p, const char *name);
void rdv_peers_free(rdv_peers *p);

#endif
