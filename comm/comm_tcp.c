/* comm_tcp: the host backend's lifecycle. Creation allocates everything a collective needs (plan steps,
 * the reduction scratch segment, the doubling stage, the abort eventfd) so that collectives never allocate; abort only writes
 * the eventfd, so it is safe from any thread and from a signal handler. When every rank is on this host,
 * creation also attaches the shared-memory segment (comm_shm.h), and the same abort wakes its waits. */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_tcp.h"
#include "base/fork_fds.h"

/* Every descriptor the communicator holds, to fn: what a forked child must close (base/fork_fds.h) so that
 * this process's death still ends the ring, the mesh links and the shared-memory liveness sockets. */
static void each_fd(const struct ftl_comm_tcp *t, void (*fn)(int fd))
{
	fn(t->next_fd);
	fn(t->prev_fd);
	fn(t->wake_fd);
	for (int i = 0; i < t->n_links; i++)
		fn(t->link_fd[i]);
	for (int q = 0; t->pairs != NULL && q < t->base.world_size; q++)
		if (t->pairs[q].fd >= 0 && t->pairs[q].is_fork_listed)
			fn(t->pairs[q].fd);
	if (t->shm != NULL)
		ftl_comm_shm_each_fd(t->shm, fn);
}

/* The pair links that came in while the communicator was being made go on the fork list with the rest. */
static void list_early_pairs(struct ftl_comm_tcp *t)
{
	for (int q = 0; t->pairs != NULL && q < t->base.world_size; q++)
		t->pairs[q].is_fork_listed = t->pairs[q].fd >= 0;
}

static void tcp_abort(struct ftl_comm *comm)
{
	struct ftl_comm_tcp *t = (struct ftl_comm_tcp *)comm;
	uint64_t one = 1;
	if (t->wake_fd >= 0)
		(void)!write(t->wake_fd, &one, sizeof(one));
}

static void shut_down(int fd)
{
	if (fd >= 0)
		(void)shutdown(fd, SHUT_RDWR); /* ENOTSOCK for the eventfd: nothing to do there */
}

static void tcp_hang_up(struct ftl_comm *comm)
{
	each_fd((struct ftl_comm_tcp *)comm, shut_down);
}

static void tcp_destroy(struct ftl_comm *comm)
{
	struct ftl_comm_tcp *t = (struct ftl_comm_tcp *)comm;
	each_fd(t, ftl_fork_fds_remove); /* before they close (a no-op for a creation that failed) */
	ftl_comm_shm_detach(t->shm);
	if (t->next_fd >= 0)
		close(t->next_fd);
	if (t->prev_fd >= 0)
		close(t->prev_fd);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	for (int i = 0; i < t->n_links; i++)
		if (t->link_fd[i] >= 0)
			close(t->link_fd[i]);
	for (int q = 0; t->pairs != NULL && q < t->base.world_size; q++)
		if (t->pairs[q].fd >= 0)
			close(t->pairs[q].fd);
	free(t->pairs);
	free(t->addrs);
	free(t->stage);
	free(t->steps);
	free(t->scratch);
	free(t);
}

bool ftl_comm_tcp_is_shm(const struct ftl_comm *comm)
{
	return ((const struct ftl_comm_tcp *)comm)->shm != NULL;
}

const char *ftl_comm_tcp_shm_why(const struct ftl_comm *comm, bool *is_failure)
{
	const struct ftl_comm_tcp *t = (const struct ftl_comm_tcp *)comm;
	bool is_tcp_alone = comm != NULL && comm->backend == FTL_COMM_TCP && t->shm == NULL &&
			    t->shm_outcome.why[0] != '\0';
	if (is_failure != NULL)
		*is_failure = is_tcp_alone && t->shm_outcome.is_failed;
	return is_tcp_alone ? t->shm_outcome.why : NULL;
}

int ftl_comm_tcp_shm_strangers(const struct ftl_comm *comm)
{
	return comm != NULL && comm->backend == FTL_COMM_TCP ? ((const struct ftl_comm_tcp *)comm)->shm_outcome.strangers : 0;
}

