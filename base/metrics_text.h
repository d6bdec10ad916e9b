/* The Prometheus text exposition format (version 0.0.4), written once: every /metrics family, the agent's
 * (agent/metrics.c) and the training layer's (train/train_metrics_render.c), goes through these writers, so HELP
 * and TYPE lines and label escaping exist in one place. A family is one of four kinds: a single value, a
 * value per label, a histogram, or lines put by hand (the info line). Out of memory sticks: every later
 * write is a no-op and is_oom says so. */
#ifndef FTL_BASE_METRICS_TEXT_H
#define FTL_BASE_METRICS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl/error.h"
#include "histogram.h"

typedef struct ftl_metrics_text {
	char *buf;                       /* malloc'd, NUL-terminated; the caller frees it */
	size_t len, cap;
	bool is_oom;
} ftl_metrics_text;

/* An empty text with room for cap bytes; FTL_ERR_SYSTEM (and is_oom) when out of memory. */
ftl_err ftl_metrics_text_create(ftl_metrics_text *t, size_t cap);
void ftl_metrics_put(ftl_metrics_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A label value in quotes, with \, " and newline escaped, as the format requires. */
void ftl_metrics_label_value(ftl_metrics_text *t, const char *v);
/* The HELP and TYPE lines. */
void ftl_metrics_family(ftl_metrics_text *t, const char *name, const char *type, const char *help);
void ftl_metrics_single(ftl_metrics_text *t, const char *name, const char *type, const char *help, double value);
/* One series per label value: names[i] -> values[i], skipping names that are NULL or empty. */
void ftl_metrics_per_label(ftl_metrics_text *t, const char *name, const char *type, const char *help,
			   const char *label, const char *const *names, const uint64_t *values, int n);
/* Cumulative _bucket{le=...} series ending at +Inf, then _sum and _count. */
void ftl_metrics_histogram(ftl_metrics_text *t, const char *name, const char *help, const ftl_histogram *h);

#endif
