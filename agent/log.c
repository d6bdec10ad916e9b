/* The log records of log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

const char *const ftl_log_level_strs[FTL_LOG_LEVEL_MAX] = {"debug", "info", "warn", "error"};

static ftl_log_level threshold = FTL_LOG_INFO;
static char agent_name[64] = "-";

int ftl_log_setup(const char *level, const char *name)
{
	int found = -1;
	for (int i = 0; i < FTL_LOG_LEVEL_MAX; i++)
		if (level && strcmp(level, ftl_log_level_strs[i]) == 0)
			found = i;
	if (found < 0)
		return -1;
	threshold = (ftl_log_level)found;
	snprintf(agent_name, sizeof(agent_name), "%s", name);
	return 0;
}

void ftl_log(ftl_log_level level, const char *component, const char *fields, const char *fmt, ...)
{
	if (level < threshold)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)
		if (*p == '"' || *p == '\n')
			*p = '\'';
	struct timeval tv;
	gettimeofday(&tv, NULL);
	struct tm tm;
	gmtime_r(&tv.tv_sec, &tm);
	char line[1024];
	int n = snprintf(line, sizeof(line),
			 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s agent=%s component=%s msg=\"%s\"%s%s\n",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			 (long)(tv.tv_usec / 1000), ftl_log_level_strs[level], agent_name, component, msg,
			 fields ? " " : "", fields ? fields : "");
	if (n > (int)sizeof(line))
		n = sizeof(line);
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}