/* When every rank is on this host, the collectives go through shared memory, lent what it needs from the
 * connected ring (comm_shm.h); else t->shm stays NULL and t->shm_outcome says why. */
static ftl_err choose_shm(struct ftl_comm_tcp *t, const struct ftl_comm_config *cfg)
{
	struct ftl_comm_shm_lender lender = {
		.comm = &t->base,
		.addrs = (const char(*)[FTL_COMM_ADDR_MAX])t->addrs,
		.wake_fd = t->wake_fd,
		.ring_fd = {t->next_fd, t->prev_fd},
		.ring_rank = {ftl_comm_tcp_next(t), ftl_comm_tcp_prev(t)},
		.broadcast = ftl_comm_tcp_broadcast,
		.allgather = ftl_comm_tcp_allgather,
	};
	return ftl_comm_shm_attach(&lender, cfg, &t->shm, &t->shm_outcome);
}

static const char *tcp_peer_addr(const struct ftl_comm *comm, int rank)
{
	return ((const struct ftl_comm_tcp *)comm)->addrs[rank];
}

static const struct ftl_comm_backend_ops tcp_ops = {
	.allreduce = ftl_comm_tcp_allreduce,
	.broadcast = ftl_comm_tcp_broadcast,
	.allgather = ftl_comm_tcp_allgather,
	.barrier = ftl_comm_tcp_barrier,
	.p2p = ftl_comm_tcp_p2p,
	.peer_addr = tcp_peer_addr,
	.shrink = NULL,
	.abort = tcp_abort,
	.hang_up = tcp_hang_up,
	.destroy = tcp_destroy,
	.is_async = true,
};

static ftl_err tcp_create(const struct ftl_comm_config *cfg, struct ftl_comm **out)
{
	struct ftl_comm_tcp *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return ftl_comm_fail_diag(FTL_ERR_SYSTEM, "out of memory");
	ftl_comm_base_init(&t->base, &tcp_ops, cfg);
	t->next_fd = t->prev_fd = t->listen_fd = -1;
	ftl_comm_tcp_spin_init(&t->spin, 1, 1); /* until we know who is on this host */
	t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	t->addrs = calloc((size_t)cfg->world_size, sizeof(*t->addrs));
	t->steps = calloc(2 * (size_t)cfg->world_size, sizeof(*t->steps));
	t->scratch = malloc(FTL_COMM_TCP_SEGMENT);
	t->stage = malloc(FTL_COMM_TCP_STAGE);
	if (cfg->world_size > 1) { /* the mesh links: fold partner and doubling partners */
		ftl_comm_tcp_doubling_schedule(cfg->world_size, cfg->rank, &t->dbl);
		if (t->dbl.fold_peer >= 0)
			t->link_rank[t->n_links++] = t->dbl.fold_peer;
		for (int k = 0; k < t->dbl.n_rounds; k++)
			t->link_rank[t->n_links++] = t->dbl.partner[k];
		for (int i = 0; i < t->n_links; i++)
			t->link_fd[i] = -1;
	}
	ftl_err e;
	if (t->wake_fd < 0 || t->addrs == NULL || t->steps == NULL || t->scratch == NULL || t->stage == NULL)
		e = ftl_comm_fail_diag(FTL_ERR_SYSTEM, "out of memory or file descriptors");
	else
		e = ftl_comm_tcp_connect(t, cfg);
	if (e == FTL_OK)
		e = choose_shm(t, cfg);
	cpu_set_t cpus;
	if (e == FTL_OK && sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
		ftl_comm_tcp_spin_init(&t->spin, t->shm_outcome.n_host_ranks, CPU_COUNT(&cpus));
	if (e != FTL_OK) {
		tcp_destroy(&t->base);
		return e;
	}
	list_early_pairs(t);
	each_fd(t, ftl_fork_fds_add);
	*out = &t->base;
	return FTL_OK;
}

const struct ftl_comm_transport ftl_comm_tcp_transport = {.create = tcp_create};
