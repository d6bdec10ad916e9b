/* Training settings and registration: the FTL_* training variables, the comm (data) listener each worker
 * keeps across communicators, registered buffers and callbacks and the sampler (into the state registry),
 * the job status, and the ftl_execute state machine's place in it. */
#include "agent/agent_training.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/env_read.h"
#include "checkpoint.h"
#include "base/fork_fds.h"
#include "base/sized.h"
#include "exec_feed.h"
#include "global_batch.h"
#include "base/log.h"
#include "training.h"
#include "grad_bucket.h"

/* After a failed step, how long to wait for membership to explain it (a new view) before asking for the
 * same members under a new epoch; after a failed communicator build or state sync, how long before asking. */
#define SAME_VIEW_GRACE_US (3 * 1000000LL)
#define REBUILD_BACKOFF_US (250 * 1000LL)

/* The first size-stamped layout's size (as AGENT_CONFIG_OLDEST in agent/config.c): 0.3, up to spares. */
#define TRAINING_CONFIG_OLDEST offsetof(ftl_training_config, replica)

static void defaults(ftl_training_config *t)
{
	memset(t, 0, sizeof(*t));
	t->struct_size = sizeof(*t);
	t->min_workers = 1;
	t->max_workers = 1024;
	t->settle_ms = 500;
	t->max_retries = 10;
	t->below_min_timeout_ms = 60000;
	t->expected_wait_ms = 300000;
	t->collective_timeout_ms = 30000;
	t->backend = FTL_COMM_TCP;
	t->checkpoint_every = 100;
	t->checkpoint_keep = 3;
	t->replica_index = FTL_REPLICA_INDEX_UNSET;
}

void ftl_training_config_default_sized(ftl_training_config *t, size_t size)
{
	ftl_training_config full;
	defaults(&full);
	ftl_sized_fill(t, size, &full, sizeof(full));
}

static ftl_err widen(const ftl_training_config *in, ftl_training_config *full)
{
	defaults(full);
	return ftl_sized_widen(in, full, sizeof(*full), TRAINING_CONFIG_OLDEST, "ftl_training_config",
			       "ftl_training_config_default");
}

/* FTL_CHECKPOINT_DIR, _EVERY, _KEEP, _BUSY, _FRESH, _CHECKSUM. */
static ftl_err checkpoint_from_settings(ftl_training_config *t, const ftl_settings *s)
{
	int64_t every = t->checkpoint_every, keep = t->checkpoint_keep;
	if (ftl_setting_int(s, "FTL_CHECKPOINT_EVERY", &every, 1, 1000000000) ||
	    ftl_setting_int(s, "FTL_CHECKPOINT_KEEP", &keep, 1, 1000))
		return FTL_ERR_INVALID;
	/* set but empty is refused: it used to turn checkpoints off without a word */
	char dir[sizeof(t->checkpoint_dir)] = "";
	if (ftl_setting_str(s, "FTL_CHECKPOINT_DIR", dir, sizeof(dir)))
		return FTL_ERR_INVALID;
	bool wait = t->checkpoint_wait, fresh = t->checkpoint_fresh, blake2b = t->checkpoint_blake2b;
	if (ftl_setting_choice(s, "FTL_CHECKPOINT_BUSY", "skip", "wait", NULL, &wait) ||
	    ftl_setting_choice(s, "FTL_CHECKPOINT_FRESH", "0", "1", NULL, &fresh) ||
	    ftl_setting_choice(s, "FTL_CHECKPOINT_CHECKSUM", "xxh3", "blake2b", NULL, &blake2b))
		return FTL_ERR_INVALID;
	if (dir[0])
		snprintf(t->checkpoint_dir, sizeof(t->checkpoint_dir), "%s", dir);
	t->checkpoint_wait = wait;
	t->checkpoint_fresh = fresh;
	t->checkpoint_blake2b = blake2b;
	t->checkpoint_every = every;
	t->checkpoint_keep = (int)keep;
	return 0;
}

/* FTL_COMM_COMPRESS: one of ftl_compress_strs; unset leaves it. */
static ftl_err compress_from_settings(const ftl_settings *s, ftl_compress *dst)
{
	const char *v = ftl_settings_get(s, "FTL_COMM_COMPRESS");
	if (!v)
		return FTL_OK;
	for (int k = 0; k < FTL_COMPRESS_MAX; k++)
		if (strcmp(v, ftl_compress_strs[k]) == 0) {
			*dst = (ftl_compress)k;
			return FTL_OK;
		}
	return ftl_diag_set_setting("FTL_COMM_COMPRESS", FTL_ERR_INVALID, "FTL_COMM_COMPRESS=%s: expected off, bf16 (gradients as bf16 on the wire) "
			    "or bf16-ef (bf16 with error feedback)", v);
}

