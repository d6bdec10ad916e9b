/* ftl_agent_new_from_env: the whole setup of a training worker from its environment in one call, for
 * programs that take every setting from FTL_* (the Python package, launchers, simple C programs). The
 * same steps a C program spells out: defaults, the agent's variables, the job's, a new agent, training on. */
#include "ftl/execute.h"

ftl_agent *ftl_agent_new_from_env(void)
{
	ftl_agent_config cfg;
	ftl_training_config training;
	ftl_agent_config_default(&cfg);
	ftl_training_config_default(&training);
	if (ftl_agent_config_from_env(&cfg) != FTL_OK || ftl_training_config_from_env(&training) != FTL_OK)
		return NULL;
	ftl_agent *a = ftl_agent_new(&cfg);
	if (a && ftl_set_training(a, &training) != FTL_OK) {
		ftl_agent_delete(a);
		return NULL;
	}
	return a;
}
