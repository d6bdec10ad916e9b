/* Training settings and registration: the FTL_* training variables, the comm (data) listener each worker
 * keeps across communicators, registered buffers and callbacks and the sampler (into the state registry),
 * the job status, and the ftl_execute state machine's place in it. */
#include "agent_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "errfmt.h"
#include "checkpoint.h"
#include "fork_fds.h"
#include "exec_feed.h"
#include "global_batch.h"
#include "log.h"

/* After a failed step, how long to wait for membership to explain it (a new view) before asking for the
 * same members under a new epoch; after a failed communicator build or state sync, how long before asking. */
#define SAME_VIEW_GRACE_US (3 * 1000000LL)
#define REBUILD_BACKOFF_US (250 * 1000LL)

void ftl_training_config_default(ftl_training_config *t)
{
	memset(t, 0, sizeof(*t));
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
}

/* One of two words (false, true) from the environment into *dst; unset leaves it. -1 naming the variable. */
static int env_choice(const char *var, const char *no, const char *yes, bool *dst, char *err, size_t len)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	if (strcmp(v, no) != 0 && strcmp(v, yes) != 0)
		return ftl_errf(err, len, "%s=%s: expected %s or %s", var, v, no, yes);
	*dst = strcmp(v, yes) == 0;
	return 0;
}

/* FTL_CHECKPOINT_DIR, _EVERY, _KEEP, _BUSY, _FRESH, _CHECKSUM. */
static int checkpoint_from_env(ftl_training_config *t, char *err, size_t len)
{
	int64_t every = t->checkpoint_every, keep = t->checkpoint_keep;
	if (ftl_env_int("FTL_CHECKPOINT_EVERY", &every, 1, 1000000000, err, len) ||
	    ftl_env_int("FTL_CHECKPOINT_KEEP", &keep, 1, 1000, err, len))
		return -1;
	/* set but empty is refused: it used to turn checkpoints off without a word */
	char dir[sizeof(t->checkpoint_dir)] = "";
	if (ftl_env_str("FTL_CHECKPOINT_DIR", dir, sizeof(dir), err, len))
		return -1;
	bool wait = t->checkpoint_wait, fresh = t->checkpoint_fresh, blake2b = t->checkpoint_blake2b;
	if (env_choice("FTL_CHECKPOINT_BUSY", "skip", "wait", &wait, err, len) ||
	    env_choice("FTL_CHECKPOINT_FRESH", "0", "1", &fresh, err, len) ||
	    env_choice("FTL_CHECKPOINT_CHECKSUM", "xxh3", "blake2b", &blake2b, err, len))
		return -1;
	if (dir[0])
		snprintf(t->checkpoint_dir, sizeof(t->checkpoint_dir), "%s", dir);
	t->checkpoint_wait = wait;
	t->checkpoint_fresh = fresh;
	t->checkpoint_blake2b = blake2b;
	t->checkpoint_every = every;
	t->checkpoint_keep = (int)keep;
	return 0;
}

