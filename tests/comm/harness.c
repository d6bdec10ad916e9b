/* harness: see harness.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm_tcp.h"
#include "harness.h"

int64_t harness_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int listen_any(char *addr, size_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("harness: listen");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(addr, len, "127.0.0.1:%u", ntohs(sa.sin_port));
	return fd;
}

int harness_start(struct harness *h, int n, int limit_s, harness_child_fn fn, void *arg)
{
	memset(h, 0, sizeof(*h));
	if (n < 1 || n > HARNESS_MAX)
		return -1;
	h->n = n;
	h->deadline_ns = harness_now_ns() + (int64_t)limit_s * 1000000000;
	struct harness_child c = {.n = n, .arg = arg};
	int fds[HARNESS_MAX];
	for (int i = 0; i < n; i++)
		if ((fds[i] = listen_any(c.addrs[i], sizeof(c.addrs[i]))) < 0)
			return -1;
	int pfd[2];
	if (pipe(pfd) < 0)
		return -1;
	h->report_fd = pfd[0];
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("harness: fork");
			return -1;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			alarm((unsigned)limit_s);
			close(pfd[0]);
			for (int k = 0; k < n; k++)
				if (k != i)
					close(fds[k]);
			c.rank = i;
			c.listen_fd = fds[i];
			c.report_fd = pfd[1];
			int rc = fn(&c);
			close(fds[i]);
			close(pfd[1]);
			exit(rc);
		}
		h->pids[i] = pid;
	}
	close(pfd[1]);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return 0;
}

int harness_read(struct harness *h, struct harness_report *rep)
{
	size_t got = 0;
	while (got < sizeof(*rep)) {
		int64_t left_ms = (h->deadline_ns - harness_now_ns()) / 1000000;
		if (left_ms <= 0) {
			fprintf(stderr, "harness: time limit reached while waiting for a report\n");
			return -1;
		}
		struct pollfd p = {.fd = h->report_fd, .events = POLLIN};
		int rc = poll(&p, 1, (int)left_ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue;
		ssize_t r = read(h->report_fd, (char *)rep + got, sizeof(*rep) - got);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "harness: every child is gone\n");
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

void harness_signal(struct harness *h, int rank, int sig)
{
	if (rank >= 0 && rank < h->n && !h->is_reaped[rank])
		kill(h->pids[rank], sig);
}

int harness_wait(struct harness *h, uint32_t killed)
{
	int left = 0;
	for (int i = 0; i < h->n; i++)
		left += !h->is_reaped[i];
	bool is_killed_all = false;
	while (left > 0) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid > 0) {
			for (int i = 0; i < h->n; i++)
				if (h->pids[i] == pid && !h->is_reaped[i]) {
					h->is_reaped[i] = true;
					h->status[i] = status;
					left--;
				}
			continue;
		}
		if (pid < 0 && errno != EINTR)
			break;
		if (!is_killed_all && harness_now_ns() > h->deadline_ns) {
			fprintf(stderr, "harness: time limit reached, killing every child\n");
			for (int i = 0; i < h->n; i++)
				if (!h->is_reaped[i]) {
					kill(h->pids[i], SIGKILL);
					killed &= ~(1u << i);
				}
			is_killed_all = true;
		}
		struct timespec nap = {0, 5 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
	close(h->report_fd);
	int failed = 0;
	for (int i = 0; i < h->n; i++) {
		if (killed & (1u << i))
			continue;
		int st = h->status[i];
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			failed++;
			if (WIFSIGNALED(st))
				fprintf(stderr, "harness: rank %d died of signal %d\n", i, WTERMSIG(st));
			else
				fprintf(stderr, "harness: rank %d exited with %d\n", i, WEXITSTATUS(st));
		}
	}
	return failed;
}

void harness_report(struct harness_child *c, int kind, int err, int64_t value)
{
	struct harness_report rep = {.rank = c->rank, .kind = kind, .err = err, .t_ns = harness_now_ns(), .value = value};
	if (write(c->report_fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		perror("harness: report");
}

void harness_comm_config(struct harness_child *c, const int *members, int n_members, uint64_t comm_id, int timeout_ms,
			 struct ftl_comm_config *cfg, char *boot, size_t boot_len)
{
	const char *addrs[HARNESS_MAX];
	int rank = -1;
	for (int i = 0; i < n_members; i++) {
		addrs[i] = c->addrs[members[i]];
		if (members[i] == c->rank)
			rank = i;
	}
	ftl_comm_config_init(cfg);
	cfg->rank = rank;
	cfg->world_size = n_members;
	cfg->bootstrap = boot;
	cfg->bootstrap_len = ftl_comm_tcp_bootstrap(boot, boot_len, addrs, n_members);
	cfg->comm_id = comm_id;
	cfg->listen_fd = c->listen_fd;
	cfg->timeout_ms = timeout_ms;
	cfg->connect_timeout_ms = 10000;
	cfg->peer_reset_cb = c->peer_reset_cb;
	cfg->peer_reset_arg = c->peer_reset_arg;
	cfg->stall_hint_ms = c->stall_hint_ms;
}

ftl_comm *harness_comm_with(struct harness_child *c, const int *members, int n_members, uint64_t comm_id,
			     int timeout_ms, ftl_comm_shm_mode shm, size_t slot_bytes)
{
	char boot[HARNESS_BOOT_MAX];
	struct ftl_comm_config cfg;
	harness_comm_config(c, members, n_members, comm_id, timeout_ms, &cfg, boot, sizeof(boot));
	cfg.shm = shm;
	cfg.shm_slot_bytes = slot_bytes;
	ftl_comm *comm;
	ftl_err e = ftl_comm_new(&cfg, &comm);
	if (e != FTL_OK) {
		fprintf(stderr, "rank %d: ftl_comm_new: %s: %s\n", c->rank, ftl_strerror(e), ftl_error_message());
		return NULL;
	}
	/* Every child runs on this host: asked for shared memory, it must get it. */
	if (shm == FTL_COMM_SHM_AUTO && n_members > 1 && !ftl_comm_tcp_is_shm(comm)) {
		fprintf(stderr, "rank %d: FTL_COMM_SHM=auto, all ranks local, yet the communicator is on tcp: %s\n", c->rank,
			ftl_comm_tcp_shm_why(comm, NULL));
		ftl_comm_delete(comm);
		return NULL;
	}
	return comm;
}

