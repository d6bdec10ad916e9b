/* ftl_agent: lifecycle, the loop thread, and the requests of other threads.
 *
 * The node is a pure state machine (node/node.h: membership joined to the rendezvous). This file makes it
 * and opens the rooms around it, each of which only feeds it (agent_turn.c): gossip datagrams
 * (agent_udp.c), TCP between agents (agent_tcp.c, agent_peers.c, agent_check.c), DNS (agent_seeds.c), the
 * control socket (agent_control.c) and /metrics; the drain (agent_drain.c) carries out what the node
 * decided, once per turn of the loop. Requests from other threads (leave, stop, hints, metadata, the
 * witness's deaths) are flags under a mutex plus a uv_async wake-up, so no libuv handle is touched off the
 * loop. This is the face: the rooms never call back into it. */
#include "agent_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/addr.h"
#include "node/node_meta.h"
#include "agent_fork.h"
#include "base/log.h"
#include "metrics.h"
#include "base/run_dir.h"
#include "base/sized.h"
#include "base/diag.h"
#include "witness.h"

/* ---- requests from other threads ---- */

static void close_all(ftl_agent *a);

static void on_wake(uv_async_t *h)
{
	ftl_agent *a = h->data;
	pthread_mutex_lock(&a->shared.lock);
	bool leave = a->shared.want_leave, stop = a->shared.want_stop, meta = a->shared.want_meta;
	uint8_t meta_buf[FTL_META_MAX];
	uint16_t meta_len = (uint16_t)ftl_meta_pack(&a->training.self, a->shared.meta, a->shared.meta_len, meta_buf,
						    sizeof(meta_buf));
	char hints[FTL_MAX_HINTS][FTL_NAME_MAX];
	int n_hints = a->shared.n_hints;
	memcpy(hints, a->shared.hints, sizeof(hints));
	a->shared.n_hints = 0;
	__typeof__(a->shared.witnessed) witnessed;
	int n_witnessed = a->shared.n_witnessed;
	memcpy(witnessed, a->shared.witnessed, sizeof(witnessed));
	a->shared.n_witnessed = 0;
	a->shared.want_leave = a->shared.want_meta = false;
	pthread_mutex_unlock(&a->shared.lock);
	if (n_witnessed) {
		const char *names[FTL_MAX_WITNESSED];
		uint64_t generations[FTL_MAX_WITNESSED];
		for (int i = 0; i < n_witnessed; i++) {
			names[i] = witnessed[i].name;
			generations[i] = witnessed[i].generation;
		}
		ftl_node_witnessed_deaths(a->node, ftl_agent_now_us(a), names, generations, (size_t)n_witnessed);
	}
	for (int i = 0; i < n_hints; i++)
		ftl_node_comm_failed(a->node, ftl_agent_now_us(a), hints[i]);
	if (meta)
		ftl_node_set_meta(a->node, ftl_agent_now_us(a), meta_buf, meta_len);
	if (leave)
		ftl_node_leave(a->node, ftl_agent_now_us(a));
	if (n_witnessed || n_hints || meta || leave)
		ftl_agent_fed(a);
	ftl_agent_rdv_wake(a);
	ftl_agent_status_answer(a);
	if (stop)
		close_all(a);
}

/* ---- lifecycle ---- */

