/* comm_rebuild: shrink where every survivor can, else a fresh init (the why is in comm_rebuild.h). */
#include "comm_rebuild.h"

#include <stdio.h>
#include <stdlib.h>

const char *const ftl_comm_rebuild_path_strs[FTL_COMM_REBUILD_PATH_MAX] = {
	[FTL_COMM_REBUILD_INIT] = "init",
	[FTL_COMM_REBUILD_SHRINK] = "shrink",
};

/* O(old_n): one walk over the old members, matching the new ones in order. */
ftl_err ftl_comm_rebuild_plan(const uint64_t *old_keys, int old_n, const uint64_t *new_keys, int new_n, int *exclude,
			      int *n_excluded)
{
	if (new_n < 1 || new_n > old_n)
		return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "the new view has %d members and the old %d: "
					  "members joined, so a fresh init", new_n, old_n);
	int matched = 0, n = 0;
	for (int i = 0; i < old_n; i++) {
		if (matched < new_n && old_keys[i] == new_keys[matched])
			matched++;
		else
			exclude[n++] = i;
	}
	if (matched < new_n)
		return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "new rank %d (key %016llx) is not a survivor of "
					  "the old view in rank order (a joiner or a reordering), so a fresh init", matched,
					  (unsigned long long)new_keys[matched]);
	*n_excluded = n;
	return FTL_OK;
}

ftl_err ftl_comm_rebuild_vote(struct ftl_comm *host, uint64_t offer, bool *agreed)
{
	*agreed = false;
	int64_t mine = (int64_t)offer;
	int64_t *all = malloc(sizeof(*all) * (size_t)host->world_size);
	if (all == NULL)
		return ftl_comm_fail(host, FTL_ERR_SYSTEM, false, "rebuild vote: out of memory");
	ftl_err e = ftl_comm_allgather(host, &mine, all, 1, FTL_I64);
	if (e == FTL_OK) {
		bool is_same = offer != 0;
		for (int i = 0; is_same && i < host->world_size; i++)
			is_same = all[i] == mine;
		*agreed = is_same;
	}
	free(all);
	return e;
}

/* This rank's offer: the old communicator's id when the plan allows a shrink and the backend and the
 * runtime can do it (exclude and *n_excluded filled), else 0. */
static uint64_t offer_of(const struct ftl_comm_rebuild *rb, int *exclude, int *n_excluded)
{
	*n_excluded = 0;
	if (rb->old == NULL || rb->old->comm_id == 0 || !ftl_comm_can_shrink(rb->old) || rb->old_keys == NULL ||
	    rb->new_keys == NULL || rb->old_n != rb->old->world_size ||
	    ftl_comm_rebuild_plan(rb->old_keys, rb->old_n, rb->new_keys, rb->new_n, exclude, n_excluded) != FTL_OK)
		return 0;
	/* The same members (a rebuild after an abort): NCCL cannot shrink by nobody, so a fresh init. */
	return *n_excluded > 0 ? rb->old->comm_id : 0;
}

static ftl_err shrink(const struct ftl_comm_rebuild *rb, const int *exclude, int n_excluded, struct ftl_comm **out)
{
	ftl_err e = ftl_comm_shrink(rb->old, exclude, n_excluded, out);
	if (e != FTL_OK)
		return ftl_comm_fail_diag(e, "%s", ftl_comm_error(rb->old) + 5);
	if ((*out)->rank != rb->cfg->rank || (*out)->world_size != rb->cfg->world_size) {
		e = ftl_comm_fail_diag(FTL_ERR_INVALID, "shrink gave rank %d of %d, the view says %d of %d",
				      (*out)->rank, (*out)->world_size, rb->cfg->rank, rb->cfg->world_size);
		ftl_comm_delete(*out);
		*out = NULL;
		return e;
	}
	(*out)->comm_id = rb->cfg->comm_id;
	if (rb->cfg->timeout_ms > 0)
		(*out)->timeout_ms = rb->cfg->timeout_ms;
	(*out)->peer_reset_cb = rb->cfg->peer_reset_cb;
	(*out)->peer_reset_arg = rb->cfg->peer_reset_arg;
	(*out)->stall_hint_ms = rb->cfg->stall_hint_ms;
	return FTL_OK;
}

ftl_err ftl_comm_rebuild(const struct ftl_comm_rebuild *rb, struct ftl_comm **out, ftl_comm_rebuild_path *path)
{
	*out = NULL;
	*path = FTL_COMM_REBUILD_INIT;
	ftl_err e = FTL_OK;
	int *exclude = malloc(sizeof(int) * (size_t)(rb->old_n > 0 ? rb->old_n : 1));
	if (exclude == NULL) {
		e = ftl_comm_fail_diag(FTL_ERR_SYSTEM, "rebuild: out of memory");
		goto done;
	}
	if (rb->host != NULL && (rb->host->rank != rb->cfg->rank || rb->host->world_size != rb->cfg->world_size)) {
		e = ftl_comm_fail_diag(FTL_ERR_INVALID, "rebuild: the host communicator is rank %d of %d, "
				      "the device one %d of %d: build both for the same view", rb->host->rank,
				      rb->host->world_size, rb->cfg->rank, rb->cfg->world_size);
		goto done;
	}
	int n_excluded;
	uint64_t offer = offer_of(rb, exclude, &n_excluded);
	bool agreed = false;
	if (rb->host != NULL && (e = ftl_comm_rebuild_vote(rb->host, offer, &agreed)) != FTL_OK) {
		ftl_comm_fail_diag(e, "rebuild: the vote on shrink or init failed: %s",
				  ftl_comm_error(rb->host) + 5);
		goto done;
	}
	if (agreed) {
		*path = FTL_COMM_REBUILD_SHRINK;
		e = shrink(rb, exclude, n_excluded, out);
	} else {
		e = ftl_comm_start(rb->cfg, out);
	}
done:
	ftl_comm_delete(rb->old);
	free(exclude);
	return e;
}