int ftl_training_config_from_env(ftl_training_config *t, char *err, size_t len)
{
	int64_t min = t->min_workers, max = t->max_workers, settle = t->settle_ms, retries = t->max_retries;
	int64_t below = t->below_min_timeout_ms, coll = t->collective_timeout_ms, dev = t->cuda_device;
	int64_t expected = t->expected_workers, expected_wait = t->expected_wait_ms;
	if (checkpoint_from_env(t, err, len) || ftl_batch_config_from_env(&t->batch, err, len) ||
	    ftl_env_int("FTL_MIN_WORKERS", &min, 1, FTL_RDV_MAX_MEMBERS, err, len) ||
	    ftl_env_int("FTL_MAX_WORKERS", &max, 1, FTL_RDV_MAX_MEMBERS, err, len) ||
	    ftl_env_int("FTL_SETTLE_MS", &settle, 0, 600000, err, len) ||
	    ftl_env_int("FTL_MAX_RETRIES", &retries, 0, 1000, err, len) ||
	    ftl_env_int("FTL_BELOW_MIN_TIMEOUT_MS", &below, 0, 86400000, err, len) ||
	    ftl_env_int("FTL_EXPECTED_WORKERS", &expected, 0, FTL_RDV_MAX_MEMBERS, err, len) ||
	    ftl_env_int("FTL_EXPECTED_WAIT_MS", &expected_wait, 0, 86400000, err, len) ||
	    ftl_env_int("FTL_COLLECTIVE_TIMEOUT_MS", &coll, 1, 3600000, err, len) ||
	    ftl_env_int("FTL_CUDA_DEVICE", &dev, 0, 1024, err, len))
		return -1;
	int64_t slot_kb = t->comm_shm_slot_kb;
	bool is_shm_off = t->comm_shm == FTL_COMM_SHM_OFF;
	if (env_choice("FTL_COMM_SHM", "auto", "off", &is_shm_off, err, len) ||
	    ftl_env_int("FTL_COMM_SHM_SLOT_KB", &slot_kb, 4, 262144, err, len))
		return -1;
	const char *comm = getenv("FTL_COMM");
	if (comm && strcmp(comm, "tcp") == 0)
		t->backend = FTL_COMM_TCP;
	else if (comm && strcmp(comm, "nccl") == 0)
		t->backend = FTL_COMM_NCCL;
	else if (comm) {
		snprintf(err, len, "FTL_COMM=%s: expected tcp or nccl", comm);
		return -1;
	}
	t->min_workers = (uint32_t)min;
	t->max_workers = (uint32_t)max;
	t->settle_ms = settle;
	t->max_retries = (int)retries;
	t->below_min_timeout_ms = below;
	t->expected_workers = (uint32_t)expected;
	t->expected_wait_ms = expected_wait;
	t->collective_timeout_ms = (int)coll;
	t->cuda_device = (int)dev;
	t->comm_shm = is_shm_off ? FTL_COMM_SHM_OFF : FTL_COMM_SHM_AUTO;
	t->comm_shm_slot_kb = (int)slot_kb;
	return 0;
}

int ftl_set_training(ftl_agent *a, const ftl_training_config *t, char *err, size_t len)
{
	if (a->is_started) {
		snprintf(err, len, "ftl_set_training: call it before ftl_agent_start");
		return -1;
	}
	if (t->min_workers < 1 || t->max_workers < t->min_workers) {
		snprintf(err, len, "FTL_MIN_WORKERS/FTL_MAX_WORKERS: need 1 <= min (%u) <= max (%u)", t->min_workers,
			 t->max_workers);
		return -1;
	}
	if (t->expected_workers > t->max_workers) {
		snprintf(err, len, "FTL_EXPECTED_WORKERS (%u) is over FTL_MAX_WORKERS (%u): the first view could never "
			 "form; set it to the Deployment's replica count", t->expected_workers, t->max_workers);
		return -1;
	}
	if (t->backend == FTL_COMM_NCCL && !ftl_comm_backend_is_available(FTL_COMM_NCCL)) {
		snprintf(err, len, "FTL_COMM=nccl: this build has no usable NCCL backend (no CUDA/NCCL found); use tcp");
		return -1;
	}
	if (t->checkpoint_dir[0] && (t->checkpoint_every < 1 || t->checkpoint_keep < 1)) {
		snprintf(err, len, "FTL_CHECKPOINT_EVERY (%lld) and FTL_CHECKPOINT_KEEP (%d) must be at least 1",
			 (long long)t->checkpoint_every, t->checkpoint_keep);
		return -1;
	}
	if (ftl_batch_config_check(&t->batch, err, len) != 0)
		return -1;
	ftl_training *tr = &a->train;
	tr->cfg = *t;
	ftl_train_metrics_create(&tr->metrics);
	if (ftl_checkpoint_setup(&tr->ckpt, &tr->cfg, err, len) != 0)
		return -1;
	tr->state.backend = t->backend;
	tr->state.batch = t->batch;
	ftl_exec_retry_policy policy = {
		.max_retries = t->max_retries,
		.setup_grace_us = (int64_t)t->collective_timeout_ms * 1000,
		.step_failure_rebuild_us = SAME_VIEW_GRACE_US,
		.setup_failure_rebuild_us = REBUILD_BACKOFF_US,
	};
	ftl_exec_create(&tr->exec, &policy, &tr->state);
	ftl_exec_set_feed(&tr->exec, &ftl_exec_agent_feed, a);
	ftl_exec_set_factory(&tr->exec, &ftl_exec_agent_factory, a);
	ftl_exec_set_checkpoints(&tr->exec, &ftl_checkpoint_exec_ops, &tr->ckpt);
	tr->is_enabled = true;
	tr->data_fd = -1;
	return 0;
}

