/* The witness: members on one host see each other die in a millisecond, before the kernel frees the dead
 * process's memory.
 *
 * Why: every other sign of a kill -9 (a comm EOF, the refused connect of proof of death, a missing ack)
 * waits until the kernel closes the dead process's sockets, and Linux does that only after it has torn
 * down the process's memory: about 50 ms for a process that imported torch, 80-130 ms per GB of 4 KB
 * pages (bench/rescale/exit_teardown.py). A robust futex is released earlier: the kernel walks each
 * exiting thread's robust list before it drops that thread's hold on the memory, and marks the lock
 * FUTEX_OWNER_DIED.
 *
 * How: each agent's loop thread holds a robust, process-shared mutex (its "life lock") in a file of its
 * own under /dev/shm, named from a hash of its name and generation, mode 0600, from start to stop. Another
 * agent of the same user on the same host finds that file when it learns the member, and one thread of
 * its own waits on the lock words of up to FTL_WITNESS_WATCH members (the next local members after
 * itself in name order, a ring, so each is watched by its predecessors). It never takes the lock: it only
 * waits (futex_waitv) for the word to say FUTEX_OWNER_DIED, then reports the death of that (name,
 * generation), which the core treats as a proof (ftl_swim_witnessed_death), and wakes the member's other
 * watchers. A clean stop marks the file leaving before it unlocks, so a stop is never taken for a death.
 *
 * What it cannot see: members on other hosts (or in another container's /dev/shm) keep the usual path, and
 * learn a witnessed death from the witness's dead rumor, sent to every live member directly. Without glibc
 * or futex_waitv (Linux 5.16), or without a writable /dev/shm, the agent runs without a witness and says
 * so in a debug line. Only the loop thread of the owning agent, or root, can hold or fake the lock: the file
 * is checked for our uid and mode, a stranger's file at our path is refused, and the core takes the report
 * only for the life it names. */
#ifndef FTL_AGENT_WITNESS_H
#define FTL_AGENT_WITNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "ftl/ftl.h"
#include "node/node.h" /* the members as the node shows them (ftl_node_member) */

#define FTL_WITNESS_WATCH 8 /* members one agent watches at most */

typedef struct ftl_witness ftl_witness;

/* Called on the witness's own thread when a watched life ended; must only queue the news. */
typedef void (*ftl_witness_report_fn)(void *ctx, const char *name, uint64_t generation);

/* NULL (with the reason in the diag) where this platform or host cannot witness. */
ftl_witness *ftl_witness_new(const char *name, uint64_t generation, ftl_witness_report_fn report, void *ctx);
/* On the thread whose life the lock stands for (the agent's loop thread), before it does anything else:
 * publishes the life lock. FTL_ERR_SYSTEM with the reason in the diag (the agent goes on without one). */
ftl_err ftl_witness_hold(ftl_witness *w);
/* On the same thread, as it ends: marks the file leaving, unlocks, wakes the watchers, removes the file. */
void ftl_witness_release(ftl_witness *w);
/* After any membership change: which local members to watch, from the live ones (alive or suspect) among
 * members[0..n), every member the node knows (self included, skipped). Opens the life files only of members
 * not tried before (witness_absent.h). */
void ftl_witness_update(ftl_witness *w, const ftl_node_member *members, uint32_t n);
/* The same with every member node knows (the agent's call; w may be NULL: nothing). */
void ftl_witness_update_from_node(ftl_witness *w, const ftl_node *node);
/* How many members are watched now (for status and tests). */
int ftl_witness_watching(ftl_witness *w);
/* How many life files it has looked for since it started: once per life not on this host (status, tests). */
uint64_t ftl_witness_lookups(ftl_witness *w);
/* Stops the watching thread (no report after it returns); idempotent. */
void ftl_witness_stop(ftl_witness *w);
/* Stops and frees; after ftl_witness_release, on any thread. */
void ftl_witness_delete(ftl_witness *w);

#endif
