/* The readers of env_read.h (and ftl_env_int of ftl/settings.h): one check per kind of value, whether the
 * value came from the environment or from a settings object, so both get the same sentence. */
#include "env_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static ftl_err refuse_empty(const char *var)
{
	return ftl_diag_set_setting(var, FTL_ERR_INVALID, "%s is set but empty: give it a value, or unset it for the default", var);
}

/* v (may be NULL: unset) as var's whole number. */
static ftl_err parse_int(const char *var, const char *v, int64_t *dst, int64_t min, int64_t max)
{
	if (!v)
		return FTL_OK;
	if (!*v)
		return refuse_empty(var);
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	bool is_plain = (v[0] >= '0' && v[0] <= '9') || v[0] == '-'; /* no blanks, no '+' */
	if (!is_plain || errno || end == v || *end || x < min || x > max)
		return ftl_diag_set_setting(var, FTL_ERR_INVALID, "%s=%s: expected a whole number from %lld to %lld", var, v,
				    (long long)min, (long long)max);
	*dst = x;
	return FTL_OK;
}

ftl_err ftl_env_int(const char *var, int64_t *dst, int64_t min, int64_t max)
{
	return parse_int(var, getenv(var), dst, min, max);
}

ftl_err ftl_setting_int(const ftl_settings *s, const char *var, int64_t *dst, int64_t min, int64_t max)
{
	return parse_int(var, ftl_settings_get(s, var), dst, min, max);
}

ftl_err ftl_setting_str(const ftl_settings *s, const char *var, char *dst, size_t cap)
{
	const char *v = ftl_settings_get(s, var);
	if (!v)
		return FTL_OK;
	if (!*v)
		return refuse_empty(var);
	if (strlen(v) >= cap)
		return ftl_diag_set_setting(var, FTL_ERR_INVALID, "%s is too long (at most %zu bytes)", var, cap - 1);
	memcpy(dst, v, strlen(v) + 1);
	return FTL_OK;
}

ftl_err ftl_setting_choice(const ftl_settings *s, const char *var, const char *no, const char *yes,
			   const char *expected, bool *dst)
{
	const char *v = ftl_settings_get(s, var);
	if (!v)
		return FTL_OK;
	if (strcmp(v, no) != 0 && strcmp(v, yes) != 0)
		return expected ? ftl_diag_set_setting(var, FTL_ERR_INVALID, "%s=%s: expected %s", var, v, expected)
				: ftl_diag_set_setting(var, FTL_ERR_INVALID, "%s=%s: expected %s or %s", var, v, no, yes);
	*dst = strcmp(v, yes) == 0;
	return FTL_OK;
}
