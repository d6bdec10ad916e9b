/* An agent a C test starts alone in its own process: insecure gossip on a free loopback port, a run
 * directory of the test's, warn-level logs, training on with a minimum of one worker and no settle time,
 * so its first ftl_execute runs at once. Shared by the tests of single-agent calls. */
#ifndef FTL_TESTS_LONE_AGENT_H
#define FTL_TESTS_LONE_AGENT_H

#include "ftl/ftl.h"

/* Made and started; a cmocka failure (naming the reason) when it cannot be. */
ftl_agent *ftl_test_lone_agent(const char *name, const char *run_dir);

#endif
