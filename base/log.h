/* The log sink every record goes through: a logger per agent, not per process, and records whose fields
 * are typed arguments, not hand-built "key=value" text (the record and the callback are public, in
 * ftl/agent.h).
 *
 * Who holds which logger:
 *  - an agent owns one, made from its config by ftl_agent_config_resolve (the level, the name, the
 *    callback) and fixed for the agent's life. Code in agent/ logs through it, and code in train/ handed
 *    the agent asks for it (ftl_agent_logger, agent/agent_training.h), so two agents in
 *    one process each log with their own name and level;
 *  - objects below the agent that are made once and have no agent at hand (ftl_execute's machine, the
 *    checkpoints and their writer thread) take a `const ftl_logger *` when they are made and keep it; it
 *    must outlive them (the agent's does, as it owns them);
 *  - code that runs before the agent exists (ftl_agent_config_resolve's warnings, such as a key file
 *    others can read) builds a logger from the config it was given; what has no config at all (the public ftl_env_warn_unknown, unit tests)
 *    uses ftl_logger_stderr(): info and up, agent "-", on stderr, or a logger of its own
 *    (ftl_logger_init: the checkpoint benchmark's logs warnings only).
 *
 *   ftl_log(log, FTL_LOG_WARN, "membership", "member dead", FTL_F_STR("member", name),
 *           FTL_F_UINT("incarnation", inc));
 *   ftl_log(log, FTL_LOG_INFO, "seeds", FTL_MSG("cannot resolve seed %s", seed), FTL_F_STR("seed", seed));
 *
 * ftl_log checks the level first and evaluates the message and the fields only for a record that goes
 * out; it appends the end marker to the fields. A message with values in it is built by FTL_MSG into a
 * buffer that lives until the end of the enclosing block; the values go in fields too, so a callback
 * gets them as values. */
#ifndef FTL_BASE_LOG_H
#define FTL_BASE_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "ftl/error.h"
#include "ftl/log.h"

#define FTL_LOG_FIELDS_MAX 16   /* fields past these are dropped */
#define FTL_LOG_MSG_MAX 512     /* FTL_MSG cuts longer messages */
#define FTL_LOG_AGENT_MAX 64

extern const char *const ftl_log_level_strs[FTL_LOG_LEVEL_MAX];

typedef struct ftl_logger {
	ftl_log_level threshold;        /* records below it are dropped */
	char agent[FTL_LOG_AGENT_MAX];  /* every record's agent name */
	ftl_log_cb cb;                  /* NULL: the stderr line */
	void *user;
} ftl_logger;

/* level is a name (debug, info, warn, error); FTL_ERR_INVALID for another, with *l left alone. */
ftl_err ftl_logger_init(ftl_logger *l, const char *level, const char *agent, ftl_log_cb cb, void *user);
/* A logger for code with no config at all: info and up, agent "-", on stderr. */
const ftl_logger *ftl_logger_stderr(void);

static inline bool ftl_log_is_enabled(const ftl_logger *l, ftl_log_level level) { return level >= l->threshold; }

/* The record: msg, then ftl_log_field values ending with FTL_F_END (ftl_log appends it). */
void ftl_log_emit(const ftl_logger *l, ftl_log_level level, const char *component, const char *msg, ...);
char *ftl_log_msg(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* log_defer.c: records of a thread that called ftl_log_defer_here (the agent's loop thread) go to their
 * callback from a delivery thread, never from it; ftl_log_drain waits until none of l's is left to hand. */
void ftl_log_defer_here(void);
bool ftl_log_is_deferred_here(void);
void ftl_log_defer(const ftl_logger *l, const ftl_log_record *rec);
void ftl_log_drain(const ftl_logger *l);

#define ftl_log(log, level, component, ...)                                                         \
	do {                                                                                         \
		const ftl_logger *ftl_log_l_ = (log);                                                \
		ftl_log_level ftl_log_v_ = (level);                                                  \
		if (ftl_log_is_enabled(ftl_log_l_, ftl_log_v_))                                      \
			ftl_log_emit(ftl_log_l_, ftl_log_v_, (component), __VA_ARGS__, FTL_F_END);   \
	} while (0)

#define FTL_MSG(...) ftl_log_msg((char[FTL_LOG_MSG_MAX]){""}, FTL_LOG_MSG_MAX, __VA_ARGS__)

#define FTL_F_STR(k, v) ((ftl_log_field){.key = (k), .type = FTL_LOG_FIELD_STR, .value.str = (v)})
#define FTL_F_INT(k, v) ((ftl_log_field){.key = (k), .type = FTL_LOG_FIELD_INT, .value.i = (int64_t)(v)})
#define FTL_F_UINT(k, v) ((ftl_log_field){.key = (k), .type = FTL_LOG_FIELD_UINT, .value.u = (uint64_t)(v)})
#define FTL_F_HEX(k, v) ((ftl_log_field){.key = (k), .type = FTL_LOG_FIELD_HEX, .value.u = (uint64_t)(v)})
#define FTL_F_DOUBLE(k, v) ((ftl_log_field){.key = (k), .type = FTL_LOG_FIELD_DOUBLE, .value.d = (double)(v)})
#define FTL_F_BOOL(k, v) ((ftl_log_field){.key = (k), .type = FTL_LOG_FIELD_BOOL, .value.b = (v)})
#define FTL_F_END ((ftl_log_field){.key = NULL, .type = FTL_LOG_FIELD_END})

#endif
