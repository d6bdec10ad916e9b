/* The per-thread diagnostics area of diag.h, and the public ftl_error_code/_message/_setting over it. */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local ftl_err diag_code;
static _Thread_local char diag_msg[FTL_DIAG_MSG_MAX];
static _Thread_local char diag_setting[64]; /* the FTL_* variable a refused setting's error is about, or "" */

/* diag_msg = the formatted text followed by tail (or nothing). Formats into a scratch buffer first, so
 * arguments that point into diag_msg are read before it changes. */
static void store(const char *tail, const char *fmt, va_list ap)
{
	char scratch[FTL_DIAG_MSG_MAX];
	int errno_saved = errno;
	vsnprintf(scratch, sizeof scratch, fmt, ap);
	snprintf(diag_msg, sizeof diag_msg, "%s%s", scratch, tail ? tail : "");
	errno = errno_saved;
}

/* Records code, the message and the setting it is about ("" for none). */
static ftl_err record(const char *setting, ftl_err code, const char *fmt, va_list ap)
{
	store(NULL, fmt, ap);
	diag_code = code;
	snprintf(diag_setting, sizeof diag_setting, "%s", setting);
	return code;
}

ftl_err ftl_diag_set(ftl_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record("", code, fmt, ap);
	va_end(ap);
	return code;
}

ftl_err ftl_diag_set_setting(const char *setting, ftl_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record(setting ? setting : "", code, fmt, ap);
	va_end(ap);
	return code;
}

ftl_err ftl_diag_prefix(const char *fmt, ...)
{
	char old[FTL_DIAG_MSG_MAX];
	memcpy(old, diag_msg, sizeof old);
	va_list ap;
	va_start(ap, fmt);
	store(old, fmt, ap);
	va_end(ap);
	return diag_code;
}

ftl_err ftl_diag_about(const char *setting)
{
	snprintf(diag_setting, sizeof diag_setting, "%s", setting ? setting : "");
	return diag_code;
}

ftl_err ftl_diag_code(void)
{
	return diag_code;
}

const char *ftl_diag_message(void)
{
	return diag_msg;
}

void ftl_diag_clear(void)
{
	diag_code = FTL_OK;
	diag_msg[0] = '\0';
	diag_setting[0] = '\0';
}

ftl_err ftl_error_code(void)
{
	return diag_code;
}

const char *ftl_error_message(void)
{
	return diag_msg;
}

const char *ftl_error_setting(void)
{
	return diag_setting;
}
