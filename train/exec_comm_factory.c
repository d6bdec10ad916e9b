/* The agent's comm factory for the ftl_execute state machine (exec_machine.h): a view's communicators from
 * its bootstrap data, installed where the collectives and the loop thread (which aborts them on a view
 * change) find them.
 *
 * Two per view under nccl (issue 14): the nccl comm for the registered device buffers and the step's
 * collectives, and beside it a tcp comm over every member's data address (the same bootstrap a tcp view
 * uses) for control data, which is host memory: state-sync headers, sizes, callback bytes, the sampler
 * position, the job id. The tcp one is built first: it connects in milliseconds and tells a view whose
 * members are not all there before nccl's slower init starts. Under tcp one comm serves both.
 *
 * The nccl comm of the next view comes from comm/comm_rebuild.h: ncclCommShrink of the last one when the
 * new view is its members less some, in the same order, and every rank holds that parent (a vote over the
 * new tcp comm); else a fresh init, started without waiting so that the state-sync header exchange over
 * tcp overlaps it. The members a comm was built for are kept as keys (name and generation hashed).
 *
 * A tcp comm whose ranks do not all talk through shared memory says why, and that goes to the log once per
 * view (a warning when every rank was local and willing but the setup failed): the comm layer has no logger,
 * and a silent fallback to tcp costs bandwidth nobody could explain. */
#include "exec_feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_training.h"
#include "base/log.h"
#include "comm/comm_rebuild.h"
#include "comm/comm_tcp.h"
#include "comm_members.h"
#include "training.h"

/* A tcp communicator connects in milliseconds on a healthy view; a view that went stale while we built it
 * (a member left) holds us no longer than this, or until a newer view arrives (is_superseded). */
#define TCP_CONNECT_TIMEOUT_MS 2000
#define NCCL_CONNECT_TIMEOUT_MS 30000
/* A tcp collective round whose peer has sent nothing for this long hints that peer to membership, which
 * probes it at once instead of in its turn (up to a few probe periods away): a host that vanished sends
 * no reset. A fifth of the train profile's probe period; a slow peer only costs a ping. */
#define STALL_HINT_MS 20

/* The comm tells us a neighbour's connection broke, or that it went silent mid-collective: ask membership
 * to probe it now (a hint only). */
static void on_peer_reset(void *arg, int peer_rank, const char *peer_addr)
{
	ftl_agent *a = arg;
	ftl_agent_lock(a);
	const ftl_rdv_view *v = &ftl_agent_views_locked(a)->view;
	if (peer_rank >= 0 && (uint32_t)peer_rank < v->n)
		ftl_agent_hint_locked(a, v->members[peer_rank].name);
	ftl_agent_unlock(a);
	ftl_agent_wake(a);
}

/* Uninstalls the current communicators and installs these, built for w (NULL: none). A view newer than the
 * one they were built for arrived meanwhile: nobody aborted them yet, so this does. A tcp comm's member keys
 * are kept here (an nccl one's by rebuild_device), so that a view change can tell a join (train_hooks.c). */
static void install(ftl_agent *a, const ftl_comm_pair *c, const ftl_rdv_view *w)
{
	ftl_training *t = ftl_agent_training(a);
	bool is_tcp = c->data && c->data == c->ctrl;
	uint64_t *keys = is_tcp ? ftl_comm_member_keys(w) : NULL; /* none when out of memory: aborted then */
	ftl_agent_lock(a);
	ftl_comm_pair old = {t->comm, t->ctrl_comm};
	t->comm = c->data;
	t->ctrl_comm = c->ctrl != c->data ? c->ctrl : NULL;
	if (c->data && ftl_agent_views_locked(a)->view.seq != w->seq)
		ftl_training_abort_comms_locked(t);
	ftl_subgroups_hang_up_locked(t); /* split from the communicator replaced here */
	t->comm_seq = c->data ? w->seq : 0;
	if (!c->data || is_tcp) {
		free(t->comm_keys);
		t->comm_keys = keys;
		t->comm_n = keys ? w->n : 0;
	}
	ftl_agent_unlock(a);
	ftl_comm_delete(old.ctrl);
	ftl_comm_delete(old.data); /* tcp closes sockets; nccl tears down on a detached thread */
}

