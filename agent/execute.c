/* ftl_execute and the collectives a step uses (the contract is in include/ftl/execute.h).
 *
 * The training thread waits for a committed view with this worker in it, builds the communicator from
 * the view's bootstrap data (tcp: every member's data address; nccl: the blob the coordinator made),
 * brings everyone to rank 0's state after any view change or failure, and runs the step. A step that
 * fails because a peer is gone waits for the next view; if none comes within a grace period (a transient
 * fault with no membership change), it rebuilds the communicator over the same view. The state sync
 * after every failure is what makes a retry safe: a rank that finished the failed step before its peers
 * noticed the failure is rolled back to rank 0's state like everyone else. */
#include "agent_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "log.h"
#include "sampler.h"

/* After a failed step, how long to wait for a new view before rebuilding over the same one (a fault with no
 * membership change); after a failed communicator build (peers were between views), how long to back off. */
#define SAME_VIEW_GRACE_US (3 * 1000000LL)
#define REBUILD_BACKOFF_US (250 * 1000LL)
/* A tcp communicator connects in milliseconds on a healthy view; a view that went stale while we built it
 * (a member left) must not hold us longer than this, since ftl_comm_create cannot be aborted. */
#define TCP_CONNECT_TIMEOUT_MS 2000
#define NCCL_CONNECT_TIMEOUT_MS 30000

static ftl_err fail(ftl_agent *a, ftl_err err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ftl_err fail(ftl_agent *a, ftl_err err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->train.last_error, sizeof(a->train.last_error), fmt, ap);
	va_end(ap);
	ftl_log(FTL_LOG_ERROR, "training", NULL, "%s", a->train.last_error);
	return err;
}

static bool is_peer_error(ftl_err e) { return e == FTL_ERR_PEER_LOST || e == FTL_ERR_TIMEOUT || e == FTL_ERR_ABORTED; }

/* A copy of the view the training thread works in. */
typedef struct work_view {
	uint64_t epoch;
	uint64_t lineage;
	int rank;
	uint32_t n;
	ftl_rdv_member *members;
	uint16_t blob_len;
	uint8_t blob[FTL_RDV_BLOB_MAX];
} work_view;