ftl_agent *ftl_agent_new(const ftl_agent_config *caller_cfg)
{
	ftl_agent_config full;
	if (ftl_agent_config_widen(caller_cfg, &full) != FTL_OK)
		return NULL;
	const ftl_agent_config *cfg = &full;
	ftl_agent *a = calloc(1, sizeof(*a));
	if (!a) {
		ftl_diag_set(FTL_ERR_SYSTEM, "out of memory creating the agent");
		return NULL;
	}
	a->cfg = *cfg;
	if (ftl_agent_config_resolve(cfg, &a->set) != FTL_OK) {
		free(a);
		return NULL;
	}
	a->keyring = a->set.is_insecure ? ftl_keyring_new_insecure(cfg->cluster)
					: ftl_keyring_new(cfg->cluster, a->set.key);
	if (!a->keyring) {
		ftl_diag_prefix("FTL_CLUSTER/FTL_GOSSIP_KEY: ");
		free(a);
		return NULL;
	}
	char dir[256];
	if (ftl_run_dir_resolve(cfg->run_dir, dir, sizeof(dir)) != 0 ||
	    ftl_run_dir_socket_path(dir, cfg->name, a->control.path, sizeof(a->control.path)) != 0) {
		ftl_diag_set(FTL_ERR_INVALID,
			     "FTL_RUN_DIR: the control socket path is too long; choose a shorter directory");
		ftl_keyring_delete(a->keyring);
		free(a);
		return NULL;
	}
	pthread_mutex_init(&a->shared.lock, NULL);
	/* on the monotonic clock: the training thread's waits (train/exec_agent_feed.c) and leave's deadline
	 * must not move with the wall clock */
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&a->shared.changed, &attr);
	pthread_condattr_destroy(&attr);
	return a;
}

void ftl_agent_on_event(ftl_agent *a, ftl_agent_event_cb cb, void *ctx)
{
	a->event_cb = cb;
	a->event_ctx = ctx;
}

static uint64_t wall_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static ftl_err make_node(ftl_agent *a)
{
	uint8_t meta[FTL_META_MAX];
	size_t meta_len = ftl_meta_pack(&a->training.self, (const uint8_t *)a->cfg.meta, strlen(a->cfg.meta), meta,
					sizeof(meta));
	if (!a->training.self.data_addr[0]) { /* not training: the metadata is the user's alone */
		meta_len = strlen(a->cfg.meta);
		memcpy(meta, a->cfg.meta, meta_len);
	}
	if (meta_len == 0 && a->cfg.meta[0])
		return ftl_diag_set(FTL_ERR_INVALID,
				    "FTL_META is too long to travel with the data address (at most %d bytes together)",
				    FTL_META_MAX - 1);
	ftl_node_options o = {.swim = {
		.name = a->cfg.name,
		.generation = a->cfg.generation ? a->cfg.generation : wall_us(),
		.addr = a->set.advertise,
		.meta = meta,
		.meta_len = (uint16_t)meta_len,
		.config = a->set.swim,
		.keyring = a->keyring,
		.is_addr_valid = ftl_addr_is_member,
		.seed = wall_us() ^ ((uint64_t)getpid() << 32),
	}};
	if (a->training.is_on)
		a->training.ops->node_options(a, &o);
	a->node = ftl_node_new(&o, ftl_agent_now_us(a));
	if (!a->node)
		return ftl_diag_code();
	return FTL_OK;
}

/* The witness's thread saw a local member's life end (witness.h): the loop declares it (on_wake). */
static void on_witnessed(void *ctx, const char *name, uint64_t generation)
{
	ftl_agent *a = ctx;
	pthread_mutex_lock(&a->shared.lock);
	if (a->shared.n_witnessed < FTL_MAX_WITNESSED) {
		strcpy(a->shared.witnessed[a->shared.n_witnessed].name, name);
		a->shared.witnessed[a->shared.n_witnessed++].generation = generation;
	}
	pthread_mutex_unlock(&a->shared.lock);
	uv_async_send(&a->wake);
}

/* Our own life lock, held by this thread for as long as it runs the loop; and the watching of others'. */
static void start_witness(ftl_agent *a)
{
	if (a->cfg.is_witness_off)
		return;
	ftl_node_snapshot snap;
	ftl_node_read(a->node, &snap);
	a->witness = ftl_witness_new(a->cfg.name, snap.generation, on_witnessed, a);
	if (a->witness && ftl_witness_hold(a->witness) != FTL_OK) {
		ftl_witness_delete(a->witness);
		a->witness = NULL;
	}
	if (!a->witness) {
		ftl_log(&a->set.log, FTL_LOG_DEBUG, "agent", "no witness on this host: members here are seen to die "
			"by the usual paths", FTL_F_STR("why", ftl_diag_message()));
		return;
	}
	ftl_witness_update_from_node(a->witness, a->node);
}

