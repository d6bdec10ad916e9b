/* Settings from the environment, shared by libftl and the programs built on it: one bounded number
 * reader that names the variable when a value is wrong, and the table of every FTL_* name anything here
 * reads, so a misspelled variable (FTL_MAX_WORKER) is reported with the closest known name instead of
 * being silently ignored. A program that reads FTL_* variables of its own adds them to the table before
 * it calls ftl_agent_config_from_env, which warns once per unknown name. */
#ifndef FTL_SETTINGS_H
#define FTL_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "ftl/export.h"
#include "ftl/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads var as a whole number from min to max into *dst; leaves *dst alone when var is unset. FTL_ERR_INVALID
 * with ftl_error_message() naming var for a value that is empty, not a number, or out of range. */
FTL_API ftl_err ftl_env_int(const char *var, int64_t *dst, int64_t min, int64_t max);

/* Adds a program's own FTL_* variable to the known names (name is not copied: pass a string literal).
 * FTL_ERR_INVALID when name does not start with FTL_ or the table of added names is full (64). */
FTL_API ftl_err ftl_env_add_known_name(const char *name);

/* The known name nearest to name by edit distance (at most 3 edits), or NULL. */
FTL_API const char *ftl_env_closest_known_name(const char *name);

/* Logs one warning for each FTL_* variable in the environment that no table knows, naming the closest
 * known one; returns how many. ftl_agent_config_from_env calls it. Warns only: never refuses. */
FTL_API int ftl_env_warn_unknown(void);

#ifdef __cplusplus
}
#endif

#endif
