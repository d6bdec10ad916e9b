/* The Prometheus text builder (metrics_text.h): a growing buffer and the writers of each kind of family. */
#include "metrics_text.h"

#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

ftl_err ftl_metrics_text_create(ftl_metrics_text *t, size_t cap)
{
	*t = (ftl_metrics_text){.buf = malloc(cap), .cap = cap};
	t->is_oom = t->buf == NULL;
	if (t->is_oom)
		return ftl_diag_set(FTL_ERR_SYSTEM, "metrics: out of memory for a text of %zu bytes", cap);
	t->buf[0] = '\0';
	return FTL_OK;
}

void ftl_metrics_put(ftl_metrics_text *t, const char *fmt, ...)
{
	for (int tries = 0; tries < 2 && !t->is_oom; tries++) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->is_oom = true;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap * 2 > t->len + (size_t)n + 1 ? t->cap * 2 : t->len + (size_t)n + 1;
		char *bigger = realloc(t->buf, cap);
		if (!bigger)
			t->is_oom = true;
		else
			t->buf = bigger, t->cap = cap;
	}
}

/* A label value with \, " and newline escaped, as the format requires. */
void ftl_metrics_label_value(ftl_metrics_text *t, const char *v)
{
	ftl_metrics_put(t, "\"");
	for (; *v; v++)
		ftl_metrics_put(t, "%s",
				*v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : (char[]){*v, 0});
	ftl_metrics_put(t, "\"");
}

void ftl_metrics_family(ftl_metrics_text *t, const char *name, const char *type, const char *help)
{
	ftl_metrics_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void ftl_metrics_single(ftl_metrics_text *t, const char *name, const char *type, const char *help, double value)
{
	ftl_metrics_family(t, name, type, help);
	ftl_metrics_put(t, "%s %.17g\n", name, value);
}

/* One series per label value: names[i] -> values[i], skipping names that are NULL or empty. */
void ftl_metrics_per_label(ftl_metrics_text *t, const char *name, const char *type, const char *help,
			   const char *label, const char *const *names, const uint64_t *values, int n)
{
	ftl_metrics_family(t, name, type, help);
	for (int i = 0; i < n; i++) {
		if (!names[i] || !names[i][0])
			continue;
		ftl_metrics_put(t, "%s{%s=", name, label);
		ftl_metrics_label_value(t, names[i]);
		ftl_metrics_put(t, "} %llu\n", (unsigned long long)values[i]);
	}
}

void ftl_metrics_histogram(ftl_metrics_text *t, const char *name, const char *help, const ftl_histogram *h)
{
	ftl_metrics_family(t, name, "histogram", help);
	for (int i = 0; i < h->n_bounds; i++)
		ftl_metrics_put(t, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i],
				(unsigned long long)ftl_histogram_cumulative(h, i));
	ftl_metrics_put(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
	ftl_metrics_put(t, "%s_sum %.17g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
}