/* The tcp bootstrap of w: every member's data address, by rank (malloc'd text). */
static char *tcp_bootstrap(const ftl_rdv_view *w, size_t *len)
{
	const char **addrs = malloc(w->n * sizeof(*addrs));
	if (!addrs)
		return NULL;
	for (uint32_t i = 0; i < w->n; i++)
		addrs[i] = w->members[i].data_addr;
	size_t need = ftl_comm_tcp_bootstrap(NULL, 0, addrs, (int)w->n);
	char *text = need ? malloc(need + 1) : NULL;
	if (text)
		ftl_comm_tcp_bootstrap(text, need + 1, addrs, (int)w->n);
	free(addrs);
	*len = need;
	return text;
}

/* The config of w's communicator on backend; *text is the tcp bootstrap it points to (free it after). */
static ftl_err config_for(ftl_agent *a, const ftl_rdv_view *w, ftl_comm_backend backend, struct ftl_comm_config *out,
			  char **text)
{
	ftl_training *t = ftl_agent_training(a);
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.backend = backend;
	cfg.rank = w->self_rank;
	cfg.world_size = (int)w->n;
	/* Epochs are unique within a lineage only: two clusters that formed apart and merged may share one. */
	cfg.comm_id = w->epoch ^ (w->lineage * 0x9e3779b97f4a7c15ULL);
	cfg.listen_fd = t->data_fd;
	cfg.timeout_ms = t->cfg.collective_timeout_ms;
	cfg.connect_timeout_ms = backend == FTL_COMM_TCP ? TCP_CONNECT_TIMEOUT_MS : NCCL_CONNECT_TIMEOUT_MS;
	cfg.cuda_device = t->cfg.cuda_device;
	cfg.shm = t->cfg.comm_shm;
	cfg.shm_slot_bytes = (size_t)t->cfg.comm_shm_slot_kb << 10;
	cfg.peer_reset_cb = on_peer_reset;
	cfg.peer_reset_arg = a;
	cfg.stall_hint_ms = STALL_HINT_MS;
	*text = NULL;
	if (backend == FTL_COMM_TCP) {
		*text = tcp_bootstrap(w, &cfg.bootstrap_len);
		if (!*text) {
			return ftl_diag_set(FTL_ERR_INVALID, "ftl: view %llu has a bad data address",
					    (unsigned long long)w->epoch);
		}
		cfg.bootstrap = *text;
	} else {
		cfg.bootstrap = w->blob;
		cfg.bootstrap_len = w->blob_len;
	}
	*out = cfg;
	return FTL_OK;
}

/* The comm's error (its reason in the diag) as the step's: what failed, where, why. */
static ftl_err built(ftl_err e, const ftl_rdv_view *w, ftl_comm_backend backend)
{
	/* A refusal in the handshake (another comm id, rank or world size: FTL_ERR_INVALID from the comm) means
	 * the members are not building the same view yet, a view change under way: retried like a lost peer,
	 * within the setup-failure budget, not fatal at once. The chaos soak lost five workers that way after
	 * a burst of deaths. */
	if (e == FTL_ERR_INVALID)
		e = FTL_ERR_PEER_LOST;
	if (e != FTL_OK)
		return ftl_diag_set(e, "ftl: cannot build the %s communicator of view %llu: %s",
				    ftl_comm_backend_strs[backend], (unsigned long long)w->epoch, ftl_diag_message());
	return e;
}

/* The view a build is for, as the tcp connect asks whether it is still wanted. */
struct build_of {
	ftl_agent *a;
	uint64_t seq;
};

/* A newer view arrived (or the agent stops): its members build that one's comm id and refuse ours. */
static int is_superseded(void *arg)
{
	const struct build_of *b = arg;
	ftl_agent_lock(b->a);
	bool is_stale = ftl_agent_views_locked(b->a)->view.seq != b->seq || ftl_agent_is_gone_locked(b->a);
	ftl_agent_unlock(b->a);
	return is_stale;
}

static ftl_err create(ftl_agent *a, const ftl_rdv_view *w, ftl_comm_backend backend, ftl_comm **out)
{
	struct ftl_comm_config cfg;
	char *text;
	ftl_err e = config_for(a, w, backend, &cfg, &text);
	if (e != FTL_OK)
		return e;
	struct build_of build = {a, w->seq};
	cfg.is_cancelled = is_superseded;
	cfg.cancel_arg = &build;
	e = ftl_comm_new(&cfg, out);
	free(text);
	return built(e, w, backend);
}

