/* The members a view's communicator was built for, as keys (name and generation hashed, by rank): what
 * the next view is compared with. comm_rebuild shrinks an NCCL comm whose members are the next view's less
 * some (exec_comm_factory.c); a view that keeps every member of the tcp comm in use is a join, and the step
 * in flight may finish in the old view (train_hooks.c). */
#ifndef FTL_TRAIN_COMM_MEMBERS_H
#define FTL_TRAIN_COMM_MEMBERS_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/agent_training.h" /* the view type, through the agent's door */

/* w's members' keys by rank (malloc'd, at least one slot); NULL when out of memory. */
uint64_t *ftl_comm_member_keys(const ftl_rdv_view *w);
/* Whether every one of the n keys is a member of v (name and generation). False when out of memory. */
bool ftl_comm_members_all_in(const uint64_t *keys, uint32_t n, const ftl_rdv_view *v);

#endif