/* FTL_REPLICA, FTL_REPLICA_INDEX, FTL_REPLICA_SIZE, each judged alone (replica_check judges them together). */
static ftl_err replica_from_settings(ftl_training_config *t, const ftl_settings *s)
{
	int64_t index = t->replica_index == FTL_REPLICA_INDEX_UNSET ? -1 : (int64_t)t->replica_index;
	int64_t size = t->replica_size;
	if (ftl_setting_str(s, "FTL_REPLICA", t->replica, sizeof(t->replica)) ||
	    ftl_setting_int(s, "FTL_REPLICA_SIZE", &size, 1, FTL_RDV_MAX_MEMBERS) ||
	    ftl_setting_int(s, "FTL_REPLICA_INDEX", &index, 0, FTL_RDV_MAX_MEMBERS - 1))
		return FTL_ERR_INVALID;
	t->replica_index = index < 0 ? FTL_REPLICA_INDEX_UNSET : (uint32_t)index;
	t->replica_size = (uint32_t)size;
	return FTL_OK;
}

/* FTL_SLOW_POLICY=report|replace|rebalance. */
static ftl_err slow_policy_from_settings(ftl_training_config *t, const ftl_settings *s)
{
	const char *v = ftl_settings_get(s, "FTL_SLOW_POLICY");
	if (v == NULL)
		return FTL_OK;
	bool is_report = strcmp(v, "report") == 0;
	t->slow_replace = strcmp(v, "replace") == 0;
	t->slow_rebalance = strcmp(v, "rebalance") == 0;
	if (is_report || t->slow_replace || t->slow_rebalance)
		return FTL_OK;
	return ftl_diag_set_setting("FTL_SLOW_POLICY", FTL_ERR_INVALID,
				    "FTL_SLOW_POLICY=%s: expected report (name the slow rank), replace (a spare takes its "
				    "place) or rebalance (shares of the global batch follow each rank's speed)", v);
}

static ftl_err read_settings(ftl_training_config *t, const ftl_settings *s)
{
	int64_t min = t->min_workers, max = t->max_workers, settle = t->settle_ms, retries = t->max_retries;
	int64_t below = t->below_min_timeout_ms, coll = t->collective_timeout_ms, dev = t->cuda_device;
	int64_t expected = t->expected_workers, expected_wait = t->expected_wait_ms, spares = t->spares;
	if (checkpoint_from_settings(t, s) || replica_from_settings(t, s) ||
	    ftl_batch_config_from_settings(&t->batch, s) ||
	    compress_from_settings(s, &t->compress) ||
	    ftl_setting_int(s, "FTL_MIN_WORKERS", &min, 1, FTL_RDV_MAX_MEMBERS) ||
	    ftl_setting_int(s, "FTL_MAX_WORKERS", &max, 1, FTL_RDV_MAX_MEMBERS) ||
	    ftl_setting_int(s, "FTL_SETTLE_MS", &settle, 0, 600000) ||
	    ftl_setting_int(s, "FTL_MAX_RETRIES", &retries, 0, 1000) ||
	    ftl_setting_int(s, "FTL_BELOW_MIN_TIMEOUT_MS", &below, 0, 86400000) ||
	    ftl_setting_int(s, "FTL_EXPECTED_WORKERS", &expected, 0, FTL_RDV_MAX_MEMBERS) ||
	    ftl_setting_int(s, "FTL_EXPECTED_WAIT_MS", &expected_wait, 0, 86400000) ||
	    ftl_setting_int(s, "FTL_SPARES", &spares, 0, FTL_RDV_MAX_MEMBERS) ||
	    ftl_setting_int(s, "FTL_COLLECTIVE_TIMEOUT_MS", &coll, 1, 3600000) ||
	    ftl_setting_int(s, "FTL_CUDA_DEVICE", &dev, 0, 1024))
		return FTL_ERR_INVALID;
	int64_t slot_kb = t->comm_shm_slot_kb;
	bool is_shm_off = t->comm_shm == FTL_COMM_SHM_OFF;
	if (slow_policy_from_settings(t, s) ||
	    ftl_setting_choice(s, "FTL_COMM_SHM", "auto", "off", NULL, &is_shm_off) ||
	    ftl_setting_int(s, "FTL_COMM_SHM_SLOT_KB", &slot_kb, 4, 262144))
		return FTL_ERR_INVALID;
	const char *comm = ftl_settings_get(s, "FTL_COMM");
	if (comm && strcmp(comm, "tcp") == 0)
		t->backend = FTL_COMM_TCP;
	else if (comm && strcmp(comm, "nccl") == 0)
		t->backend = FTL_COMM_NCCL;
	else if (comm)
		return ftl_diag_set_setting("FTL_COMM", FTL_ERR_INVALID, "FTL_COMM=%s: expected tcp or nccl", comm);
	t->min_workers = (uint32_t)min;
	t->max_workers = (uint32_t)max;
	t->settle_ms = settle;
	t->max_retries = (int)retries;
	t->below_min_timeout_ms = below;
	t->expected_workers = (uint32_t)expected;
	t->expected_wait_ms = expected_wait;
	t->spares = (uint32_t)spares;
	t->collective_timeout_ms = (int)coll;
	t->cuda_device = (int)dev;
	t->comm_shm = is_shm_off ? FTL_COMM_SHM_OFF : FTL_COMM_SHM_AUTO;
	t->comm_shm_slot_kb = (int)slot_kb;
	return FTL_OK;
}

