/* Structured one-line log records on stderr: time, level, agent, component, message, then key=value
 * pairs. One write() per record so lines from threads never interleave. */
#ifndef FTL_AGENT_LOG_H
#define FTL_AGENT_LOG_H

typedef enum ftl_log_level { FTL_LOG_DEBUG, FTL_LOG_INFO, FTL_LOG_WARN, FTL_LOG_ERROR, FTL_LOG_LEVEL_MAX } ftl_log_level;

extern const char *const ftl_log_level_strs[FTL_LOG_LEVEL_MAX];

/* Sets the threshold and the agent name every record carries. -1 for an unknown level name. */
int ftl_log_setup(const char *level, const char *agent_name);
/* fmt builds the message; it is quoted. Extra fields can follow as "key=value" in `fields` (may be NULL). */
void ftl_log(ftl_log_level level, const char *component, const char *fields, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
