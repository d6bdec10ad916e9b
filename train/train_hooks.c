/* The training layer's side of the seam with the agent (agent/agent_training.h): the calls the agent makes
 * into training without knowing it, registered on the agent with its training state (ftl_training_of). Each
 * one hands over to the file that owns the work: the comm listener and the registry (training.c), the
 * metrics (train_metrics.c), the checkpoints (checkpoint.c, checkpoint_leave.c). */
#include "agent/agent_training.h"

#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "base/diag.h"
#include "base/fork_fds.h"
#include "comm_members.h"
#include "training.h"

/* The coordinator's bootstrap blob for a view about to be committed: the NCCL unique id of its rank 0. */
static ftl_err make_blob(void *ctx, uint64_t epoch, uint8_t *blob, size_t cap, size_t *len)
{
	ftl_agent *a = ctx;
	*len = 0;
	if (ftl_agent_training(a)->cfg.backend != FTL_COMM_NCCL)
		return FTL_OK;
	ftl_err e = ftl_comm_nccl_unique_id(blob, cap);
	if (e != FTL_OK) {
		ftl_log(ftl_agent_logger(a), FTL_LOG_ERROR, "rendezvous",
			FTL_MSG("cannot make the NCCL unique id for view %llu: %s", (unsigned long long)epoch,
				ftl_diag_message()),
			FTL_F_UINT("epoch", epoch), FTL_F_STR("error", ftl_diag_message()));
		return e;
	}
	*len = FTL_COMM_NCCL_ID_LEN;
	return FTL_OK;
}

static void node_options(ftl_agent *a, ftl_node_options *o)
{
	ftl_training *t = ftl_agent_training(a);
	o->is_training = true;
	o->data_addr = ftl_agent_data_addr(a);
	o->rdv = (ftl_rdv_config){
		.min_workers = t->cfg.min_workers,
		.max_workers = t->cfg.max_workers,
		.settle_us = t->cfg.settle_ms * 1000,
		.ready_interval_us = ftl_agent_ready_interval_us(a),
		.expected_workers = t->cfg.expected_workers,
		.expected_wait_us = t->cfg.expected_wait_ms * 1000,
		.spares = t->cfg.spares,
	};
	o->blob_cb = make_blob;
	o->blob_ctx = a;
}

/* A view was committed that keeps every member of the tcp communicator in use: a join (or spares taken
 * in). The step in flight is left to finish in its view rather than aborted and run again, so a join costs
 * the running workers no part of a step; the training thread moves to the new view at its next step, and
 * drops the old communicators first, so that a member still waiting in the old view's collective loses it
 * as a peer at once (connection closed) and runs its step again in the new view, rolled back by the state
 * sync if need be. NCCL is aborted whatever the view: a rank in a kernel of the old comm would wait for its
 * peers until the collective timeout. */
static bool is_join_locked(ftl_agent *a, const ftl_training *t)
{
	const ftl_rdv_view *v = &ftl_agent_views_locked(a)->view;
	return t->cfg.backend == FTL_COMM_TCP && t->comm_keys && v->self_rank >= 0 &&
	       ftl_comm_members_all_in(t->comm_keys, t->comm_n, v);
}

static void abort_locked(ftl_agent *a, const char *why, bool is_member_gone)
{
	ftl_training *t = ftl_agent_training(a);
	if (!t->comm)
		return;
	if (is_member_gone)
		ftl_train_metrics_disrupted_locked(&t->metrics, ftl_agent_now_us(a));
	else if (is_join_locked(a, t)) {
		ftl_log(ftl_agent_logger(a), FTL_LOG_INFO, "training",
			FTL_MSG("a view with every member of this communicator's and more (%s): the step in flight "
				"finishes in it", why), FTL_F_STR("why", why));
		return;
	}
	ftl_log(ftl_agent_logger(a), FTL_LOG_INFO, "training", FTL_MSG("aborting the collectives in progress: %s", why),
		FTL_F_STR("why", why));
	ftl_training_abort_comms_locked(t);
}

static void view_status_locked(ftl_agent *a, json_t *view)
{
	ftl_train_metrics_status_locked(&ftl_agent_training(a)->metrics, view);
	ftl_pace_status_locked(a, view);
}

static void status(ftl_agent *a, json_t *status)
{
	ftl_training *t = ftl_agent_training(a);
	json_object_set_new(status, "checkpoint", ftl_checkpoint_status_json(&t->ckpt));
	json_object_set_new(status, "execute",
			    json_pack("{s:s}", "state", ftl_exec_state_strs[ftl_exec_get_state(&t->exec)]));
}

static void training_free(ftl_agent *a)
{
	ftl_training *t = ftl_agent_training(a);
	ftl_checkpoint_teardown(&t->ckpt); /* a write in progress finishes first */
	ftl_subgroups_free(t);
	if (t->ctrl_comm != t->comm)
		ftl_comm_delete(t->ctrl_comm);
	ftl_comm_delete(t->comm);
	free(t->comm_keys);
	if (t->data_fd >= 0) {
		ftl_fork_fds_remove(t->data_fd);
		close(t->data_fd);
	}
	ftl_exec_destroy(&t->exec);
	ftl_state_free(&t->state);
	ftl_pace_free(&t->pace);
	ftl_comm_time_destroy(&t->comm_time);
	free(t);
	ftl_agent_detach_training(a);
}

const ftl_agent_training_ops ftl_training_hooks = {
	.listen = ftl_agent_data_listen,
	.node_options = node_options,
	.abort_locked = abort_locked,
	.view_locked = ftl_train_metrics_view_locked,
	.view_status_locked = view_status_locked,
	.status = status,
	.metrics = ftl_train_metrics_render_from,
	.before_leave = ftl_checkpoint_before_leaving,
	.free = training_free,
};