ftl_err ftl_training_config_from_settings(ftl_training_config *t, const ftl_settings *s)
{
	ftl_training_config full;
	ftl_err err = widen(t, &full);
	if (!err)
		err = read_settings(&full, s);
	if (!err)
		ftl_sized_narrow(&full, t);
	return err;
}

/* A replica's settings (ftl/execute.h): a name that can travel in the metadata, an index inside the size,
 * and room in the view for one whole replica. */
static ftl_err replica_check(const ftl_training_config *t)
{
	bool has_name = t->replica[0] != '\0', has_index = t->replica_index != FTL_REPLICA_INDEX_UNSET;
	if ((has_name || has_index || t->replica_size > 0) && !(has_name && has_index && t->replica_size > 0)) {
		const char *missing = !has_name ? "FTL_REPLICA" : t->replica_size == 0 ? "FTL_REPLICA_SIZE" : "FTL_REPLICA_INDEX";
		return ftl_diag_set_setting(missing, FTL_ERR_INVALID,
					    "%s is unset: a worker of a replica sets FTL_REPLICA (its replica's name), "
					    "FTL_REPLICA_INDEX (its place in it) and FTL_REPLICA_SIZE (the replica's "
					    "workers) together (ftlrun --replica-per-node sets them)", missing);
	}
	if (t->replica_size == 0)
		return FTL_OK;
	size_t len = strnlen(t->replica, sizeof(t->replica));
	if (len == 0 || len == sizeof(t->replica) || strpbrk(t->replica, "\x1e\x1f"))
		return ftl_diag_set_setting("FTL_REPLICA", FTL_ERR_INVALID,
					    "FTL_REPLICA: a replica needs a name of 1 to %zu bytes without control "
					    "characters (the host's or the pod's name)", sizeof(t->replica) - 1);
	if (t->replica_index >= t->replica_size)
		return ftl_diag_set_setting("FTL_REPLICA_INDEX", FTL_ERR_INVALID,
					    "FTL_REPLICA_INDEX (%u) must be below FTL_REPLICA_SIZE (%u): the workers of a "
					    "replica are numbered 0..%u", t->replica_index, t->replica_size,
					    t->replica_size - 1);
	if (t->max_workers < t->replica_size)
		return ftl_diag_set_setting("FTL_MAX_WORKERS", FTL_ERR_INVALID,
					    "FTL_MAX_WORKERS (%u) is below FTL_REPLICA_SIZE (%u): a view holds whole "
					    "replicas, so it could never hold one; raise FTL_MAX_WORKERS",
					    t->max_workers, t->replica_size);
	return FTL_OK;
}

