/* Human-readable output of the agent's replies (the shapes are in PROTOCOL.md). Missing or mistyped
 * fields print as "?" rather than failing, so an older or newer agent still gives a useful screen. */
#ifndef FTL_CTL_RENDER_H
#define FTL_CTL_RENDER_H

#include <jansson.h>
#include <stdio.h>

/* The header block (cluster, self, view, counts, health, traffic, timing), a blank line, the member
 * table. */
void ctl_render_status(FILE *out, const json_t *status);
/* The aligned table NAME ADDRESS STATUS INCARNATION GENERATION LAST-HEARD RANK, and REPLICA ("host1/0":
 * its name and this member's index) when some member is in one. */
void ctl_render_members(FILE *out, const json_t *members);
/* `keys list`: per key, how many live members hold it and seal with it (N/M) and who lacks it; the bare
 * list, primary marked, from an agent without the census. */
void ctl_render_keys(FILE *out, const json_t *reply);
/* One event as one line. */
void ctl_render_event(FILE *out, const json_t *event);
/* A string field, "?" when missing or not a string. */
const char *ctl_render_text(const json_t *obj, const char *key);
/* An integer field as text: "?" when missing, none_text when null. */
void ctl_render_number(const json_t *obj, const char *key, const char *none_text, char *out, size_t out_len);
/* An integer field, 0 when missing or not an integer (for counts). */
long long ctl_render_integer(const json_t *obj, const char *key);
/* "0.12s", "12.3s", "125s" for a last_heard_ms value; "-" when absent. */
void ctl_format_last_heard(const json_t *ms, char *out, size_t out_len);

#endif
