/* ftl_agent_new_from_settings: the whole setup of a training worker from a settings object in one call,
 * for programs that take every setting by name (the Python package, launchers, simple C programs); and
 * its environment forms. The same steps a C program spells out: defaults, the agent's settings, the
 * job's, a new agent, training on. */
#include "base/settings_store.h"
#include "ftl/execute.h"
#include "global_batch.h"

ftl_err ftl_training_config_from_env(ftl_training_config *t)
{
	ftl_settings *s = ftl_settings_new_from_environment();
	ftl_err err = s ? ftl_training_config_from_settings(t, s) : ftl_error_code();
	if (!err)
		err = ftl_batch_config_check(&t->batch);
	ftl_settings_delete(s);
	return err;
}

ftl_agent *ftl_agent_new_from_settings(const ftl_settings *s, ftl_log_cb log_cb, void *log_user)
{
	ftl_agent_config cfg;
	ftl_training_config training;
	ftl_agent_config_default(&cfg);
	cfg.log_cb = log_cb;
	cfg.log_user = log_user;
	ftl_training_config_default(&training);
	if (ftl_agent_config_from_settings(&cfg, s) != FTL_OK || ftl_training_config_from_settings(&training, s) != FTL_OK)
		return NULL;
	ftl_agent *a = ftl_agent_new(&cfg);
	if (a && ftl_set_training(a, &training) != FTL_OK) {
		ftl_agent_delete(a);
		return NULL;
	}
	return a;
}

ftl_agent *ftl_agent_new_from_env(void)
{
	return ftl_agent_new_from_env_logging(NULL, NULL);
}

ftl_agent *ftl_agent_new_from_env_logging(ftl_log_cb log_cb, void *log_user)
{
	ftl_settings *s = ftl_settings_new();
	if (!s) {
		ftl_diag_set(FTL_ERR_SYSTEM, "ftl_agent_new_from_env: out of memory");
		return NULL;
	}
	ftl_agent *a = ftl_settings_load_env(s) == FTL_OK ? ftl_agent_new_from_settings(s, log_cb, log_user) : NULL;
	ftl_settings_delete(s);
	return a;
}
