/* The agent's side of the ftl_execute state machine's seam (exec_machine.h): its view feed
 * (exec_agent_feed.c) and its comm factory (exec_comm_factory.c), both with the agent as context. */
#ifndef FTL_TRAIN_EXEC_FEED_H
#define FTL_TRAIN_EXEC_FEED_H

#include "exec_machine.h"

extern const ftl_view_feed_ops ftl_exec_agent_feed;
extern const ftl_comm_factory_ops ftl_exec_agent_factory;

#endif