static void run_loop(void *arg)
{
	ftl_agent *a = arg;
	ftl_log_defer_here(); /* a log callback (Python's takes the GIL) must never hold up gossip */
	start_witness(a);
	/* A peer or ftlctl hanging up must not kill the process that embeds us. */
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	uv_run(&a->loop, UV_RUN_DEFAULT);
	if (a->witness) {
		ftl_witness_release(a->witness);
		ftl_witness_delete(a->witness);
		a->witness = NULL;
	}
	pthread_mutex_lock(&a->shared.lock);
	a->shared.is_stopped = true;
	pthread_cond_broadcast(&a->shared.changed);
	pthread_mutex_unlock(&a->shared.lock);
}

/* A start that failed half way (err, with its reason in the diag): closes what it opened and leaves the
 * agent not started, so that ftl_agent_stop (from ftl_agent_delete) does not join a loop thread that was
 * never created. Returns err. */
static ftl_err abandon_start(ftl_agent *a, ftl_err err)
{
	close_all(a);
	uv_run(&a->loop, UV_RUN_DEFAULT);
	uv_loop_close(&a->loop);
	a->is_started = false;
	return err;
}

ftl_err ftl_agent_start(ftl_agent *a)
{
	if (a->is_started)
		return ftl_diag_set(FTL_ERR_INVALID, "the agent is already started");
	ftl_err err = a->training.is_on ? a->training.ops->listen(a) : FTL_OK;
	if (!err)
		err = make_node(a);
	if (err)
		return err;
	int rc = uv_loop_init(&a->loop);
	if (rc != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot start the agent's event loop: %s", uv_strerror(rc));
	a->is_started = true;
	a->is_closing = false;
	ftl_kept_error_clear(&a->shared.stop_error);
	ftl_agent_drain_start(a);
	uv_async_init(&a->loop, &a->wake, on_wake);
	a->wake.data = a;
	err = ftl_agent_udp_bind(a);
	if (!err)
		err = ftl_agent_tcp_listen(a);
	if (err)
		return abandon_start(a, err);
	a->control.server = ftl_control_start(&a->loop, a->control.path, ftl_agent_control_handle, a);
	if (!a->control.server) /* most often a second agent with the same name: a configuration error worth stopping for */
		return abandon_start(a, ftl_diag_prefix("control socket: "));
	err = ftl_metrics_http_start(a);
	if (err)
		return abandon_start(a, err);
	if (a->set.is_insecure)
		ftl_log(&a->set.log, FTL_LOG_WARN, "agent", "FTL_INSECURE=1: gossip is plaintext and unauthenticated");
	ftl_log(&a->set.log, FTL_LOG_INFO, "agent", "started", FTL_F_STR("bind", a->cfg.bind),
		FTL_F_STR("advertise", a->set.advertise), FTL_F_STR("cluster", a->cfg.cluster),
		FTL_F_STR("profile", a->cfg.profile), FTL_F_STR("control", a->control.path));
	ftl_agent_seeds_start(a);
	ftl_agent_members_changed(a);
	ftl_agent_fed(a); /* the join the node queued goes out in the loop's first turn */
	if (uv_thread_create(&a->thread, run_loop, a) != 0)
		return abandon_start(a, ftl_diag_set(FTL_ERR_SYSTEM, "cannot start the agent thread"));
	return FTL_OK;
}

static void close_cb(uv_handle_t *h) {}

static void close_one(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h)) {
		ftl_agent_fork_untrack(h);
		uv_close(h, close_cb);
	}
}

static void close_all(ftl_agent *a)
{
	ftl_agent_drain_pending(a); /* what the node decided in this turn goes out before the sockets close */
	a->is_closing = true;
	ftl_witness_stop(a->witness); /* before the wake handle closes: it reports through it */
	ftl_agent_tcp_close_all(a);
	ftl_agent_peers_close_all(a);
	ftl_agent_check_close_all(a);
	ftl_metrics_http_close(a);
	if (a->control.server) {
		ftl_control_close(a->control.server);
		a->control.server = NULL;
	}
	uv_walk(&a->loop, close_one, NULL);
}

