/* subgroups: communicators over some ranks of the view in use (ftl_subgroup_new, include/ftl/execute.h).
 *
 * A subgroup is split from the training's communicator in use (ftl_comm_split), on the same listener, and
 * belongs to it: the agent aborts it with that communicator (a member died, the view changed) and a
 * program makes it again in the next view; a join that lets the step in flight finish in the old view
 * leaves both alone. Its build is cancelled as soon as that communicator is aborted or replaced, so a
 * member that moved on never holds the others to the connect deadline. */
#include "agent/agent_training.h"

#include <stdlib.h>

#include "comm/comm.h"
#include "training.h"

#define SUBGROUP_CONNECT_TIMEOUT_MS 10000

/* What a subgroup's build watches: the communicator it is split from (aborted when its view is given up)
 * and the agent (stopping). */
struct parent_of {
	ftl_agent *a;
	ftl_comm *parent;
};

static int is_given_up(void *arg)
{
	const struct parent_of *p = arg;
	ftl_agent_lock(p->a);
	bool gone = ftl_agent_is_gone_locked(p->a) || ftl_agent_training(p->a)->comm != p->parent ||
		    ftl_comm_is_aborted(p->parent);
	ftl_agent_unlock(p->a);
	return gone;
}

/* Under the lock: files a subgroup so that the view's abort reaches it; FTL_ERR_SYSTEM (the diag says so)
 * when out of memory. */
static ftl_err keep_locked(ftl_training *t, ftl_comm *sub)
{
	if (t->n_subgroups == t->subgroups_cap) {
		int cap = t->subgroups_cap ? 2 * t->subgroups_cap : 4;
		ftl_comm **grown = realloc(t->subgroups, (size_t)cap * sizeof(*grown));
		if (grown == NULL)
			return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory filing subgroup %d", t->n_subgroups + 1);
		t->subgroups = grown;
		t->subgroups_cap = cap;
	}
	t->subgroups[t->n_subgroups++] = sub;
	return FTL_OK;
}

ftl_err ftl_subgroup_new(ftl_agent *a, const int *ranks, int n, ftl_comm **out)
{
	ftl_training *t = ftl_training_of(a);
	if (out != NULL)
		*out = NULL;
	if (t == NULL || out == NULL)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_subgroup_new: %s", t == NULL ? "out of memory" : "out is NULL");
	ftl_agent_lock(a);
	struct parent_of parent = {a, t->comm};
	ftl_agent_unlock(a);
	if (parent.parent == NULL)
		return ftl_training_fail(t, FTL_ERR_INVALID, "ftl: ftl_subgroup_new: no communicator yet (make subgroups "
					 "inside ftl_execute, or after the first step)");
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.listen_fd = t->data_fd;
	cfg.timeout_ms = t->cfg.collective_timeout_ms;
	cfg.connect_timeout_ms = SUBGROUP_CONNECT_TIMEOUT_MS;
	cfg.shm = t->cfg.comm_shm;
	cfg.shm_slot_bytes = (size_t)t->cfg.comm_shm_slot_kb << 10;
	cfg.is_cancelled = is_given_up;
	cfg.cancel_arg = &parent;
	ftl_comm *sub = NULL;
	ftl_err e = ftl_comm_split(parent.parent, ranks, n, &cfg, &sub);
	if (e != FTL_OK)
		return ftl_training_fail(t, e, "ftl: ftl_subgroup_new: %s", ftl_error_message());
	ftl_agent_lock(a);
	bool is_same_view = t->comm == parent.parent && !ftl_comm_is_aborted(parent.parent);
	ftl_err kept = is_same_view ? keep_locked(t, sub) : FTL_OK;
	ftl_agent_unlock(a);
	if (!is_same_view || kept != FTL_OK) {
		ftl_comm_delete(sub);
		if (kept != FTL_OK)
			return ftl_training_fail(t, kept, "ftl: ftl_subgroup_new: %s", ftl_diag_message());
		return ftl_training_fail(t, FTL_ERR_PEER_LOST, "ftl: ftl_subgroup_new: the view changed while the "
					 "subgroup was built");
	}
	*out = sub;
	return FTL_OK;
}

void ftl_subgroup_delete(ftl_agent *a, ftl_comm *sub)
{
	ftl_training *t = ftl_agent_training(a);
	if (sub == NULL || t == NULL)
		return;
	ftl_agent_lock(a);
	for (int i = 0; i < t->n_subgroups; i++)
		if (t->subgroups[i] == sub) {
			t->subgroups[i] = t->subgroups[--t->n_subgroups];
			break;
		}
	ftl_agent_unlock(a);
	ftl_comm_delete(sub);
}

void ftl_subgroups_abort_locked(ftl_training *t)
{
	for (int i = 0; i < t->n_subgroups; i++)
		ftl_comm_abort(t->subgroups[i]);
}

void ftl_subgroups_hang_up_locked(ftl_training *t)
{
	for (int i = 0; i < t->n_subgroups; i++)
		ftl_comm_hang_up(t->subgroups[i]);
}

void ftl_subgroups_free(ftl_training *t)
{
	for (int i = 0; i < t->n_subgroups; i++)
		ftl_comm_delete(t->subgroups[i]);
	free(t->subgroups);
	t->subgroups = NULL;
	t->n_subgroups = t->subgroups_cap = 0;
}
