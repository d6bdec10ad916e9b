/* The states of ftl_execute and the transitions between them (the why is in exec_machine.h). Every
 * transition goes through enter(); every failure of a view goes through move_on(). */
#include "exec_machine.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "global_batch.h"
#include "base/log.h"

const char *const ftl_exec_state_strs[FTL_EXEC_STATE_MAX] = {
	"idle", "waiting_for_view", "building_comm", "syncing", "running", "backing_off", "failed",
};

/* Which part of a view failed: its setup (build, sync) or the step itself. */
typedef enum failure_kind { FAILED_SETUP, FAILED_STEP } failure_kind;

/* The transitions there are: the picture in exec_machine.h as a table. */
static const uint16_t next_states[FTL_EXEC_STATE_MAX] = {
	[FTL_EXEC_IDLE] = 1u << FTL_EXEC_WAITING_FOR_VIEW,
	[FTL_EXEC_FAILED] = 1u << FTL_EXEC_WAITING_FOR_VIEW,
	[FTL_EXEC_WAITING_FOR_VIEW] = 1u << FTL_EXEC_BUILDING_COMM | 1u << FTL_EXEC_RUNNING | 1u << FTL_EXEC_FAILED,
	[FTL_EXEC_BUILDING_COMM] = 1u << FTL_EXEC_SYNCING | 1u << FTL_EXEC_BACKING_OFF | 1u << FTL_EXEC_FAILED,
	[FTL_EXEC_SYNCING] = 1u << FTL_EXEC_RUNNING | 1u << FTL_EXEC_BACKING_OFF | 1u << FTL_EXEC_FAILED,
	[FTL_EXEC_RUNNING] = 1u << FTL_EXEC_IDLE | 1u << FTL_EXEC_BACKING_OFF | 1u << FTL_EXEC_FAILED,
	[FTL_EXEC_BACKING_OFF] = 1u << FTL_EXEC_WAITING_FOR_VIEW,
};

bool ftl_exec_is_transition(ftl_exec_state from, ftl_exec_state to)
{
	return from < FTL_EXEC_STATE_MAX && to < FTL_EXEC_STATE_MAX && (next_states[from] >> to & 1u);
}

static void enter(ftl_exec *m, ftl_exec_state s)
{
	assert(ftl_exec_is_transition(ftl_exec_get_state(m), s));
	atomic_store_explicit(&m->state, (int)s, memory_order_relaxed);
}

static bool is_peer_error(ftl_err e) { return e == FTL_ERR_PEER_LOST || e == FTL_ERR_TIMEOUT || e == FTL_ERR_ABORTED; }

/* The call ends with e (its message in last_error), said in the log unless whoever failed said it already
 * (a checkpoint that cannot resume) or it is the step's own error, which the program reports. */
static void fail(ftl_exec *m, ftl_err e, bool is_logged)
{
	m->last_error.code = e;
	ftl_kept_error_to_diag(&m->last_error); /* the calling thread's diag says it too */
	m->result = e;
	enter(m, FTL_EXEC_FAILED);
	if (is_logged)
		ftl_log(m->log, FTL_LOG_ERROR, "training", m->last_error.message, FTL_F_STR("error", ftl_strerror(e)));
}