ftl_err ftl_set_training(ftl_agent *a, const ftl_training_config *caller_t)
{
	ftl_training_config full;
	if (widen(caller_t, &full) != FTL_OK)
		return FTL_ERR_INVALID;
	const ftl_training_config *t = &full;
	if (ftl_agent_is_started(a))
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_set_training: call it before ftl_agent_start");
	if (t->min_workers < 1 || t->max_workers < t->min_workers)
		return ftl_diag_set_setting("FTL_MIN_WORKERS", FTL_ERR_INVALID, "FTL_MIN_WORKERS/FTL_MAX_WORKERS: need 1 <= min (%u) <= max (%u)",
				    t->min_workers, t->max_workers);
	if ((uint64_t)t->expected_workers > (uint64_t)t->max_workers + t->spares)
		return ftl_diag_set_setting("FTL_EXPECTED_WORKERS", FTL_ERR_INVALID,
				    "FTL_EXPECTED_WORKERS (%u) is over FTL_MAX_WORKERS (%u) plus FTL_SPARES (%u): the "
				    "first view could never form; set it to the Deployment's replica count",
				    t->expected_workers, t->max_workers, t->spares);
	ftl_err err = replica_check(t);
	if (err)
		return err;
	if (t->backend == FTL_COMM_NCCL && !ftl_comm_backend_is_available(FTL_COMM_NCCL))
		return ftl_diag_set_setting("FTL_COMM", FTL_ERR_UNSUPPORTED,
				    "FTL_COMM=nccl: this build has no usable NCCL backend (no CUDA/NCCL found); use tcp");
	if (t->checkpoint_dir[0] && (t->checkpoint_every < 1 || t->checkpoint_keep < 1))
		return ftl_diag_set_setting("FTL_CHECKPOINT_EVERY", FTL_ERR_INVALID,
				    "FTL_CHECKPOINT_EVERY (%lld) and FTL_CHECKPOINT_KEEP (%d) must be at least 1",
				    (long long)t->checkpoint_every, t->checkpoint_keep);
	if (t->slow_rebalance && (t->slow_replace || t->replica_size > 0))
		return ftl_diag_set_setting("FTL_SLOW_POLICY", FTL_ERR_INVALID, "FTL_SLOW_POLICY=rebalance: %s",
					    t->slow_replace ? "one policy at a time (slow_replace is set too)"
							    : "a replica's shards train one model together, so no share of "
							      "theirs can move alone; a job of replicas reports slow ranks only");
	err = ftl_batch_config_check(&t->batch);
	if (!err)
		err = ftl_compress_check(t->compress, t->backend, &t->batch);
	if (err)
		return err;
	ftl_training *tr = ftl_training_of(a);
	if (!tr)
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_set_training: out of memory");
	tr->cfg = *t;
	ftl_agent_set_replica(a, t->replica, t->replica_index, t->replica_size);
	ftl_train_metrics_create(&tr->metrics);
	err = ftl_checkpoint_setup(&tr->ckpt, &tr->cfg, ftl_agent_logger(a));
	if (err)
		return err;
	tr->state.backend = t->backend;
	tr->state.batch = t->batch;
	tr->state.is_rebalanced = t->slow_rebalance;
	ftl_exec_retry_policy policy = {
		.max_retries = t->max_retries,
		.setup_grace_us = (int64_t)t->collective_timeout_ms * 1000,
		.step_failure_rebuild_us = SAME_VIEW_GRACE_US,
		.setup_failure_rebuild_us = REBUILD_BACKOFF_US,
	};
	ftl_exec_create(&tr->exec, &policy, &tr->state, ftl_agent_logger(a));
	ftl_exec_set_feed(&tr->exec, &ftl_exec_agent_feed, a);
	ftl_exec_set_factory(&tr->exec, &ftl_exec_agent_factory, a);
	ftl_exec_set_checkpoints(&tr->exec, &ftl_checkpoint_exec_ops, &tr->ckpt);
	ftl_agent_set_training_on(a);
	return FTL_OK;
}

ftl_training *ftl_training_of(ftl_agent *a)
{
	if (ftl_agent_training(a))
		return ftl_agent_training(a);
	ftl_training *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->data_fd = -1;
	ftl_pace_init(&t->pace);
	ftl_comm_time_init(&t->comm_time);
	ftl_agent_attach_training(a, t, &ftl_training_hooks);
	return t;
}

