/* ftl_settings_set: a value is taken only when the reader of its setting takes it, so a program that sets
 * min_workers="two" hears the sentence FTL_MIN_WORKERS=two would get, at the line that set it. It lives
 * here, above the agent, because this is the one layer that knows both readers (the agent's and the
 * job's). Each value is judged alone, on defaults: settings judged together (FTL_REPRODUCIBLE needs
 * FTL_GLOBAL_BATCH) are judged when the agent is made, so the order of the sets never matters. */
#include "base/settings_store.h"
#include "ftl/execute.h"

static ftl_err judge_alone(const char *var, const char *value)
{
	ftl_settings *one = ftl_settings_new();
	if (!one)
		return ftl_diag_set(FTL_ERR_SYSTEM, "%s: out of memory", var);
	ftl_agent_config cfg;
	ftl_training_config training;
	ftl_agent_config_default(&cfg);
	ftl_training_config_default(&training);
	ftl_err err = ftl_settings_put(one, var, value);
	if (!err)
		err = ftl_agent_config_from_settings(&cfg, one);
	if (!err)
		err = ftl_training_config_from_settings(&training, one);
	ftl_settings_delete(one);
	return err;
}

ftl_err ftl_settings_set(ftl_settings *s, const char *name, const char *value)
{
	char var[FTL_SETTING_NAME_MAX + 1];
	if (!s)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_settings_set: no settings object (NULL)");
	ftl_err err = ftl_settings_canonical_name(name, var);
	if (!err && value)
		err = judge_alone(var, value);
	return err ? err : ftl_settings_put(s, var, value);
}

ftl_err ftl_settings_load_env(ftl_settings *s)
{
	if (!s)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_settings_load_env: no settings object (NULL)");
	return ftl_settings_add_env(s, ftl_settings_set);
}
