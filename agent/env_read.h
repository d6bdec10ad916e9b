/* Reading settings from the environment within bounds, naming the variable when it is wrong: a whole
 * number (ftl_env_int of ftl/settings.h) or a string. A variable that is set but empty is refused by both
 * readers: unset it to get the default. Failures return FTL_ERR_INVALID with the reason in the diag. */
#ifndef FTL_AGENT_ENV_READ_H
#define FTL_AGENT_ENV_READ_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "ftl/settings.h" /* ftl_env_int */

/* Copies var into dst (cap bytes) when set; leaves dst alone when unset; refuses empty or too long. */
ftl_err ftl_env_str(const char *var, char *dst, size_t cap);

#endif
