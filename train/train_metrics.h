/* What the training side records for /metrics (metrics.c renders it): steps, step and allreduce times,
 * bytes reduced, state syncs, view changes by cause, and the recovery time, from the first sign of a
 * failure (a failed collective or step, or a member of the view found dead or gone) to the next step that
 * completes. The struct lives in ftl_training under the agent's lock; the recorders below take the lock
 * themselves unless their name ends in _locked. Each recording is O(buckets) and allocates nothing. */
#ifndef FTL_TRAIN_TRAIN_METRICS_H
#define FTL_TRAIN_TRAIN_METRICS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "ftl/execute.h"
#include "base/histogram.h"
#include "base/metrics_text.h"
#include "agent/agent_training.h"

/* Why a view this worker adopted differs from the one before: a member died, left, joined, or the same
 * members took a new epoch (a communicator that failed without a membership change); the first view is
 * "first". When several apply, the first in this order is counted. */
typedef enum ftl_view_cause {
	FTL_VIEW_CAUSE_DEATH,
	FTL_VIEW_CAUSE_LEAVE,
	FTL_VIEW_CAUSE_JOIN,
	FTL_VIEW_CAUSE_REBUILD,
	FTL_VIEW_CAUSE_FIRST,
	FTL_VIEW_CAUSE_MERGE, /* a view of another lineage: this worker's job merged into one that did more work */
	FTL_VIEW_CAUSE_MAX
} ftl_view_cause;
extern const char *const ftl_view_cause_strs[FTL_VIEW_CAUSE_MAX];

typedef struct ftl_train_metrics {
	uint64_t steps;                  /* steps completed by this worker */
	uint64_t step_failures;          /* runs of the step that failed */
	uint64_t allreduce_bytes;        /* bytes this rank contributed to completed allreduces */
	uint64_t sync_bytes;             /* bytes moved by completed state syncs */
	uint64_t views[FTL_VIEW_CAUSE_MAX];
	int64_t disrupted_at_us;         /* the first failure sign not yet followed by a completed step; 0: none */
	int64_t last_recovery_us;        /* the latest recovery time observed (0: none yet) */
	ftl_histogram step_seconds;
	ftl_histogram allreduce_seconds;
	ftl_histogram sync_seconds;
	ftl_histogram recovery_seconds;
} ftl_train_metrics;

struct ftl_agent;
struct ftl_training;

void ftl_train_metrics_create(ftl_train_metrics *m);

/* Training thread: each runs the call it names, times it and records the outcome. */
ftl_err ftl_train_metrics_step(struct ftl_agent *a, ftl_step_fn step, void *ctx, const ftl_step_info *info);
/* A blocking allreduce of the family (ftl_comm_allreduce with o, already read). */
ftl_err ftl_train_metrics_allreduce(struct ftl_agent *a, ftl_comm *c, const void *sendbuf, void *recvbuf, size_t count,
				    ftl_dtype dtype, ftl_reduce_op op, const ftl_allreduce_opts *o);
/* An allreduce run by the caller since start_us, which moved `bytes` on the wire or failed with e (the view
 * is disrupted); returns e. */
ftl_err ftl_train_metrics_allreduce_done(struct ftl_agent *a, int64_t start_us, ftl_err e, uint64_t bytes);

/* Under the lock: a state sync completed, moving `bytes` (buffers and callback bytes) in took_us. */
void ftl_train_metrics_synced_locked(ftl_train_metrics *m, uint64_t bytes, int64_t took_us);

/* Loop thread, under the lock. */
/* Adds "recoveries" and "last_recovery_ms" (null before the first) to the status's view object. */
void ftl_train_metrics_status_locked(const ftl_train_metrics *m, json_t *view);
void ftl_train_metrics_disrupted_locked(ftl_train_metrics *m, int64_t now_us);
/* Before the agent's newest view is replaced by v: counts the change by cause (swim: to tell a death from a
 * leave). */
void ftl_train_metrics_view_locked(struct ftl_agent *a, const ftl_rdv_view *v);

/* train_metrics_render.c: the training's /metrics families. */
typedef struct ftl_train_metrics_snapshot {
	ftl_train_metrics train;
	uint64_t retries;                /* steps run again after a failure (the job status) */
	bool has_checkpoints;            /* false: checkpoints off, their families are not shown */
	ftl_ckpt_writer_stats ckpt;
} ftl_train_metrics_snapshot;

/* A pure function of the snapshot (the unit test drives it with made-up ones). */
void ftl_train_metrics_render(ftl_metrics_text *t, const ftl_train_metrics_snapshot *s);
/* Loop thread: a snapshot of a's training (its metrics copied under the lock), rendered into out, which
 * starts empty; the caller frees out->buf. */
void ftl_train_metrics_render_from(struct ftl_agent *a, ftl_metrics_text *out);

#endif
