/* One serialized reply or event line of the control socket (control.c), newline included, reference
 * counted: an event is serialized once and shared by the writes of every follower that sends it. Loop
 * thread only. */
#ifndef FTL_AGENT_CONTROL_LINE_H
#define FTL_AGENT_CONTROL_LINE_H

#include <stddef.h>

#include <jansson.h>

typedef struct shared_line {
	unsigned refs;
	size_t len;
	char data[];
} shared_line;

/* value as one compact JSON line with one reference; NULL when out of memory or not encodable. */
shared_line *line_from_json(const json_t *value);
/* Drops one reference; the last frees the line. */
void line_release(shared_line *line);

#endif