ftl_err ftl_agent_leave(ftl_agent *a, int timeout_ms)
{
	if (!a->is_started)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_agent_leave: the agent is not started");
	if (a->training.is_on)
		a->training.ops->before_leave(a); /* on the training thread, between steps: rank 0 checkpoints first */
	struct timespec until = ftl_deadline_monotonic_in((int64_t)timeout_ms * 1000); /* the clock of a->shared.changed */
	pthread_mutex_lock(&a->shared.lock);
	a->shared.want_leave = true;
	uv_async_send(&a->wake);
	int rc = 0;
	while (!a->shared.has_left && !a->shared.is_stopped && rc == 0)
		rc = pthread_cond_timedwait(&a->shared.changed, &a->shared.lock, &until);
	bool is_done = a->shared.has_left;
	pthread_mutex_unlock(&a->shared.lock);
	if (is_done)
		return FTL_OK;
	return ftl_diag_set(FTL_ERR_TIMEOUT, "ftl_agent_leave: the leave did not go out within %d ms%s", timeout_ms,
			    a->shared.is_stopped ? " (the agent stopped)" : "");
}

ftl_err ftl_agent_set_meta(ftl_agent *a, const void *meta, size_t len)
{
	if (len > FTL_META_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_agent_set_meta: %zu bytes, at most %d", len, FTL_META_MAX);
	pthread_mutex_lock(&a->shared.lock);
	memcpy(a->shared.meta, meta, len);
	a->shared.meta_len = (uint16_t)len;
	a->shared.want_meta = true;
	pthread_mutex_unlock(&a->shared.lock);
	if (a->is_started)
		uv_async_send(&a->wake);
	return FTL_OK;
}

ftl_err ftl_agent_error(ftl_agent *a)
{
	pthread_mutex_lock(&a->shared.lock);
	ftl_err err = ftl_kept_error_to_diag(&a->shared.stop_error);
	pthread_mutex_unlock(&a->shared.lock);
	return err;
}

bool ftl_agent_has_left(ftl_agent *a)
{
	pthread_mutex_lock(&a->shared.lock);
	bool left = a->shared.has_left;
	pthread_mutex_unlock(&a->shared.lock);
	return left;
}

void ftl_agent_stop(ftl_agent *a)
{
	if (!a->is_started)
		return;
	pthread_mutex_lock(&a->shared.lock);
	a->shared.want_stop = true;
	bool is_stopped = a->shared.is_stopped;
	pthread_mutex_unlock(&a->shared.lock);
	if (!is_stopped)
		uv_async_send(&a->wake);
	uv_thread_join(&a->thread);
	ftl_log_drain(&a->set.log); /* its callback is not called after the stop */
	uv_loop_close(&a->loop);
	a->is_started = false;
}

void ftl_agent_delete(ftl_agent *a)
{
	if (!a)
		return;
	ftl_agent_stop(a);
	if (a->training.ops)
		a->training.ops->free(a);
	ftl_node_view_clear(&a->shared.views.view);
	free(a->shared.status.text);
	ftl_node_delete(a->node);
	ftl_keyring_delete(a->keyring);
	pthread_mutex_destroy(&a->shared.lock);
	pthread_cond_destroy(&a->shared.changed);
	free(a);
}

ftl_err ftl_agent_get_counts(ftl_agent *a, ftl_agent_counts *out)
{
	pthread_mutex_lock(&a->shared.lock);
	ftl_agent_counts full = a->shared.counts;
	pthread_mutex_unlock(&a->shared.lock);
	return ftl_sized_out(&full, out, sizeof(full), sizeof(full), "ftl_agent_counts");
}

const char *ftl_agent_control_path(const ftl_agent *a) { return a->control.path; }
