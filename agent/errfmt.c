/* The helpers of errfmt.h (and ftl_env_int of ftl/settings.h). */
#include "errfmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ftl_errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

static int refuse_empty(const char *var, char *err, size_t len)
{
	return ftl_errf(err, len, "%s is set but empty: give it a value, or unset it for the default", var);
}

int ftl_env_int(const char *var, int64_t *dst, int64_t min, int64_t max, char *err, size_t len)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	if (!*v)
		return refuse_empty(var, err, len);
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	bool is_plain = (v[0] >= '0' && v[0] <= '9') || v[0] == '-'; /* no blanks, no '+' */
	if (!is_plain || errno || end == v || *end || x < min || x > max)
		return ftl_errf(err, len, "%s=%s: expected a whole number from %lld to %lld", var, v, (long long)min,
				(long long)max);
	*dst = x;
	return 0;
}

int ftl_env_str(const char *var, char *dst, size_t cap, char *err, size_t len)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	if (!*v)
		return refuse_empty(var, err, len);
	if (strlen(v) >= cap)
		return ftl_errf(err, len, "%s is too long (at most %zu bytes)", var, cap - 1);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}
