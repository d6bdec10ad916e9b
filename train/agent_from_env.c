/* ftl_agent_new_from_env: the whole setup of a training worker from its environment in one call, for
 * programs that take every setting from FTL_* (the Python package, launchers, simple C programs). The
 * same steps a C program spells out: defaults, the agent's variables, the job's, a new agent, training on. */
#include "ftl/execute.h"

ftl_agent *ftl_agent_new_from_env(void)
{
	return ftl_agent_new_from_env_logging(NULL, NULL);
}

ftl_agent *ftl_agent_new_from_env_logging(ftl_log_cb log_cb, void *log_user)
{
	ftl_agent_config cfg;
	ftl_training_config training;
	ftl_agent_config_default(&cfg);
	cfg.log_cb = log_cb;
	cfg.log_user = log_user;
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
