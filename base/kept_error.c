/* The kept error of kept_error.h. */
#include "kept_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ftl_err ftl_kept_error_vset(ftl_kept_error *k, ftl_err code, const char *fmt, va_list ap)
{
	char scratch[sizeof k->message];
	vsnprintf(scratch, sizeof scratch, fmt, ap);
	memcpy(k->message, scratch, sizeof scratch);
	k->code = code;
	return code;
}

ftl_err ftl_kept_error_set(ftl_kept_error *k, ftl_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ftl_kept_error_vset(k, code, fmt, ap);
	va_end(ap);
	return code;
}

ftl_err ftl_kept_error_from_diag(ftl_kept_error *k)
{
	return ftl_kept_error_set(k, ftl_diag_code(), "%s", ftl_diag_message());
}

ftl_err ftl_kept_error_to_diag(const ftl_kept_error *k)
{
	return ftl_diag_set(k->code, "%s", k->message);
}

void ftl_kept_error_clear(ftl_kept_error *k)
{
	k->code = FTL_OK;
	k->message[0] = '\0';
}