/* The comm listener: the advertised IP, a port the kernel picks; kept for the agent's life. */
int ftl_agent_data_listen(ftl_agent *a, char *err, size_t len)
{
	struct sockaddr_storage ss;
	ftl_addr_parse_numeric(a->set.advertise, &ss);
	struct sockaddr_storage bind_ss = a->set.bind;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&bind_ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&bind_ss)->sin6_port = 0;
	int fd = socket(bind_ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	socklen_t sl = bind_ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&bind_ss, sl) != 0 || listen(fd, 128) != 0) {
		snprintf(err, len, "cannot open the comm listener on %s: %s", a->cfg.bind, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	getsockname(fd, (struct sockaddr *)&bind_ss, &sl);
	uint16_t port = bind_ss.ss_family == AF_INET ? ((struct sockaddr_in *)&bind_ss)->sin_port
						      : ((struct sockaddr_in6 *)&bind_ss)->sin6_port;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = port;
	ftl_addr_format((struct sockaddr *)&ss, a->train.data_addr, sizeof(a->train.data_addr));
	a->train.data_fd = fd;
	ftl_fork_fds_add(fd); /* a forked child closes it: a dead rank's comm port refuses (base/fork_fds.h) */
	return 0;
}

void ftl_training_free(ftl_training *t)
{
	ftl_checkpoint_teardown(&t->ckpt); /* a write in progress finishes first */
	if (t->ctrl_comm != t->comm)
		ftl_comm_destroy(t->ctrl_comm);
	ftl_comm_destroy(t->comm);
	t->comm = t->ctrl_comm = NULL;
	free(t->comm_keys);
	t->comm_keys = NULL;
	if (t->data_fd >= 0 && t->is_enabled) {
		ftl_fork_fds_remove(t->data_fd);
		close(t->data_fd);
	}
	free(t->view.members);
	ftl_exec_destroy(&t->exec);
	ftl_state_free(&t->state);
	free(t->exact_scratch);
}

void ftl_training_abort_comms_locked(ftl_training *t)
{
	if (t->comm)
		ftl_comm_abort(t->comm);
	if (t->ctrl_comm)
		ftl_comm_abort(t->ctrl_comm);
}

json_t *ftl_training_execute_json(ftl_training *t)
{
	if (!t->is_enabled)
		return json_null();
	return json_pack("{s:s}", "state", ftl_exec_state_strs[ftl_exec_get_state(&t->exec)]);
}

/* A refused registration: said in the log and kept for ftl_last_error. */
static int refused(ftl_agent *a, int rc)
{
	if (rc != 0)
		ftl_log(FTL_LOG_ERROR, "training", NULL, "%s", a->train.exec.last_error);
	return rc;
}

int ftl_register_buffer(ftl_agent *a, const char *name, void *ptr, size_t bytes, bool is_device)
{
	char *err = a->train.exec.last_error;
	size_t len = sizeof(a->train.exec.last_error);
	if (!a->train.is_enabled)
		return refused(a, ftl_errf(err, len, "ftl_register_buffer '%s': call ftl_set_training first (it says "
					   "which memory the backend moves)", name ? name : "(null)"));
	return refused(a, ftl_state_register_buffer(&a->train.state, name, ptr, bytes, is_device, err, len));
}

int ftl_register_callbacks(ftl_agent *a, ftl_save_cb save, ftl_load_cb load, void *ctx)
{
	a->train.state.save = save;
	a->train.state.load = load;
	a->train.state.cb_ctx = ctx;
	return 0;
}

int ftl_set_sampler(ftl_agent *a, uint64_t dataset_size, uint32_t batch_per_rank, uint64_t seed)
{
	return refused(a, ftl_state_set_sampler(&a->train.state, dataset_size, batch_per_rank, seed,
						a->train.exec.last_error, sizeof(a->train.exec.last_error)));
}

int ftl_set_batch(ftl_agent *a, const ftl_batch_config *b, char *err, size_t len)
{
	if (a->is_started)
		return ftl_errf(err, len, "ftl_set_batch: call it before ftl_agent_start");
	if (ftl_batch_config_check(b, err, len) != 0)
		return -1;
	a->train.cfg.batch = *b;
	a->train.state.batch = *b;
	return 0;
}

void ftl_get_job_status(ftl_agent *a, ftl_job_status *out)
{
	pthread_mutex_lock(&a->lock);
	*out = a->train.status;
	pthread_mutex_unlock(&a->lock);
}

const char *ftl_last_error(ftl_agent *a) { return a->train.exec.last_error; }
