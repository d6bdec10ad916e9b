/* ftl_execute and the collectives a step uses (the contract is in include/ftl/execute.h).
 *
 * The training thread waits for a usable view with this worker in it, builds the communicator from the
 * view's bootstrap data (tcp: every member's data address; nccl: the blob the coordinator made), brings
 * everyone to rank 0's state after any view change or failure, and runs the step.
 *
 * Why a view's communicator is built at most once: a build (ftl_comm_create) is not atomic across ranks;
 * one rank may finish it while another gives up, and two builds of one view share its comm id, so ranks
 * that each rebuilt the same view on their own timers paired with each other's stale attempts and never
 * got in step (after a partition healed, the merged view rebuilt every 250 ms and burnt the retries in
 * state-sync failures). So when a view's communicator fails (a collective, the build or the state sync)
 * this worker abandons the view and waits for a newer one. When membership explains the failure (a peer
 * died or left) the rendezvous commits one; when it does not, after a grace this worker asks the rendezvous
 * for the same members under the next epoch (ftl_rdv_request_rebuild), which every member builds once.
 *
 * Why waiting spends no retries: a view the rendezvous has left behind (phase not training: a member is
 * gone, the quorum is lost, a new view is being agreed) is waited out, never built. The wait is bounded by
 * FTL_BELOW_MIN_TIMEOUT_MS. Retries (FTL_MAX_RETRIES) count the step's failures in a committed, synced
 * view; a build or state sync that fails counts only while the view is still current and has kept failing
 * for longer than a collective may take (a persistent fault, not a view change in flight). The state sync
 * after every failure is what makes a retry safe: a rank that finished the failed step before its peers
 * noticed the failure is rolled back to rank 0's state like everyone else. */
#include "agent_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "log.h"

/* After a failed step, how long to wait for membership to explain it (a new view) before asking for the
 * same members under a new epoch; after a failed communicator build or state sync, how long before asking. */
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
	uint64_t seq;
	uint64_t epoch;
	uint64_t lineage;
	int rank;
	uint32_t n;
	ftl_rdv_member *members;
	uint16_t blob_len;
	uint8_t blob[FTL_RDV_BLOB_MAX];
} work_view;

/* What the step is waiting out: a view whose communicator failed here, and when to ask for it again. */
typedef struct abandoned_view {
	uint64_t seq;                    /* 0: none */
	int64_t rebuild_at_us;           /* ask for its members under a new epoch from then on */
	bool is_asked;
} abandoned_view;

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

/* Under the lock. A view we are in is usable when it is not the abandoned one and either the rendezvous
 * holds it current (phase training) or its communicator already works here (a view stays usable while
 * the next one is agreed, e.g. while joiners settle). */
static bool is_usable(const ftl_training *t, const abandoned_view *ab)
{
	const ftl_view_copy *v = &t->view;
	if (v->seq == 0 || v->self_rank < 0 || v->seq == ab->seq)
		return false;
	return t->phase == FTL_RDV_TRAINING || t->comm_seq == v->seq;
}

static int copy_view(const ftl_view_copy *v, work_view *w)
{
	ftl_rdv_member *members = malloc((v->n ? v->n : 1) * sizeof(*members));
	if (!members)
		return -1;
	memcpy(members, v->members, v->n * sizeof(*members));
	free(w->members);
	w->members = members;
	w->seq = v->seq;
	w->epoch = v->epoch;
	w->lineage = v->lineage;
	w->n = v->n;
	w->rank = v->self_rank;
	w->blob_len = v->blob_len;
	memcpy(w->blob, v->blob, v->blob_len);
	return 0;
}

/* Under the lock: the error when the wait has lasted too long, else FTL_OK. A worker below min_workers or
 * without quorum gives up after FTL_BELOW_MIN_TIMEOUT_MS of that; a view change that never completes gives
 * up after as long (a hot spare waits for ever). */
