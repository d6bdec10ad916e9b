/* Whole replicas: the view of a job whose model is sharded (HSDP: each replica holds the whole model in
 * replica_size shards, one per member). A replica trains only when every shard of it is there, so the
 * candidate (rdv_candidate.h) keeps whole replicas only; a member of a replica that lost a shard, or whose
 * partners have not started, waits as a spare of its own replica until the replica is whole again.
 *
 * Order: the replicas whose members all survive (same names and generations as in the view) first, in
 * their order in the view; then the others by their newest member's generation (when the replica became
 * whole), ties by replica name; inside a replica by index. So rank = replica's rank * size + index, a
 * surviving replica keeps its index-to-member map and the survivors stay a prefix in view order, as the
 * rendezvous's settle rule needs.
 *
 * The job's replica size is that of the first member of the ordered list: the oldest survivor, who has the
 * view's, or with no survivor the oldest joiner. A member that declares another size (or none, or an index
 * out of range) is never in the view, nor is a second member claiming a (replica, index) already held: the
 * first in the ordered list (a survivor, or the older) keeps it. In a job of size 0 (no replicas) the members
 * that declare a replica are the ones left out. Internal to rendezvous/. */
#ifndef FTL_RDV_REPLICAS_H
#define FTL_RDV_REPLICAS_H

#include <stdint.h>

#include "rendezvous.h"

/* Keeps, of members[0..*n) (survivors first, *n_survivors of them, then joiners in join order) and the
 * alive_index beside them, the members of whole replicas of the job's size, in the order above (size 0: the
 * members that declare none, in their order); *n and *n_survivors become the kept members and the prefix of
 * them in surviving replicas. The job's size into *size. O(n log n). FTL_OK, or FTL_ERR_SYSTEM when out of
 * memory (the arrays unchanged). */
ftl_err rdv_keep_whole_replicas(ftl_rdv_member *members, uint32_t *alive_index, uint32_t *n, uint32_t *n_survivors,
				uint32_t *size);

#endif
