/* The one table of FTL_* variable names (env_names.c): a setting whose name no table knows is refused, naming
 * the closest known one, so that a misspelled setting never runs with its default. */
#ifndef FTL_BASE_ENV_NAMES_H
#define FTL_BASE_ENV_NAMES_H

#include "diag.h"

/* FTL_ERR_INVALID naming the first FTL_* variable in the environment that no table knows (and its closest
 * known name, and the others), or FTL_OK. The settings store calls it before it takes the environment
 * (settings_store.c). */
ftl_err ftl_env_refuse_unknown(void);
/* The same refusal for one canonical name var (FTL_...), or FTL_OK when a table knows it. */
ftl_err ftl_env_refuse_if_unknown(const char *var);

#endif