static ftl_err check_wait(ftl_agent *a, int64_t waiting_since_us)
{
	ftl_training *t = &a->train;
	int64_t limit_us = t->cfg.below_min_timeout_ms * 1000, now = ftl_agent_now_us(a);
	if (limit_us <= 0 || t->phase == FTL_RDV_SPARE)
		return FTL_OK;
	if (t->below_min_since_us && now - t->below_min_since_us > limit_us) {
		if (t->phase == FTL_RDV_WAITING_FOR_QUORUM)
			return fail(a, FTL_ERR_PEER_LOST,
				    "ftl: the job cannot continue: waiting for quorum for more than %lld ms "
				    "(FTL_BELOW_MIN_TIMEOUT_MS): %s. If they are gone for good, run `ftlctl quorum reset` "
				    "on a survivor (before this timeout) to go on without them",
				    (long long)t->cfg.below_min_timeout_ms, t->missing);
		return fail(a, FTL_ERR_PEER_LOST,
			    "ftl: the job cannot continue: %s for more than %lld ms (FTL_MIN_WORKERS=%u, "
			    "FTL_BELOW_MIN_TIMEOUT_MS)",
			    ftl_rdv_phase_strs[t->phase], (long long)t->cfg.below_min_timeout_ms, t->cfg.min_workers);
	}
	if (!t->below_min_since_us && now - waiting_since_us > limit_us)
		return fail(a, FTL_ERR_PEER_LOST,
			    "ftl: the job cannot continue: no usable view for more than %lld ms (phase %s, view %llu; "
			    "FTL_BELOW_MIN_TIMEOUT_MS); check `ftlctl status` on the coordinator %s",
			    (long long)t->cfg.below_min_timeout_ms, ftl_rdv_phase_strs[t->phase],
			    (unsigned long long)t->view.epoch, t->coordinator[0] ? t->coordinator : "(none)");
	return FTL_OK;
}

/* Waits for a usable view (is_usable) and copies it into w; spends no retries. Asks for the abandoned
 * view's members under a new epoch when its time comes and it is still the newest view. */