static void abs_deadline(struct timespec *ts, int64_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Waits for a view with us in it and an epoch >= min_epoch; after `grace_us` also accepts >= fallback. */
static ftl_err wait_for_view(ftl_agent *a, uint64_t min_epoch, uint64_t fallback, int64_t grace_us, work_view *w)
{
	ftl_training *t = &a->train;
	int64_t start = ftl_agent_now_us(a);
	pthread_mutex_lock(&a->lock);
	for (;;) {
		/* First: a member that left takes no more steps, even in a view it still holds (when every
		 * member leaves at once, each may commit a view of those it has not yet heard leave). */
		if (a->is_stopped || a->has_left) {
			pthread_mutex_unlock(&a->lock);
			return fail(a, FTL_ERR_INVALID, "the agent has stopped or left: no more steps");
		}
		uint64_t need = (ftl_agent_now_us(a) - start >= grace_us) ? fallback : min_epoch;
		int rank = ftl_agent_rank_of(a, a->cfg.name);
		if (t->view.epoch >= need && t->view.epoch > 0 && rank >= 0) {
			free(w->members);
			w->members = malloc(t->view.n * sizeof(*w->members));
			if (!w->members) {
				pthread_mutex_unlock(&a->lock);
				return fail(a, FTL_ERR_SYSTEM, "out of memory copying the view");
			}
			memcpy(w->members, t->view.members, t->view.n * sizeof(*w->members));
			w->epoch = t->view.epoch;
			w->lineage = t->view.lineage;
			w->n = t->view.n;
			w->rank = rank;
			w->blob_len = t->view.blob_len;
			memcpy(w->blob, t->view.blob, t->view.blob_len);
			pthread_mutex_unlock(&a->lock);
			return FTL_OK;
		}
		if (t->below_min_since_us && t->cfg.below_min_timeout_ms > 0 &&
		    ftl_agent_now_us(a) - (int64_t)t->below_min_since_us > t->cfg.below_min_timeout_ms * 1000) {
			pthread_mutex_unlock(&a->lock);
			return fail(a, FTL_ERR_PEER_LOST,
				    "ftl: the job cannot continue: %s for more than %lld ms (FTL_MIN_WORKERS=%u, "
				    "FTL_BELOW_MIN_TIMEOUT_MS)",
				    ftl_rdv_phase_strs[t->phase], (long long)t->cfg.below_min_timeout_ms, t->cfg.min_workers);
		}
		struct timespec until;
		abs_deadline(&until, 50);
		pthread_cond_timedwait(&a->changed, &a->lock, &until);
	}
}

/* The comm tells us a neighbour's connection broke: ask membership to probe it now (a hint only). */
static void on_peer_reset(void *arg, int peer_rank, const char *peer_addr)
{
	ftl_agent *a = arg;
	pthread_mutex_lock(&a->lock);
	if (peer_rank >= 0 && (uint32_t)peer_rank < a->train.view.n && a->n_hints < FTL_MAX_HINTS)
		snprintf(a->hints[a->n_hints++], FTL_NAME_MAX, "%s", a->train.view.members[peer_rank].name);
	pthread_mutex_unlock(&a->lock);
	uv_async_send(&a->wake);
}

static void install_comm(ftl_agent *a, ftl_comm *comm, uint64_t epoch)
{
	ftl_training *t = &a->train;
	pthread_mutex_lock(&a->lock);
	ftl_comm *old = t->comm;
	t->comm = comm;
	/* A view newer than this comm arrived while we were building it: nobody aborted this one yet. */
	if (comm && t->view.epoch != epoch)
		ftl_comm_abort(comm);
	pthread_mutex_unlock(&a->lock);
	ftl_comm_destroy(old); /* tcp closes sockets; nccl tears down on a detached thread */
	t->comm_epoch = comm ? epoch : 0;
}

static ftl_err build_comm(ftl_agent *a, const work_view *w)
{
	ftl_training *t = &a->train;
	install_comm(a, NULL, 0);
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.backend = t->cfg.backend;
	cfg.rank = w->rank;
	cfg.world_size = (int)w->n;
	/* Epochs are unique within a lineage only: two clusters that formed apart and merged may share one. */
	cfg.comm_id = w->epoch ^ (w->lineage * 0x9e3779b97f4a7c15ULL);
	cfg.listen_fd = t->data_fd;
	cfg.timeout_ms = t->cfg.collective_timeout_ms;
	cfg.connect_timeout_ms = cfg.backend == FTL_COMM_TCP ? TCP_CONNECT_TIMEOUT_MS : NCCL_CONNECT_TIMEOUT_MS;
	cfg.cuda_device = t->cfg.cuda_device;
	cfg.peer_reset_cb = on_peer_reset;
	cfg.peer_reset_arg = a;
	char *text = NULL;
	if (cfg.backend == FTL_COMM_TCP) {
		const char **addrs = malloc(w->n * sizeof(*addrs));
		if (!addrs)
			return fail(a, FTL_ERR_SYSTEM, "out of memory");
		for (uint32_t i = 0; i < w->n; i++)
			addrs[i] = w->members[i].data_addr;
		size_t need = ftl_comm_tcp_bootstrap(NULL, 0, addrs, (int)w->n);
		text = need ? malloc(need + 1) : NULL;
		if (text)
			ftl_comm_tcp_bootstrap(text, need + 1, addrs, (int)w->n);
		free(addrs);
		if (!text)
			return fail(a, FTL_ERR_INVALID, "view %llu has a bad data address", (unsigned long long)w->epoch);
		cfg.bootstrap = text;
		cfg.bootstrap_len = need;
	} else {
		cfg.bootstrap = w->blob;
		cfg.bootstrap_len = w->blob_len;
	}
	ftl_comm *comm = NULL;
	char err[512];
	int64_t start = ftl_agent_now_us(a);
	ftl_err e = ftl_comm_create(&cfg, &comm, err, sizeof(err));
	free(text);
	if (e != FTL_OK)
		return fail(a, e, "ftl: cannot build the communicator of view %llu: %s", (unsigned long long)w->epoch, err);
	install_comm(a, comm, w->epoch);
	char fields[128];
	snprintf(fields, sizeof(fields), "epoch=%llu rank=%d world_size=%u took_ms=%.1f", (unsigned long long)w->epoch,
		 w->rank, w->n, (double)(ftl_agent_now_us(a) - start) / 1000.0);
	ftl_log(FTL_LOG_INFO, "training", fields, "communicator built (%s)", ftl_comm_backend_strs[cfg.backend]);
	return FTL_OK;
}

/* ---- collectives on the current comm ---- */

static ftl_err check(ftl_agent *a, ftl_err e)
{
	if (e != FTL_OK && a->train.comm)
		snprintf(a->train.last_error, sizeof(a->train.last_error), "%s", ftl_comm_error(a->train.comm));
	return e;
}

static ftl_comm *current(ftl_agent *a) { return a->train.comm; }

ftl_err ftl_allreduce(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype, ftl_reduce_op op)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_allreduce: no communicator (call collectives inside ftl_execute)");
	return check(a, ftl_comm_allreduce(current(a), sendbuf, recvbuf, count, dtype, op));
}

