/* comm_rebuild: the next view's device communicator, by shrinking the last one where every survivor can,
 * else by a fresh init. One call for the training layer (ftl_comm_rebuild); the pure part (the plan) and
 * the agreement (the vote) are separate functions so that tests reach them without a GPU.
 *
 * Why a vote: ncclCommShrink is collective over the survivors of one parent communicator. A survivor that
 * calls it on another parent (it missed a view), or does a fresh init instead (no parent, an NCCL without
 * shrink), leaves the others waiting until their deadline. The plan is the same on every rank (it reads
 * only the two committed views), but what each rank holds is not; so each rank offers the id of the parent
 * it can shrink over the new view's host communicator (tcp, milliseconds), and the ranks shrink only when
 * all offered the same one. Otherwise every rank takes the fresh init from the view's bootstrap. A shrink
 * that fails anyway breaks the view; the next view finds no parent and votes for a fresh init. */
#ifndef FTL_COMM_REBUILD_H
#define FTL_COMM_REBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"

typedef enum ftl_comm_rebuild_path {
	FTL_COMM_REBUILD_INIT,   /* a fresh communicator from cfg (ncclCommInitRankConfig, started) */
	FTL_COMM_REBUILD_SHRINK, /* the old one shrunk (ncclCommShrink) */
	FTL_COMM_REBUILD_PATH_MAX
} ftl_comm_rebuild_path;

extern const char *const ftl_comm_rebuild_path_strs[FTL_COMM_REBUILD_PATH_MAX];

/* The plan, pure: the new view can come from the old communicator by shrink when its members are the old
 * ones with some removed, in the same order (survivors keep their relative order; a joiner, a reorder or
 * a key seen twice needs a fresh init). Keys identify a member incarnation (equal keys: the same process).
 * Writes the old ranks to drop into exclude (room for old_n) and how many into *n_excluded (0: the same
 * members, a rebuild after an abort, which ftl_comm_rebuild does by a fresh init, as NCCL cannot shrink by
 * nobody); FTL_ERR_UNSUPPORTED with the reason in the diag when only a fresh init will do. */
ftl_err ftl_comm_rebuild_plan(const uint64_t *old_keys, int old_n, const uint64_t *new_keys, int new_n, int *exclude,
			      int *n_excluded);

/* The vote over host (every rank of the new view calls it): offer is this rank's parent id, or 0 when it
 * has nothing to shrink. *agreed is true when every rank offered the same nonzero id. */
ftl_err ftl_comm_rebuild_vote(struct ftl_comm *host, uint64_t offer, bool *agreed);

struct ftl_comm_rebuild {
	struct ftl_comm *old;                /* this rank's last device communicator, or NULL; consumed */
	const uint64_t *old_keys;            /* the members of the view old was built for, by rank */
	int old_n;
	const uint64_t *new_keys;            /* the new view's members, by rank */
	int new_n;
	struct ftl_comm *host;               /* the new view's host communicator for the vote; NULL: fresh init */
	const struct ftl_comm_config *cfg;   /* the new view's device communicator (the fresh init's bootstrap;
					      * its comm_id names the result either way) */
};

/* The new view's device communicator in *out: shrunk from rb->old when the plan allows it and the vote
 * agrees, else started from rb->cfg (ftl_comm_start: its first call completes the init, so the caller's
 * state-sync header exchange over the host comm runs meanwhile). rb->old is destroyed either way (its
 * teardown runs off the critical path). *path says which way was taken. On failure *out is NULL and the diag
 * says why; the error is the comm's (a lost peer in the vote or the shrink is FTL_ERR_PEER_LOST or
 * FTL_ERR_TIMEOUT, as for a failed build). */
ftl_err ftl_comm_rebuild(const struct ftl_comm_rebuild *rb, struct ftl_comm **out, ftl_comm_rebuild_path *path);

#endif /* FTL_COMM_REBUILD_H */
