/* fork_fds: the registry of descriptors a forked child closes (see fork_fds.h for why and the rules). */
#include "fork_fds.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static int *fds;      /* registered descriptors, unordered; one entry per add */
static size_t n_fds, cap_fds;

static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void in_parent(void)
{
	pthread_mutex_unlock(&lock);
}

/* The child: one thread, the lock held by it since before_fork. close() only, which async-signal-safe
 * code may call; the array is the parent's copy, whole. */
static void in_child(void)
{
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	n_fds = 0;
	pthread_mutex_unlock(&lock);
}

static void install_handlers(void)
{
	pthread_atfork(before_fork, in_parent, in_child);
}

void ftl_fork_fds_add(int fd)
{
	if (fd < 0)
		return;
	pthread_once(&handlers_once, install_handlers);
	pthread_mutex_lock(&lock);
	if (n_fds == cap_fds) {
		size_t cap = cap_fds ? 2 * cap_fds : 64;
		int *grown = realloc(fds, cap * sizeof(*fds));
		if (grown != NULL) {
			fds = grown;
			cap_fds = cap;
		}
	}
	if (n_fds < cap_fds)
		fds[n_fds++] = fd;
	pthread_mutex_unlock(&lock);
}

void ftl_fork_fds_remove(int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_fds; i++) {
		if (fds[i] == fd) {
			fds[i] = fds[--n_fds];
			break;
		}
	}
	pthread_mutex_unlock(&lock);
}

int ftl_fork_fds_count(void)
{
	pthread_mutex_lock(&lock);
	int n = (int)n_fds;
	pthread_mutex_unlock(&lock);
	return n;
}