ftl_err ftl_broadcast(ftl_agent *a, void *buf, size_t count, ftl_dtype dtype, int root)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_broadcast: no communicator (call collectives inside ftl_execute)");
	return check(a, ftl_comm_broadcast(current(a), buf, count, dtype, root));
}

ftl_err ftl_allgather(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_allgather: no communicator (call collectives inside ftl_execute)");
	return check(a, ftl_comm_allgather(current(a), sendbuf, recvbuf, count, dtype));
}

ftl_err ftl_barrier(ftl_agent *a)
{
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_barrier: no communicator (call collectives inside ftl_execute)");
	return check(a, ftl_comm_barrier(current(a)));
}

/* ---- the step ---- */

static void publish_status(ftl_agent *a, const work_view *w, bool is_retry)
{
	ftl_training *t = &a->train;
	pthread_mutex_lock(&a->lock);
	t->status.step = t->step;
	t->status.view_epoch = w->epoch;
	t->status.rank = w->rank;
	t->status.world_size = (int)w->n;
	if (is_retry)
		t->status.retries++;
	pthread_mutex_unlock(&a->lock);
}

static void advance(ftl_training *t, int world)
{
	t->step++;
	if (!t->dataset_size)
		return;
	t->sample_pos += ftl_sampler_advance(t->dataset_size, t->sample_pos, world, t->batch_per_rank);
	if (t->sample_pos >= t->dataset_size) {
		t->data_epoch++;
		t->sample_pos = 0;
	}
}

