/* ftl's log records: what the agent, the training thread and the checkpoint writer say, as structured
 * records (a level, a component, a sentence and typed fields), and the one line each is written as. Apart
 * from ftl/agent.h so that code which only logs, or only formats records, needs no agent. */
#ifndef FTL_LOG_H
#define FTL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Logging. Each agent has its own log sink, made from its config (ftl_agent_config, ftl/agent.h): records below log_level are dropped,
 * the rest go to log_cb, or, with none, as one line each on stderr (one write() per line):
 *   2026-11-23T15:51:24.123Z level=warn agent=w1 component=membership msg="member dead" member=w3 reason="suspicion timed out"
 * A field's value is quoted, with \" \\ \n \r \t escapes, when it is empty or holds a space, '=', '"',
 * a backslash or a control character; msg is always quoted. ftl_log_format writes that line for a sink of
 * one's own. log_cb runs on the training thread and the checkpoint writer as they log, and for the agent's
 * loop thread on one delivery thread of the library's (so a callback that blocks never holds up gossip:
 * its records queue, up to 4096, then are dropped and counted in a warning), possibly on several threads
 * at once and with the agent's lock held: it must be thread-safe, return soon and not call the agent. It
 * is not called after ftl_agent_stop returns. A record and its strings live only during the call. */
typedef enum ftl_log_level { FTL_LOG_DEBUG, FTL_LOG_INFO, FTL_LOG_WARN, FTL_LOG_ERROR, FTL_LOG_LEVEL_MAX } ftl_log_level;

typedef enum ftl_log_field_type {
	FTL_LOG_FIELD_END,        /* ends a list of fields; never inside a record */
	FTL_LOG_FIELD_STR,        /* value.str (never NULL in a record) */
	FTL_LOG_FIELD_INT,        /* value.i */
	FTL_LOG_FIELD_UINT,       /* value.u */
	FTL_LOG_FIELD_HEX,        /* value.u, an id written as 16 hex digits */
	FTL_LOG_FIELD_DOUBLE,     /* value.d, written with up to 3 decimals */
	FTL_LOG_FIELD_BOOL,       /* value.b, written true or false */
	FTL_LOG_FIELD_TYPE_MAX
} ftl_log_field_type;

typedef struct ftl_log_field {
	const char *key;          /* a name such as "member" or "took_ms" */
	ftl_log_field_type type;
	union {
		const char *str;
		int64_t i;
		uint64_t u;
		double d;
		bool b;
	} value;
} ftl_log_field;

typedef struct ftl_log_record {
	int64_t time_us;          /* wall clock: microseconds since the Unix epoch */
	ftl_log_level level;
	const char *agent;        /* the agent's name ("-" before it has one) */
	const char *component;    /* membership, rendezvous, transport, training, checkpoint, config, ... */
	const char *message;      /* a sentence for people; the values it speaks of are also in fields */
	const ftl_log_field *fields; /* [n_fields] */
	size_t n_fields;
} ftl_log_record;

typedef void (*ftl_log_cb)(const ftl_log_record *rec, void *user);

/* The stderr line of rec (above), newline included, into buf; the length it needed (as snprintf: a
 * longer line is cut, always ending in a newline when len > 1). */
FTL_API size_t ftl_log_format(const ftl_log_record *rec, char *buf, size_t len);
/* "debug", "info", "warn", "error"; "?" for a value out of range. */
FTL_API const char *ftl_log_level_name(ftl_log_level level);

#ifdef __cplusplus
}
#endif

#endif /* FTL_LOG_H */
