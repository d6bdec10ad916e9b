/* The training's /metrics families (view changes by cause, steps, retries, step, allreduce, sync and
 * recovery times, checkpoints), written with the agent's text writers (metrics_text.h) from a snapshot
 * taken under the agent's lock; the agent appends them to its own (agent_training.h). */
#include "train_metrics.h"

#include "agent/agent_training.h"
#include "training.h"

static void training(ftl_metrics_text *t, const ftl_train_metrics_snapshot *s)
{
	const ftl_train_metrics *m = &s->train;
	ftl_metrics_per_label(t, "ftl_view_changes_total", "counter", "Views this worker adopted, by cause.", "cause",
			      ftl_view_cause_strs, m->views, FTL_VIEW_CAUSE_MAX);
	ftl_metrics_single(t, "ftl_training_steps_total", "counter", "Steps this worker completed.", (double)m->steps);
	ftl_metrics_single(t, "ftl_training_retries_total", "counter", "Steps run again after a failure.",
			   (double)s->retries);
	ftl_metrics_single(t, "ftl_training_step_failures_total", "counter", "Runs of the step that failed.",
			   (double)m->step_failures);
	ftl_metrics_histogram(t, "ftl_training_step_duration_seconds",
			      "Time in the step function, for completed steps.", &m->step_seconds);
	ftl_metrics_histogram(t, "ftl_training_recovery_duration_seconds",
			      "From the first sign of a failure (failed collective or step, member of the view dead or "
			      "gone) to the next completed step.",
			      &m->recovery_seconds);
	ftl_metrics_histogram(t, "ftl_allreduce_duration_seconds", "Completed ftl_allreduce calls.",
			      &m->allreduce_seconds);
	ftl_metrics_single(t, "ftl_allreduce_bytes_total", "counter",
			   "Bytes this rank contributed to completed allreduces.", (double)m->allreduce_bytes);
	ftl_metrics_histogram(t, "ftl_state_sync_duration_seconds", "Completed state syncs from rank 0.",
			      &m->sync_seconds);
	ftl_metrics_single(t, "ftl_state_sync_bytes_total", "counter", "Bytes moved by completed state syncs.",
			   (double)m->sync_bytes);
}

static void checkpoints(ftl_metrics_text *t, const ftl_ckpt_writer_stats *c)
{
	ftl_metrics_single(t, "ftl_checkpoints_written_total", "counter", "Checkpoints made durable by this process.",
			   (double)c->written);
	ftl_metrics_single(t, "ftl_checkpoints_skipped_total", "counter",
			   "Checkpoints skipped (the previous write still running).", (double)c->skipped);
	ftl_metrics_single(t, "ftl_checkpoint_failures_total", "counter", "Checkpoint writes that failed.",
			   (double)c->failed);
	ftl_metrics_single(t, "ftl_checkpoint_last_write_duration_seconds", "gauge",
			   "The last write: seal, write, fsync, rename, fsync of the directory.",
			   (double)c->last_write_us / 1e6);
	ftl_metrics_single(t, "ftl_checkpoint_last_size_bytes", "gauge", "Size of the last checkpoint written.",
			   (double)c->last_bytes);
	ftl_metrics_single(t, "ftl_checkpoint_last_step", "gauge", "Step of the last durable checkpoint.",
			   (double)c->last_step);
}

void ftl_train_metrics_render(ftl_metrics_text *t, const ftl_train_metrics_snapshot *s)
{
	training(t, s);
	if (s->has_checkpoints)
		checkpoints(t, &s->ckpt);
}

void ftl_train_metrics_render_from(ftl_agent *a, ftl_metrics_text *out)
{
	ftl_training *t = ftl_agent_training(a);
	ftl_train_metrics_snapshot s = {0};
	ftl_agent_lock(a);
	s.train = t->metrics;
	s.retries = ftl_agent_views_locked(a)->status.retries;
	ftl_agent_unlock(a);
	s.has_checkpoints = t->ckpt.writer != NULL;
	if (t->ckpt.writer)
		ftl_ckpt_writer_get_stats(t->ckpt.writer, &s.ckpt);
	if (ftl_metrics_text_create(out, 8192) != 0)
		return;
	ftl_train_metrics_render(out, &s);
	ftl_agent_lock(a);
	ftl_pace_metrics_locked(a, out);
	ftl_agent_unlock(a);
}