ftl_comm *harness_comm(struct harness_child *c, const int *members, int n_members, uint64_t comm_id, int timeout_ms)
{
	const char *shm = getenv("FTL_COMM_SHM"), *slot_kb = getenv("FTL_COMM_SHM_SLOT_KB");
	return harness_comm_with(c, members, n_members, comm_id, timeout_ms,
				 shm != NULL && strcmp(shm, "auto") == 0 ? FTL_COMM_SHM_AUTO : FTL_COMM_SHM_OFF,
				 slot_kb != NULL ? (size_t)atol(slot_kb) << 10 : 0);
}

ftl_comm *harness_comm_all(struct harness_child *c, uint64_t comm_id, int timeout_ms)
{
	int members[HARNESS_MAX];
	for (int i = 0; i < c->n; i++)
		members[i] = i;
	return harness_comm(c, members, c->n, comm_id, timeout_ms);
}

void harness_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

ftl_err harness_allreduce_bf16(ftl_comm *comm, const float *sendbuf, float *recvbuf, size_t count, ftl_reduce_op op,
			       float *residual)
{
	ftl_allreduce_opts o;
	ftl_allreduce_opts_init(&o);
	o.kind = FTL_ALLREDUCE_BF16;
	o.residual = residual;
	return ftl_comm_allreduce(comm, sendbuf, recvbuf, count, FTL_F32, op, &o, NULL);
}

ftl_err harness_allreduce_exact(ftl_comm *comm, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
				float *out)
{
	ftl_allreduce_opts o;
	ftl_allreduce_opts_init(&o);
	o.kind = FTL_ALLREDUCE_EXACT;
	o.n_rows = n_rows;
	o.total_rows = total_rows;
	return ftl_comm_allreduce(comm, rows, out, count, FTL_F32, FTL_SUM, &o, NULL);
}

void *harness_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL) {
		fprintf(stderr, "out of memory (%zu bytes)\n", n);
		exit(3);
	}
	return p;
}