static void failf(ftl_exec *m, ftl_err e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void failf(ftl_exec *m, ftl_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ftl_kept_error_vset(&m->last_error, e, fmt, ap);
	va_end(ap);
	fail(m, e, true);
}

/* A hook's result: on failure the reason it left in the diag becomes the machine's last error. */
static ftl_err kept(ftl_exec *m, ftl_err e)
{
	if (e != FTL_OK)
		ftl_kept_error_from_diag(&m->last_error);
	return e;
}

void ftl_exec_create(ftl_exec *m, const ftl_exec_retry_policy *policy, ftl_state_registry *reg,
		     const ftl_logger *log)
{
	memset(m, 0, sizeof(*m));
	atomic_init(&m->state, FTL_EXEC_IDLE);
	m->policy = *policy;
	m->reg = reg;
	m->log = log;
}

void ftl_exec_set_feed(ftl_exec *m, const ftl_view_feed_ops *ops, void *ctx)
{
	m->feed = ops;
	m->feed_ctx = ctx;
}

void ftl_exec_set_factory(ftl_exec *m, const ftl_comm_factory_ops *ops, void *ctx)
{
	m->factory = ops;
	m->factory_ctx = ctx;
}

void ftl_exec_set_checkpoints(ftl_exec *m, const ftl_exec_checkpoint_ops *ops, void *ctx)
{
	m->ckpt = ops;
	m->ckpt_ctx = ctx;
}

void ftl_exec_destroy(ftl_exec *m)
{
	ftl_agent_view_clear(&m->view);
}

static int64_t now_us(ftl_exec *m) { return m->feed->now_us(m->feed_ctx); }

static void drop_comms(ftl_exec *m)
{
	m->factory->drop(m->factory_ctx);
	m->comms = (ftl_comm_pair){0};
	m->comm_seq = 0;
}

/* What a view just taken needs: its communicators (then a state sync), or nothing but the step. */
static ftl_exec_state after_wait(const ftl_exec *m)
{
	if (m->comm_seq != m->view.seq)
		return FTL_EXEC_BUILDING_COMM;
	/* communicators are kept only for the view whose state sync completed: every failure drops them */
	assert(m->synced_seq == m->view.seq);
	return FTL_EXEC_RUNNING;
}

/* A build or sync of the view failed with a peer error: a failed attempt of the step only when the view is
 * still the newest and such failures have lasted longer than a collective may take. */
static bool is_setup_failure_counted(ftl_exec *m)
{
	int64_t now = now_us(m);
	if (!m->setup_failing_since_us)
		m->setup_failing_since_us = now;
	return m->feed->is_newest(m->feed_ctx, m->view.seq) &&
	       now - m->setup_failing_since_us > m->policy.setup_grace_us;
}

/* The one way out of a view that failed here: errors that are not about a peer end the call; counted
 * failures spend a retry; otherwise the view is dropped and the machine backs off until a newer one comes
 * (or the same members under a new epoch, asked for after the kind's delay). */
static void move_on(ftl_exec *m, ftl_err e, failure_kind kind)
{
	if (!is_peer_error(e)) {
		fail(m, e, kind == FAILED_SETUP);
		return;
	}
	bool is_counted = kind == FAILED_STEP || is_setup_failure_counted(m);
	if (is_counted && ++m->failures > m->policy.max_retries) {
		failf(m, e, "ftl: step %llu failed %d times (FTL_MAX_RETRIES=%d); last error: %s",
		      (unsigned long long)m->reg->step, m->failures, m->policy.max_retries, m->last_error.message);
		return;
	}
	int64_t after_us = m->policy.setup_failure_rebuild_us;
	if (kind == FAILED_STEP) {
		ftl_log(m->log, FTL_LOG_WARN, "training",
			FTL_MSG("step %llu failed in view %llu (%s): %s; waiting for the next view",
				(unsigned long long)m->reg->step, (unsigned long long)m->view.epoch, ftl_strerror(e),
				m->last_error.message),
			FTL_F_UINT("step", m->reg->step), FTL_F_UINT("epoch", m->view.epoch),
			FTL_F_STR("error", ftl_strerror(e)), FTL_F_STR("why", m->last_error.message));
		m->synced_seq = 0; /* everyone re-syncs from rank 0 after a failed step, in whatever view comes next */
		after_us = m->policy.step_failure_rebuild_us;
	} else {
		ftl_log(m->log, FTL_LOG_INFO, "training",
			FTL_MSG("view %llu not set up here (%s): %s; waiting for the next view",
				(unsigned long long)m->view.epoch, ftl_strerror(e), m->last_error.message),
			FTL_F_UINT("epoch", m->view.epoch), FTL_F_STR("error", ftl_strerror(e)),
			FTL_F_STR("why", m->last_error.message));
	}
	m->abandoned = (ftl_abandoned_view){.seq = m->view.seq, .rebuild_at_us = now_us(m) + after_us};
	drop_comms(m);
	enter(m, FTL_EXEC_BACKING_OFF);
}

/* After a wait: a worker the job went on without holds a stale state (exec_machine.h, take_left_out). */
static void drop_state_if_left_out(ftl_exec *m)
{
	if (!m->feed->take_left_out || !m->feed->take_left_out(m->feed_ctx) || !m->reg->has_state)
		return;
	ftl_log(m->log, FTL_LOG_INFO, "training",
		FTL_MSG("the job went on without this worker after step %llu (a spare since): that state is stale and "
			"is not used; the job's state comes from its rank 0", (unsigned long long)m->reg->step),
		FTL_F_UINT("step", m->reg->step));
	m->reg->has_state = false;
}

static void wait_for_view(ftl_exec *m)
{
	ftl_err e = kept(m, m->feed->wait(m->feed_ctx, &m->abandoned, &m->view));
	drop_state_if_left_out(m);
	if (e != FTL_OK)
		fail(m, e, true);
	else
		enter(m, after_wait(m));
}

static void build_comm(ftl_exec *m)
{
	drop_comms(m);
	ftl_err e = kept(m, m->factory->build(m->factory_ctx, &m->view, &m->comms));
	if (e != FTL_OK) {
		move_on(m, e, FAILED_SETUP);
		return;
	}
	m->comm_seq = m->view.seq;
	enter(m, FTL_EXEC_SYNCING);
}

/* After the state sync of a view of another lineage than the last one synced: this worker's steps were
 * just replaced by the other lineage's state. Said at warn level with both step counts. */
static void warn_if_lineage_changed(ftl_exec *m, uint64_t steps_before)
{
	const ftl_rdv_view *w = &m->view;
	if (m->synced_lineage != 0 && m->synced_lineage != w->lineage && steps_before > 0) {
		ftl_log(m->log, FTL_LOG_WARN, "training",
			FTL_MSG("merged into another lineage: this worker's job had run %llu steps, the job it joined "
				"%llu; ours are discarded (two clusters formed apart; FTL_EXPECTED_WORKERS prevents it "
				"at start)",
				(unsigned long long)steps_before, (unsigned long long)m->reg->step),
			FTL_F_HEX("old_lineage", m->synced_lineage), FTL_F_UINT("old_steps", steps_before),
			FTL_F_HEX("new_lineage", w->lineage), FTL_F_UINT("new_steps", m->reg->step),
			FTL_F_UINT("epoch", w->epoch));
	}
	m->synced_lineage = w->lineage;
}

/* Rank 0 is the oldest survivor: when it holds no state, no member does (every worker died, or the job is
 * new). The newest checkpoint that loads becomes the state to sync; checkpoints that exist but cannot load
 * stop the job (the hook says why). Without checkpoints a new job starts. */
/* This worker has no part in the job any more (refused, or the state is gone; last_error says which): its
 * communicators go at once (the others' next collective loses it as a peer, instead of waiting for a
 * timeout) and it leaves the cluster before the call fails, so the job's next view is the one without it. */
static void leave_job(ftl_exec *m, ftl_err e)
{
	drop_comms(m);
	if (m->feed->leave)
		m->feed->leave(m->feed_ctx, m->last_error.message);
	/* A refusal is a mistake to fix; a job's state gone is, most often, a spare at the job's end. */
	if (e == FTL_ERR_STATE_LOST)
		ftl_log(m->log, FTL_LOG_WARN, "training", m->last_error.message, FTL_F_STR("error", ftl_strerror(e)));
	fail(m, e, e != FTL_ERR_STATE_LOST);
}

/* Rank 0 of a view in which nobody has state resumes the newest checkpoint, or else starts the job, unless
 * the job has done steps already. Then its state existed and every worker that held it is gone (they left
 * at the job's end, were scaled away, or died), and step 0 would silently train the job again from nothing
 * (a spare at the end of a job did exactly that): this worker leaves instead. */
static ftl_err resume_if_needed(ftl_exec *m)
{
	if (m->view.self_rank != 0 || m->reg->has_state)
		return FTL_OK;
	if (m->ckpt) {
		ftl_err e = kept(m, m->ckpt->resume(m->ckpt_ctx, m->reg));
		if (e != FTL_OK || m->reg->has_state) /* loaded one (a stale step count left by take_left_out is not) */
			return e;
	}
	uint64_t done = m->feed->lineage_steps ? m->feed->lineage_steps(m->feed_ctx, m->view.lineage) : 0;
	if (done > 0) {
		ftl_kept_error_set(&m->last_error, FTL_ERR_STATE_LOST,
			 "ftl: the job's state is gone: it has done %llu steps, no worker of view %llu holds them (those "
			 "that did left or died) and no checkpoint of them was found to resume (FTL_CHECKPOINT_DIR); "
			 "this worker does not start the job again from step 0: it leaves",
			 (unsigned long long)done, (unsigned long long)m->view.epoch);
		return FTL_ERR_STATE_LOST;
	}
	m->reg->has_state = true;
	return FTL_OK;
}

static void sync_state(ftl_exec *m)
{
	ftl_err e = resume_if_needed(m);
	if (e == FTL_ERR_STATE_LOST) {
		leave_job(m, e);
		return;
	}
	if (e != FTL_OK) {
		fail(m, e, false); /* the checkpoint code said why, file by file */
		return;
	}
	uint64_t steps_before = m->reg->has_state ? m->reg->step : 0, bytes = 0;
	int64_t start = now_us(m);
	e = kept(m, ftl_state_sync(m->reg, &m->comms, m->view.self_rank, m->synced_lineage, &bytes));
	if (e == FTL_ERR_REFUSED) {
		leave_job(m, e);
		return;
	}
	if (e != FTL_OK) {
		move_on(m, e, FAILED_SETUP);
		return;
	}
	m->synced_seq = m->view.seq;
	m->setup_failing_since_us = 0;
	warn_if_lineage_changed(m, steps_before);
	int64_t took = now_us(m) - start;
	ftl_log(m->log, FTL_LOG_INFO, "training", "state synced from rank 0", FTL_F_UINT("epoch", m->view.epoch),
		FTL_F_UINT("step", m->reg->step), FTL_F_UINT("bytes", bytes), FTL_F_DOUBLE("took_ms", (double)took / 1000.0));
	m->feed->synced(m->feed_ctx, &m->view, bytes, took);
	enter(m, FTL_EXEC_RUNNING);
}

static void run_step(ftl_exec *m)
{
	ftl_state_registry *r = m->reg;
	const ftl_rdv_view *w = &m->view;
	m->setup_failing_since_us = 0;
	m->feed->stepping(m->feed_ctx, w, r->step, m->runs > 0);
	ftl_step_info info = {
		.rank = w->self_rank,
		.world_size = (int)w->n,
		.step = r->step,
		.view_epoch = w->epoch,
		.attempt = m->runs++,
		.data_epoch = r->data_epoch,
		.sample_pos = r->sample_pos,
	};
	ftl_kept_error_clear(&m->last_error);
	ftl_err e = kept(m, ftl_batch_fill_step(r, w->self_rank, (int)w->n, &info));
	if (e != FTL_OK) {
		fail(m, e, true);
		return;
	}
	e = m->step(m->step_ctx, &info);
	if (e != FTL_OK) {
		if (!m->last_error.message[0])
			ftl_kept_error_set(&m->last_error, e, "the step returned %s", ftl_strerror(e));
		move_on(m, e, FAILED_STEP);
		return;
	}
	ftl_state_advance(r, (int)w->n);
	m->feed->stepping(m->feed_ctx, w, r->step, false);
	if (w->self_rank == 0 && m->ckpt)
		m->ckpt->after_step(m->ckpt_ctx, r, w->epoch, w->n);
	m->result = FTL_OK;
	enter(m, FTL_EXEC_IDLE);
}

void ftl_exec_begin(ftl_exec *m, ftl_step_fn step, void *ctx)
{
	assert(ftl_exec_get_state(m) == FTL_EXEC_IDLE || ftl_exec_get_state(m) == FTL_EXEC_FAILED);
	m->step = step;
	m->step_ctx = ctx;
	m->failures = 0;
	m->runs = 0;
	m->setup_failing_since_us = 0;
	m->result = FTL_OK;
	enter(m, FTL_EXEC_WAITING_FOR_VIEW);
}

bool ftl_exec_advance(ftl_exec *m)
{
	switch (ftl_exec_get_state(m)) {
	case FTL_EXEC_WAITING_FOR_VIEW:
		wait_for_view(m);
		return true;
	case FTL_EXEC_BUILDING_COMM:
		build_comm(m);
		return true;
	case FTL_EXEC_SYNCING:
		sync_state(m);
		return true;
	case FTL_EXEC_RUNNING:
		run_step(m);
		return true;
	case FTL_EXEC_BACKING_OFF:
		enter(m, FTL_EXEC_WAITING_FOR_VIEW);
		return true;
	case FTL_EXEC_IDLE:
	case FTL_EXEC_FAILED:
	case FTL_EXEC_STATE_MAX:
		break;
	}
	return false;
}

ftl_err ftl_exec_step(ftl_exec *m, ftl_step_fn step, void *ctx)
{
	ftl_exec_begin(m, step, ctx);
	while (ftl_exec_advance(m))
		;
	return m->result;
}