ftl_err ftl_execute(ftl_agent *a, ftl_step_fn step, void *ctx)
{
	ftl_training *t = &a->train;
	if (!t->is_enabled || !a->is_started)
		return fail(a, FTL_ERR_INVALID, "ftl_execute: call ftl_set_training, then ftl_agent_start, first");
	work_view w = {0};
	uint64_t min_epoch = 1, fallback = 1;
	int64_t grace = SAME_VIEW_GRACE_US;
	ftl_err e = FTL_OK;
	int64_t builds_failing_since = 0;
	for (int attempt = 0;; attempt++) {
		if (attempt > t->cfg.max_retries) {
			char last[sizeof(t->last_error)];
			snprintf(last, sizeof(last), "%s", t->last_error); /* fail() writes t->last_error */
			e = fail(a, e, "ftl: step %llu failed %d times (FTL_MAX_RETRIES); last error: %s",
				 (unsigned long long)t->step, attempt, last);
			break;
		}
		if ((e = wait_for_view(a, min_epoch, fallback, grace, &w)) != FTL_OK)
			break;
		if (t->comm_epoch != w.epoch && (e = build_comm(a, &w)) != FTL_OK) {
			/* A peer may still be building the communicator of a view that went stale (it cannot be
			 * aborted; up to its connect timeout): retrying is not a failed step until the builds have
			 * failed for longer than a collective may take. */
			int64_t now = ftl_agent_now_us(a);
			if (!builds_failing_since)
				builds_failing_since = now;
			if (now - builds_failing_since <= (int64_t)t->cfg.collective_timeout_ms * 1000)
				attempt--;
			min_epoch = w.epoch + 1;
			fallback = w.epoch;
			grace = REBUILD_BACKOFF_US;
			continue;
		}
		builds_failing_since = 0;
		if (t->synced_epoch != w.epoch) {
			/* Rank 0 is the oldest survivor: when it holds no state, no member does (every worker died,
			 * or the job is new). The newest checkpoint that verifies becomes the state to sync. */
			if (w.rank == 0 && !t->has_state && (e = ftl_checkpoint_resume(t)) != FTL_OK)
				break;
			int64_t sync_start = ftl_agent_now_us(a);
			if ((e = ftl_state_sync(a, w.rank)) != FTL_OK) {
				if (!is_peer_error(e))
					break;
				t->comm_epoch = 0;
				min_epoch = w.epoch + 1;
				fallback = w.epoch;
				grace = REBUILD_BACKOFF_US;
				continue;
			}
			t->synced_epoch = w.epoch;
			t->has_state = true;
			char fields[160];
			snprintf(fields, sizeof(fields), "epoch=%llu step=%llu took_ms=%.1f", (unsigned long long)w.epoch,
				 (unsigned long long)t->step, (double)(ftl_agent_now_us(a) - sync_start) / 1000.0);
			ftl_log(FTL_LOG_INFO, "training", fields, "state synced from rank 0");
			pthread_mutex_lock(&a->lock);
			t->status.views_seen++;
			pthread_mutex_unlock(&a->lock);
		}
		publish_status(a, &w, attempt > 0);
		ftl_step_info info = {
			.rank = w.rank,
			.world_size = (int)w.n,
			.step = t->step,
			.view_epoch = w.epoch,
			.attempt = attempt,
			.data_epoch = t->data_epoch,
			.sample_pos = t->sample_pos,
		};
		if (t->dataset_size) {
			info.indices = t->indices;
			info.n_indices = ftl_sampler_slice(t->dataset_size, t->sampler_seed, t->data_epoch, t->sample_pos,
							  w.rank, t->batch_per_rank, t->indices);
		}
		e = step(ctx, &info);
		if (e == FTL_OK) {
			advance(t, (int)w.n);
			publish_status(a, &w, false);
			if (w.rank == 0)
				ftl_checkpoint_after_step(t, w.epoch, w.n);
			break;
		}
		if (!is_peer_error(e))
			break;
		ftl_log(FTL_LOG_WARN, "training", NULL, "step %llu failed in view %llu (%s): %s; waiting for the next view",
			(unsigned long long)t->step, (unsigned long long)w.epoch, ftl_strerror(e), t->last_error);
		/* Everyone re-syncs from rank 0 after a failure, in whatever view comes next. */
		t->comm_epoch = 0;
		t->synced_epoch = 0;
		min_epoch = w.epoch + 1;
		fallback = w.epoch;
		grace = SAME_VIEW_GRACE_US;
	}
	free(w.members);
	if (e != FTL_OK && ftl_agent_has_left(a))
		ftl_checkpoint_before_leaving(a); /* rank 0's steps since the last checkpoint must not leave with it */
	return e;
}
