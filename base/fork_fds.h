/* fork_fds: the descriptors that a forked child closes at once, so that the parent's death still shows.
 *
 * A process that forks without exec (a PyTorch DataLoader's workers, any multiprocessing "fork" child)
 * hands its child a copy of every descriptor. A socket ends only when its last copy closes: kill -9 the
 * parent while the child lives and its peers see no EOF, no reset and no refused port, so a dead rank looks
 * alive until a timeout. Every communicator and agent lists its sockets here while it holds them; a
 * pthread_atfork child handler closes them in the child only (close, never shutdown, which would cut the
 * parent's connections too). The exec case is SOCK_CLOEXEC's, everywhere the sockets are made.
 *
 * Threads: after fork only the forking thread exists in the child, so the child handler takes no lock that
 * another thread may have held at the fork: the prepare handler takes the registry's lock and the parent
 * and child handlers release it, so the child sees the list whole. A descriptor is added after it is made
 * and removed before it is closed, so the list never names a descriptor that is closed or reused.
 * What this cannot reach: descriptors someone duplicated (dup, SCM_RIGHTS to another process), NCCL's own
 * sockets, a socket made but not yet added when the fork happens, and children made by vfork or
 * posix_spawn (no fork handlers run there; they exec, and CLOEXEC covers them). */
#ifndef FTL_BASE_FORK_FDS_H
#define FTL_BASE_FORK_FDS_H

/* Adds fd (ignored when negative). Out of memory: it is not added, and a forked child keeps it. O(1). */
void ftl_fork_fds_add(int fd);

/* Removes one entry of fd, if any, before the caller closes it. O(n) over the n registered. */
void ftl_fork_fds_remove(int fd);

/* How many descriptors are registered now (for tests). */
int ftl_fork_fds_count(void);

#endif /* FTL_BASE_FORK_FDS_H */
