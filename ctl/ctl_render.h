/* Human-readable output of the agent's replies (the shapes are in PROTOCOL.md). Missing or mistyped
 * fields print as "?" rather than failing, so an older or newer agent still gives a useful screen. */
#ifndef FTL_CTL_RENDER_H
#define FTL_CTL_RENDER_H

#include <jansson.h>
#include <stdio.h>

/* The header block (cluster, self, view, counts, health, traffic, timing), a blank line, the member
 * table. */
void ctl_render_status(FILE *out, const json_t *status);
/* The aligned table NAME ADDRESS STATUS INCARNATION GENERATION LAST-HEARD RANK. */
void ctl_render_members(FILE *out, const json_t *members);
/* One event as one line. */
void ctl_render_event(FILE *out, const json_t *event);
/* "0.12s", "12.3s", "125s" for a last_heard_ms value; "-" when absent. */
void ctl_format_last_heard(const json_t *ms, char *out, size_t out_len);

#endif