/* The comm listener: the advertised IP, a port the kernel picks; kept for the agent's life. */
ftl_err ftl_agent_data_listen(ftl_agent *a)
{
	struct sockaddr_storage ss, bind_ss;
	const char *bind_text, *advertise;
	ftl_agent_gossip_addrs(a, &bind_ss, &bind_text, &advertise);
	ftl_addr_parse_numeric(advertise, &ss);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&bind_ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&bind_ss)->sin6_port = 0;
	int fd = socket(bind_ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	socklen_t sl = bind_ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&bind_ss, sl) != 0 || listen(fd, 128) != 0) {
		ftl_err err = ftl_diag_set(FTL_ERR_SYSTEM, "cannot open the comm listener on %s: %s", bind_text,
					   strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	getsockname(fd, (struct sockaddr *)&bind_ss, &sl);
	uint16_t port = bind_ss.ss_family == AF_INET ? ((struct sockaddr_in *)&bind_ss)->sin_port
						      : ((struct sockaddr_in6 *)&bind_ss)->sin6_port;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = port;
	char data_addr[FTL_ADDR_MAX];
	ftl_addr_format((struct sockaddr *)&ss, data_addr, sizeof(data_addr));
	ftl_agent_set_data_addr(a, data_addr);
	ftl_agent_training(a)->data_fd = fd;
	ftl_fork_fds_add(fd); /* a forked child closes it: a dead rank's comm port refuses (base/fork_fds.h) */
	return FTL_OK;
}

void ftl_training_abort_comms_locked(ftl_training *t)
{
	if (t->comm)
		ftl_comm_abort(t->comm);
	if (t->ctrl_comm)
		ftl_comm_abort(t->ctrl_comm);
	ftl_subgroups_abort_locked(t);
}

ftl_err ftl_training_fail(ftl_training *t, ftl_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ftl_kept_error_vset(&t->exec.last_error, e, fmt, ap);
	va_end(ap);
	return ftl_kept_error_to_diag(&t->exec.last_error);
}

/* A refused registration (its reason in the diag): said in the log. */
static ftl_err refused(const ftl_agent *a, ftl_err err)
{
	if (err)
		ftl_log(ftl_agent_logger(a), FTL_LOG_ERROR, "training", ftl_diag_message());
	return err;
}

ftl_err ftl_register_buffer(ftl_agent *a, const char *name, void *ptr, size_t bytes, bool is_device)
{
	if (!ftl_training_of(a))
		return refused(a, ftl_diag_set(FTL_ERR_SYSTEM, "ftl_register_buffer: out of memory"));
	if (!ftl_agent_is_training(a))
		return refused(a, ftl_diag_set(FTL_ERR_INVALID,
					    "ftl_register_buffer '%s': call ftl_set_training first (it says which "
					    "memory the backend moves)",
					    name ? name : "(null)"));
	return refused(a, ftl_state_register_buffer(&ftl_agent_training(a)->state, name, ptr, bytes, is_device));
}

ftl_err ftl_register_callbacks(ftl_agent *a, ftl_save_cb save, ftl_load_cb load, void *ctx)
{
	if (!ftl_training_of(a))
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_register_callbacks: out of memory");
	ftl_agent_training(a)->state.save = save;
	ftl_agent_training(a)->state.load = load;
	ftl_agent_training(a)->state.cb_ctx = ctx;
	return FTL_OK;
}

ftl_err ftl_set_sampler(ftl_agent *a, uint64_t dataset_size, uint32_t batch_per_rank, uint64_t seed)
{
	if (!ftl_training_of(a))
		return refused(a, ftl_diag_set(FTL_ERR_SYSTEM, "ftl_set_sampler: out of memory"));
	return refused(a, ftl_state_set_sampler(&ftl_agent_training(a)->state, dataset_size, batch_per_rank, seed));
}

ftl_err ftl_set_batch(ftl_agent *a, const ftl_batch_config *b)
{
	if (ftl_agent_is_started(a))
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_set_batch: call it before ftl_agent_start");
	if (!ftl_training_of(a))
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_set_batch: out of memory");
	ftl_err err = ftl_batch_config_check(b);
	if (!err)
		err = ftl_compress_check(ftl_agent_training(a)->cfg.compress, ftl_agent_training(a)->cfg.backend, b);
	if (err)
		return err;
	ftl_agent_training(a)->cfg.batch = *b;
	ftl_agent_training(a)->state.batch = *b;
	return FTL_OK;
}

ftl_err ftl_set_batch_from_settings(ftl_agent *a, const ftl_settings *s)
{
	ftl_batch_config b = {0};
	ftl_err err = ftl_batch_config_from_settings(&b, s);
	return err ? err : ftl_set_batch(a, &b);
}

ftl_err ftl_get_job_status(ftl_agent *a, ftl_job_status *out)
{
	ftl_agent_lock(a);
	ftl_job_status full = ftl_agent_views_locked(a)->status;
	ftl_agent_unlock(a);
	return ftl_sized_out(&full, out, sizeof(full), sizeof(full), "ftl_job_status");
}

const char *ftl_last_error(ftl_agent *a) { return ftl_agent_training(a) ? ftl_agent_training(a)->exec.last_error.message : ""; }