static ftl_err wait_for_view(ftl_agent *a, abandoned_view *ab, work_view *w)
{
	ftl_training *t = &a->train;
	int64_t waiting_since = ftl_agent_now_us(a);
	pthread_mutex_lock(&a->lock);
	for (;;) {
		/* First: a member that left takes no more steps, even in a view it still holds (when every
		 * member leaves at once, each may commit a view of those it has not yet heard leave). */
		if (a->is_stopped || a->has_left) {
			pthread_mutex_unlock(&a->lock);
			return fail(a, FTL_ERR_INVALID, "the agent has stopped or left: no more steps");
		}
		if (is_usable(t, ab)) {
			int rc = copy_view(&t->view, w);
			pthread_mutex_unlock(&a->lock);
			return rc == 0 ? FTL_OK : fail(a, FTL_ERR_SYSTEM, "out of memory copying the view");
		}
		ftl_err e = check_wait(a, waiting_since);
		if (e != FTL_OK) {
			pthread_mutex_unlock(&a->lock);
			return e;
		}
		if (ab->seq && ab->seq == t->view.seq && !ab->is_asked && ftl_agent_now_us(a) >= ab->rebuild_at_us) {
			ab->is_asked = true;
			t->want_rebuild_seq = ab->seq;
			uv_async_send(&a->wake);
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

static void install_comm(ftl_agent *a, ftl_comm *comm, uint64_t seq)
{
	ftl_training *t = &a->train;
	pthread_mutex_lock(&a->lock);
	ftl_comm *old = t->comm;
	t->comm = comm;
	/* A view newer than this comm arrived while we were building it: nobody aborted this one yet. */
	if (comm && t->view.seq != seq)
		ftl_comm_abort(comm);
	t->comm_seq = comm ? seq : 0;
	pthread_mutex_unlock(&a->lock);
	ftl_comm_destroy(old); /* tcp closes sockets; nccl tears down on a detached thread */
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
	/* A refusal in the handshake (another comm id, rank or world size: FTL_ERR_INVALID from the comm) means
	 * the members are not building the same view yet, a view change under way: retried like a lost peer,
	 * within the setup-failure budget (is_setup_failure_counted), not fatal at once. The chaos soak lost
	 * five workers that way after a burst of deaths. */
	if (e == FTL_ERR_INVALID)
		e = FTL_ERR_PEER_LOST;
	if (e != FTL_OK)
		return fail(a, e, "ftl: cannot build the communicator of view %llu: %s", (unsigned long long)w->epoch, err);
	install_comm(a, comm, w->seq);
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
	return check(a, ftl_train_metrics_allreduce(a, current(a), sendbuf, recvbuf, count, dtype, op));
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

/* ---- asynchronous requests: a comm request tagged with the communicator it was made on ---- */

struct ftl_request {
	ftl_comm_request *inner; /* freed by the comm's destroy if the comm went first */
	ftl_comm *comm;
	uint64_t comm_seq;       /* with comm: the pointer alone could be reused by the next communicator */
};

ftl_err ftl_allreduce_async(ftl_agent *a, const void *sendbuf, void *recvbuf, size_t count, ftl_dtype dtype,
			    ftl_reduce_op op, ftl_request **req)
{
	if (req == NULL)
		return fail(a, FTL_ERR_INVALID, "ftl_allreduce_async: req is NULL");
	*req = NULL;
	if (!current(a))
		return fail(a, FTL_ERR_INVALID, "ftl_allreduce_async: no communicator (call collectives inside ftl_execute)");
	ftl_request *r = malloc(sizeof(*r));
	if (r == NULL)
		return fail(a, FTL_ERR_SYSTEM, "ftl_allreduce_async: out of memory");
	*r = (ftl_request){.comm = current(a), .comm_seq = a->train.comm_seq};
	ftl_err e = ftl_comm_allreduce_async(current(a), sendbuf, recvbuf, count, dtype, op, &r->inner);
	if (e != FTL_OK) {
		free(r);
		return check(a, e);
	}
	*req = r;
	return FTL_OK;
}

/* The request's communicator is still the current one; else it is refused and freed. */
static ftl_err check_request(ftl_agent *a, ftl_request **req, const char *what)
{
	if (req == NULL || *req == NULL)
		return fail(a, FTL_ERR_INVALID, "%s: the request is NULL (already waited?)", what);
	ftl_request *r = *req;
	if (r->comm == current(a) && r->comm_seq == a->train.comm_seq)
		return FTL_OK;
	free(r);
	*req = NULL;
	return fail(a, FTL_ERR_INVALID,
		    "%s: the request was made under an older communicator, replaced since by a view change; it was "
		    "aborted with it (wait for every request inside the step that made it)", what);
}

ftl_err ftl_wait(ftl_agent *a, ftl_request **req)
{
	ftl_err e = check_request(a, req, "ftl_wait");
	if (e != FTL_OK)
		return e;
	e = check(a, ftl_comm_wait(current(a), &(*req)->inner));
	free(*req);
	*req = NULL;
	return e;
}

ftl_err ftl_test(ftl_agent *a, ftl_request **req, int *done)
{
	if (done == NULL)
		return fail(a, FTL_ERR_INVALID, "ftl_test: done is NULL");
	*done = 0;
	ftl_err e = check_request(a, req, "ftl_test");
	if (e != FTL_OK)
		return e;
	e = check(a, ftl_comm_test(current(a), &(*req)->inner, done));
	if (*done || (*req)->inner == NULL) {
		free(*req);
		*req = NULL;
	}
	return e;
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
	t->sample_pos += ftl_batch_advance(t, world);
	if (t->sample_pos >= t->dataset_size) {
		t->data_epoch++;
		t->sample_pos = 0;
	}
}

/* Abandons w: the step waits for a newer view, and asks for w's members under a new epoch after `after_us`
 * if none comes. */
static void abandon(ftl_agent *a, const work_view *w, abandoned_view *ab, int64_t after_us)
{
	*ab = (abandoned_view){.seq = w->seq, .rebuild_at_us = ftl_agent_now_us(a) + after_us};
	install_comm(a, NULL, 0);
}

/* A communicator build or state sync of w failed with a peer error. It is a failed attempt of the step only
 * when w is still the newest view and such failures have lasted longer than a collective may take (a fault
 * that persists, not a view change in flight); returns true then. */
static bool is_setup_failure_counted(ftl_agent *a, const work_view *w, int64_t *failing_since_us)
{
	ftl_training *t = &a->train;
	int64_t now = ftl_agent_now_us(a);
	pthread_mutex_lock(&a->lock);
	bool is_superseded = t->view.seq != w->seq;
	pthread_mutex_unlock(&a->lock);
	if (!*failing_since_us)
		*failing_since_us = now;
	return !is_superseded && now - *failing_since_us > (int64_t)t->cfg.collective_timeout_ms * 1000;
}

/* After the state sync of a view of another lineage than the last one synced: this worker's steps were
 * just replaced by the other lineage's state. Said at warn level with both step counts. */
static void warn_if_lineage_changed(ftl_agent *a, const work_view *w, uint64_t steps_before)
{
	ftl_training *t = &a->train;
	if (t->synced_lineage != 0 && t->synced_lineage != w->lineage && steps_before > 0) {
		char fields[192];
		snprintf(fields, sizeof(fields), "old_lineage=%016llx old_steps=%llu new_lineage=%016llx new_steps=%llu "
			 "epoch=%llu", (unsigned long long)t->synced_lineage, (unsigned long long)steps_before,
			 (unsigned long long)w->lineage, (unsigned long long)t->step, (unsigned long long)w->epoch);
		ftl_log(FTL_LOG_WARN, "training", fields,
			"merged into another lineage: this worker's job had run %llu steps, the job it joined %llu; "
			"ours are discarded (two clusters formed apart; FTL_EXPECTED_WORKERS prevents it at start)",
			(unsigned long long)steps_before, (unsigned long long)t->step);
	}
	t->synced_lineage = w->lineage;
}

/* Builds w's communicator if needed and brings this rank to rank 0's state if w is new since the last sync. */
static ftl_err set_up_view(ftl_agent *a, const work_view *w)
{
	ftl_training *t = &a->train;
	ftl_err e;
	if (t->comm_seq != w->seq && (e = build_comm(a, w)) != FTL_OK)
		return e;
	if (t->synced_seq == w->seq)
		return FTL_OK;
	/* Rank 0 is the oldest survivor: when it holds no state, no member does (every worker died, or the
	 * job is new). The newest checkpoint that loads becomes the state to sync; checkpoints that exist but
	 * cannot load (another program's shape, all corrupt) stop the job (ftl_checkpoint_resume says why). */
	if (w->rank == 0 && !t->has_state && (e = ftl_checkpoint_resume(t)) != FTL_OK)
		return e;
	uint64_t steps_before = t->has_state ? t->step : 0;
	int64_t sync_start = ftl_agent_now_us(a);
	if ((e = ftl_train_metrics_state_sync(a, w->rank)) != FTL_OK)
		return e;
	t->synced_seq = w->seq;
	t->has_state = true;
	warn_if_lineage_changed(a, w, steps_before);
	char fields[160];
	snprintf(fields, sizeof(fields), "epoch=%llu step=%llu took_ms=%.1f", (unsigned long long)w->epoch,
		 (unsigned long long)t->step, (double)(ftl_agent_now_us(a) - sync_start) / 1000.0);
	ftl_log(FTL_LOG_INFO, "training", fields, "state synced from rank 0");
	pthread_mutex_lock(&a->lock);
	t->status.views_seen++;
	pthread_mutex_unlock(&a->lock);
	return FTL_OK;
}

static ftl_err retries_exhausted(ftl_agent *a, ftl_err e, int failures)
{
	ftl_training *t = &a->train;
	char last[sizeof(t->last_error)];
	snprintf(last, sizeof(last), "%s", t->last_error); /* fail() writes t->last_error */
	return fail(a, e, "ftl: step %llu failed %d times (FTL_MAX_RETRIES=%d); last error: %s",
		    (unsigned long long)t->step, failures, t->cfg.max_retries, last);
}

ftl_err ftl_execute(ftl_agent *a, ftl_step_fn step, void *ctx)
{
	ftl_training *t = &a->train;
	if (!t->is_enabled || !a->is_started)
		return fail(a, FTL_ERR_INVALID, "ftl_execute: call ftl_set_training, then ftl_agent_start, first");
	work_view w = {0};
	abandoned_view ab = {0};
	ftl_err e = FTL_OK;
	int failures = 0, runs = 0;          /* counted failures (FTL_MAX_RETRIES), and runs of the step */
	int64_t setup_failing_since = 0;
	for (;;) {
		if ((e = wait_for_view(a, &ab, &w)) != FTL_OK)
			break;
		if ((e = set_up_view(a, &w)) != FTL_OK) {
			if (!is_peer_error(e))
				break;
			if (is_setup_failure_counted(a, &w, &setup_failing_since) && ++failures > t->cfg.max_retries) {
				e = retries_exhausted(a, e, failures);
				break;
			}
			abandon(a, &w, &ab, REBUILD_BACKOFF_US);
			continue;
		}
		setup_failing_since = 0;
		publish_status(a, &w, runs > 0);
		ftl_step_info info = {
			.rank = w.rank,
			.world_size = (int)w.n,
			.step = t->step,
			.view_epoch = w.epoch,
			.attempt = runs++,
			.data_epoch = t->data_epoch,
			.sample_pos = t->sample_pos,
		};
		if (ftl_batch_fill_step(t, w.rank, (int)w.n, &info) != FTL_OK) {
			e = fail(a, FTL_ERR_SYSTEM, "out of memory for the step's %llu indices (FTL_GLOBAL_BATCH)",
				 (unsigned long long)t->cfg.batch.global_batch);
			break;
		}
		e = ftl_train_metrics_step(a, step, ctx, &info);
		if (e == FTL_OK) {
			advance(t, (int)w.n);
			publish_status(a, &w, false);
			if (w.rank == 0)
				ftl_checkpoint_after_step(t, w.epoch, w.n);
			break;
		}
		if (!is_peer_error(e))
			break;
		if (++failures > t->cfg.max_retries) {
			e = retries_exhausted(a, e, failures);
			break;
		}
		ftl_log(FTL_LOG_WARN, "training", NULL, "step %llu failed in view %llu (%s): %s; waiting for the next view",
			(unsigned long long)t->step, (unsigned long long)w.epoch, ftl_strerror(e), t->last_error);
		/* Everyone re-syncs from rank 0 after a failure, in whatever view comes next. */
		t->synced_seq = 0;
		abandon(a, &w, &ab, SAME_VIEW_GRACE_US);
	}
	free(w.members);
	if (e != FTL_OK && ftl_agent_has_left(a))
		ftl_checkpoint_before_leaving(a); /* rank 0's steps since the last checkpoint must not leave with it */
	return e;
}