/* w's device comm: the last one shrunk where every rank can, else a fresh init (comm_rebuild.h). The last
 * one is taken out of the training struct first (the loop no longer aborts it; the rebuild consumes it). */
static ftl_err rebuild_device(ftl_agent *a, const ftl_rdv_view *w, ftl_comm *host, ftl_comm **out)
{
	ftl_training *t = ftl_agent_training(a);
	struct ftl_comm_config cfg;
	char *text;
	ftl_err e = config_for(a, w, t->cfg.backend, &cfg, &text);
	if (e != FTL_OK)
		return e;
	ftl_agent_lock(a);
	struct ftl_comm_rebuild rb = {.old = t->comm, .old_keys = t->comm_keys, .old_n = (int)t->comm_n,
				      .new_keys = ftl_comm_member_keys(w), .new_n = (int)w->n, .host = host, .cfg = &cfg};
	t->comm = NULL;
	t->comm_keys = NULL;
	t->comm_n = 0;
	ftl_agent_unlock(a);
	ftl_comm_rebuild_path path;
	e = ftl_comm_rebuild(&rb, out, &path);
	free(text);
	free((void *)rb.old_keys);
	if (e == FTL_OK) {
		ftl_agent_lock(a);
		t->comm_keys = (uint64_t *)rb.new_keys;
		t->comm_n = w->n;
		ftl_agent_unlock(a);
		ftl_log(ftl_agent_logger(a), FTL_LOG_INFO, "training",
			FTL_MSG("nccl communicator of view %llu: %s", (unsigned long long)w->epoch,
				ftl_comm_rebuild_path_strs[path]),
			FTL_F_UINT("epoch", w->epoch), FTL_F_STR("path", ftl_comm_rebuild_path_strs[path]));
	} else {
		free((void *)rb.new_keys);
	}
	return built(e, w, t->cfg.backend);
}

static ftl_err factory_build(void *ctx, const ftl_rdv_view *w, ftl_comm_pair *out)
{
	ftl_agent *a = ctx;
	ftl_comm_backend backend = ftl_agent_training(a)->cfg.backend;
	int64_t start = ftl_agent_now_us(a);
	ftl_comm_pair c = {0};
	ftl_err e = create(a, w, FTL_COMM_TCP, &c.ctrl);
	if (e == FTL_OK && backend != FTL_COMM_TCP && (e = rebuild_device(a, w, c.ctrl, &c.data)) != FTL_OK)
		ftl_comm_delete(c.ctrl);
	if (e != FTL_OK)
		return e;
	if (backend == FTL_COMM_TCP)
		c.data = c.ctrl;
	install(a, &c, w);
	*out = c;
	ftl_log(ftl_agent_logger(a), FTL_LOG_INFO, "training",
		FTL_MSG("communicator built (%s%s)", ftl_comm_backend_strs[backend],
			backend == FTL_COMM_TCP ? "" : ", tcp beside it for control data"),
		FTL_F_UINT("epoch", w->epoch), FTL_F_INT("rank", w->self_rank), FTL_F_UINT("world_size", w->n),
		FTL_F_DOUBLE("took_ms", (double)(ftl_agent_now_us(a) - start) / 1000.0),
		FTL_F_STR("backend", ftl_comm_backend_strs[backend]));
	bool is_failure;
	const char *why = ftl_comm_tcp_shm_why(c.ctrl, &is_failure);
	if (why != NULL)
		ftl_log(ftl_agent_logger(a), is_failure ? FTL_LOG_WARN : FTL_LOG_INFO, "training",
			FTL_MSG("tcp communicator not on shared memory: %s", why), FTL_F_UINT("epoch", w->epoch),
			FTL_F_INT("rank", w->self_rank), FTL_F_STR("why", why));
	return FTL_OK;
}

static void factory_drop(void *ctx) { install(ctx, &(ftl_comm_pair){0}, NULL); }

const ftl_comm_factory_ops ftl_exec_agent_factory = {
	.build = factory_build,
	.drop = factory_drop,
};
