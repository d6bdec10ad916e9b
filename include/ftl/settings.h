/* Settings by name: an opaque settings object that a program or a binding fills (from the environment,
 * from its own keys, or both) and makes the agent from, so no struct layout is part of how configuration
 * reaches libftl. And what is shared with the programs built on it: one bounded number
 * reader that names the variable when a value is wrong, and the table of every FTL_* name anything here
 * reads, so a misspelled variable (FTL_MAX_WORKER) is refused with the closest known name instead of
 * leaving the worker on the default (with FTL_SEED for FTL_SEEDS: a job of one). A program that reads
 * FTL_* variables of its own adds them to the table before it calls ftl_agent_config_from_env (or
 * ftl_agent_new_from_env), which refuses any FTL_* name the table does not hold. */
#ifndef FTL_SETTINGS_H
#define FTL_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "ftl/export.h"
#include "ftl/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A set of settings by name, the one way configuration reaches libftl without struct layouts: a program
 * (or a binding such as the Python package) fills one from the environment and its own keys, and makes the
 * agent from it (ftl_agent_new_from_settings, ftl/execute.h). The object is opaque, so it can learn new
 * settings without changing any caller's ABI. Names are the FTL_* variables, with or without the prefix:
 * "seeds" and "FTL_SEEDS" are the same setting. */
typedef struct ftl_settings ftl_settings;

/* An empty set: every setting at its default. NULL when out of memory. */
FTL_API ftl_settings *ftl_settings_new(void);
FTL_API void ftl_settings_delete(ftl_settings *s);
/* Before 0.4.5 (kept exported; the same call): */
FTL_API void ftl_settings_free(ftl_settings *s) FTL_DEPRECATED("ftl_settings_delete");
/* Sets name to value (copied), replacing an earlier value; value NULL unsets it. FTL_ERR_INVALID, with
 * ftl_error_message() saying what is expected in the very sentence the environment would get, for a name
 * that no table knows (naming the closest known one) and for a value the setting's reader refuses (not a
 * number, out of range, not one of its words, empty, too long); s is then unchanged. Checks that need
 * several settings or the machine (an address to bind, a key file) are made when the agent is made. */
FTL_API ftl_err ftl_settings_set(ftl_settings *s, const char *name, const char *value);
/* The value set for name, or NULL when it is not set. Valid until name is set again or s is freed. */
FTL_API const char *ftl_settings_get(const ftl_settings *s, const char *name);
/* Sets every FTL_* variable of the environment, each through ftl_settings_set; FTL_ERR_INVALID naming the
 * first unknown or refused one. Call it first when keys of the program's own should win. */
FTL_API ftl_err ftl_settings_load_env(ftl_settings *s);

/* Reads var as a whole number from min to max into *dst; leaves *dst alone when var is unset. FTL_ERR_INVALID
 * with ftl_error_message() naming var for a value that is empty, not a number, or out of range. */
FTL_API ftl_err ftl_env_int(const char *var, int64_t *dst, int64_t min, int64_t max);

/* Adds a program's own FTL_* variable to the known names (the name is copied; adding a known one again
 * is a no-op). Call it before making agents, not while another thread makes one. FTL_ERR_INVALID when
 * name is not FTL_ followed by at most 60 bytes without '=', or 64 names were added already. */
FTL_API ftl_err ftl_env_add_known_name(const char *name);

/* The known name nearest to name by edit distance (at most 3 edits), or NULL. */
FTL_API const char *ftl_env_closest_known_name(const char *name);

/* Logs one warning for each FTL_* variable in the environment that no table knows, naming the closest
 * known one; returns how many. Warns only, for a program that wants to be told without being refused
 * (ftl_agent_config_from_env refuses them). */
FTL_API int ftl_env_warn_unknown(void);

#ifdef __cplusplus
}
#endif

#endif
