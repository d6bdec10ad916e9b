/* agent_fork: the agent's libuv sockets in the fork registry (base/fork_fds.h), so that a child forked
 * from the process (a DataLoader worker) closes them and a kill -9 of the process still shows at once to
 * its peers: a refused UDP port and TCP port, and an ended persistent peer connection. Loop thread only. */
#ifndef FTL_AGENT_FORK_H
#define FTL_AGENT_FORK_H

#include <uv.h>

/* After the handle has its socket (bind, listen, connect started, accept). No-op for one without. */
void ftl_agent_fork_track(uv_handle_t *h);

/* Before uv_close closes its socket. No-op for a handle that was never tracked. */
void ftl_agent_fork_untrack(uv_handle_t *h);

#endif /* FTL_AGENT_FORK_H */
