/* The store behind ftl_settings (ftl/settings.h): names made canonical (FTL_SEEDS for "seeds"), values
 * kept as text, unchecked. The checking setter sits in train/ (train/settings_set.c), the one layer that
 * knows every setting's reader; the agent's own readers take a store (agent/config.c). */
#ifndef FTL_BASE_SETTINGS_STORE_H
#define FTL_BASE_SETTINGS_STORE_H

#include "base/diag.h"
#include "ftl/settings.h"

enum { FTL_SETTING_NAME_MAX = 64 };

/* name ("seeds", "min_workers" or "FTL_SEEDS") as its FTL_* variable into var; FTL_ERR_INVALID with the
 * diag for a name that is not one, or that no table knows (the sentence the environment gets). */
ftl_err ftl_settings_canonical_name(const char *name, char var[FTL_SETTING_NAME_MAX + 1]);

/* Stores value (copied; NULL removes var) under the canonical var, unchecked. FTL_ERR_SYSTEM when out of
 * memory. */
ftl_err ftl_settings_put(ftl_settings *s, const char *var, const char *value);

/* Calls add(s, name, value) for every FTL_* variable of the environment, after refusing the unknown ones
 * (env_names.c); the first error stops it. */
ftl_err ftl_settings_add_env(ftl_settings *s, ftl_err (*add)(ftl_settings *s, const char *var, const char *value));

/* A new store holding the environment's FTL_* variables, unchecked but for unknown names (the readers
 * judge the values). NULL with the diag on failure. */
ftl_settings *ftl_settings_new_from_environment(void);

#endif
