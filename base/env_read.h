/* Reading settings within bounds, naming the variable when it is wrong: a whole number, a string, or one
 * of a setting's words, from a settings object (ftl/settings.h); ftl_env_int (ftl/settings.h) reads the
 * environment with the same rules. A value that is set but empty is refused by every reader: unset it to
 * get the default. Failures return FTL_ERR_INVALID with the reason in the diag. */
#ifndef FTL_BASE_ENV_READ_H
#define FTL_BASE_ENV_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "ftl/settings.h"

/* The number var holds, from min to max, into *dst; leaves *dst alone when var is unset. */
ftl_err ftl_setting_int(const ftl_settings *s, const char *var, int64_t *dst, int64_t min, int64_t max);

/* Copies var into dst (cap bytes) when set; leaves dst alone when unset; refuses empty or too long. */
ftl_err ftl_setting_str(const ftl_settings *s, const char *var, char *dst, size_t cap);

/* One of two words (false, true) into *dst; unset leaves it. The refusal says "expected <expected>", or
 * "expected <no> or <yes>" when expected is NULL. */
ftl_err ftl_setting_choice(const ftl_settings *s, const char *var, const char *no, const char *yes,
			   const char *expected, bool *dst);

#endif
