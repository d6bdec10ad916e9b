/* The loggers of log.h: a record gathered from ftl_log's arguments and handed to the agent's callback, or
 * written as one line on stderr with one write() so lines from threads never interleave. */
#include "log.h"

#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

ftl_err ftl_logger_init(ftl_logger *l, const char *level, const char *agent, ftl_log_cb cb, void *user)
{
	for (int i = 0; i < FTL_LOG_LEVEL_MAX; i++) {
		if (level && strcmp(level, ftl_log_level_strs[i]) == 0) {
			l->threshold = (ftl_log_level)i;
			snprintf(l->agent, sizeof(l->agent), "%s", agent && agent[0] ? agent : "-");
			l->cb = cb;
			l->user = user;
			return FTL_OK;
		}
	}
	return ftl_diag_set(FTL_ERR_INVALID, "log level %s: expected debug, info, warn or error",
			    level ? level : "(none)");
}

const ftl_logger *ftl_logger_stderr(void)
{
	static const ftl_logger plain = {.threshold = FTL_LOG_INFO, .agent = "-"};
	return &plain;
}

char *ftl_log_msg(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return buf;
}

static void write_line(const ftl_log_record *rec)
{
	char line[2048];
	size_t n = ftl_log_format(rec, line, sizeof(line));
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}

void ftl_log_emit(const ftl_logger *l, ftl_log_level level, const char *component, const char *msg, ...)
{
	ftl_log_field fields[FTL_LOG_FIELDS_MAX];
	size_t n = 0;
	va_list ap;
	va_start(ap, msg);
	for (ftl_log_field f = va_arg(ap, ftl_log_field); f.type != FTL_LOG_FIELD_END; f = va_arg(ap, ftl_log_field)) {
		if (f.type == FTL_LOG_FIELD_STR && !f.value.str)
			f.value.str = "";
		if (n < FTL_LOG_FIELDS_MAX)
			fields[n++] = f;
	}
	va_end(ap);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	ftl_log_record rec = {
		.time_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000,
		.level = level,
		.agent = l->agent,
		.component = component,
		.message = msg ? msg : "",
		.fields = fields,
		.n_fields = n,
	};
	if (l->cb && ftl_log_is_deferred_here())
		ftl_log_defer(l, &rec);
	else if (l->cb)
		l->cb(&rec, l->user);
	else
		write_line(&rec);
}
