/* The gossip core's scalar counters (ftl_swim_stats), in one table that both renderings read: the status
 * JSON's `counters` (ftlctl status --json) and the Prometheus families of /metrics. Why one table: the two
 * lists were written by hand twice, and a counter added to one was missing from the other. Counters that
 * come by type or by reason (messages sent, drops) keep their own per-label writers beside this. */
#ifndef FTL_AGENT_GOSSIP_COUNTERS_H
#define FTL_AGENT_GOSSIP_COUNTERS_H

#include <jansson.h>

#include "base/metrics_text.h"
#include "node/node.h" /* ftl_swim_stats */

/* Sets each counter's key in `counters` (a JSON object). */
void ftl_gossip_counters_json(json_t *counters, const ftl_swim_stats *st);
/* Writes each counter's family (rows of one family with a direction label: one family, a line each). */
void ftl_gossip_counters_metrics(ftl_metrics_text *t, const ftl_swim_stats *st);

#endif
