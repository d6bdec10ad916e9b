/* agent_fork: libuv handles into and out of the fork registry (see agent_fork.h). */
#include "agent_fork.h"

#include "base/fork_fds.h"

void ftl_agent_fork_track(uv_handle_t *h)
{
	uv_os_fd_t fd;
	if (uv_fileno(h, &fd) == 0)
		ftl_fork_fds_add(fd);
}

void ftl_agent_fork_untrack(uv_handle_t *h)
{
	uv_os_fd_t fd;
	if (uv_fileno(h, &fd) == 0)
		ftl_fork_fds_remove(fd);
}
