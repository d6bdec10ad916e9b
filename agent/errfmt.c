/* The helpers of errfmt.h. */
#include "errfmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int ftl_errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

int ftl_env_int(const char *var, int64_t *dst, int64_t min, int64_t max, char *err, size_t len)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < min || x > max)
		return ftl_errf(err, len, "%s=%s: expected a whole number from %lld to %lld", var, v, (long long)min,
				(long long)max);
	*dst = x;
	return 0;
}
