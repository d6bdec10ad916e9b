/* Unit tests of /metrics without a network: the fixed-bucket histogram, and the exposition text built from
 * made-up snapshots, read back line by line the way a Prometheus parser would (every sample under a HELP
 * and a TYPE, names valid, counters ending in _total, buckets cumulative and ending at +Inf with _count
 * equal to the +Inf bucket, label values escaped). The real programs are scraped in test_metrics.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/histogram.h"
#include "agent/metrics.h"
#include "train/train_metrics.h"

static void test_histogram_buckets_are_cumulative_and_end_at_inf(void **state)
{
	static const double bounds[] = {0.1, 1, 10};
	ftl_histogram h;
	ftl_histogram_create(&h, bounds, 3);
	double values[] = {0.05, 0.1, 0.5, 1, 5, 100, 1000};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		ftl_histogram_observe(&h, values[i]);
	assert_int_equal(ftl_histogram_cumulative(&h, 0), 2); /* le is inclusive: 0.1 counts in le=0.1 */
	assert_int_equal(ftl_histogram_cumulative(&h, 1), 4);
	assert_int_equal(ftl_histogram_cumulative(&h, 2), 5);
	assert_int_equal(ftl_histogram_cumulative(&h, 3), 7); /* +Inf: every observation */
	assert_int_equal(h.count, 7);
	assert_true(fabs(h.sum - 1106.65) < 1e-9);
}

static void test_histogram_without_bounds_has_only_inf(void **state)
{
	ftl_histogram h;
	ftl_histogram_create(&h, NULL, 0);
	ftl_histogram_observe(&h, 3);
	assert_int_equal(ftl_histogram_cumulative(&h, 0), 1);
}

/* ---- reading the exposition back ---- */

static bool is_metric_name(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

typedef struct reader {
	char family[128];
	char type[16];
	bool has_help;
	int n_families;
	/* the histogram being read */
	double last_le;
	uint64_t last_bucket;
	bool saw_inf;
	uint64_t inf_count;
} reader;

/* Checks one sample line against the family declared above it. */
static void check_sample(reader *r, const char *line)
{
	size_t n = strcspn(line, "{ ");
	if (!is_metric_name(line, n))
		fail_msg("bad metric name in: %s", line);
	if (!r->family[0] || !r->has_help)
		fail_msg("sample before its HELP and TYPE: %s", line);
	size_t fn = strlen(r->family);
	if (strncmp(line, r->family, fn) != 0)
		fail_msg("sample %s outside its family %s", line, r->family);
	const char *suffix = line + fn;
	const char *labels_end = line[n] == '{' ? strchr(line, '}') : line + n;
	if (!labels_end || labels_end[line[n] == '{'] != ' ')
		fail_msg("labels not closed in: %s", line);
	char *end;
	const char *value = labels_end + (line[n] == '{') + 1;
	double v = strtod(value, &end);
	if (end == value || *end)
		fail_msg("bad value in: %s", line);
	if (strcmp(r->type, "counter") == 0 && (suffix[0] != '{' && suffix[0] != ' '))
		fail_msg("counter sample with a suffix: %s", line);
	if (strcmp(r->type, "histogram") != 0)
		return;
	if (strncmp(suffix, "_bucket{le=\"", 12) == 0) {
		assert_false(r->saw_inf);
		const char *le = suffix + 12;
		double bound = strncmp(le, "+Inf\"", 5) == 0 ? INFINITY : strtod(le, NULL);
		if (bound <= r->last_le || (uint64_t)v < r->last_bucket)
			fail_msg("buckets not ascending or not cumulative at: %s", line);
		r->last_le = bound;
		r->last_bucket = (uint64_t)v;
		if (isinf(bound)) {
			r->saw_inf = true;
			r->inf_count = (uint64_t)v;
		}
	} else if (strncmp(suffix, "_count ", 7) == 0) {
		if (!r->saw_inf || (uint64_t)v != r->inf_count)
			fail_msg("_count without a +Inf bucket equal to it: %s", line);
	} else if (strncmp(suffix, "_sum ", 5) != 0) {
		fail_msg("histogram sample that is not _bucket, _sum or _count: %s", line);
	}
}

static void check_comment(reader *r, const char *line)
{
	char name[128], rest[512];
	if (sscanf(line, "# HELP %127s %511[^\n]", name, rest) == 2) {
		if (!is_metric_name(name, strlen(name)))
			fail_msg("bad family name: %s", line);
		if (r->family[0] && strcmp(name, r->family) == 0)
			fail_msg("family %s declared twice", name);
		*r = (reader){.n_families = r->n_families + 1, .has_help = true, .last_le = -INFINITY};
		snprintf(r->family, sizeof(r->family), "%s", name);
		return;
	}
	if (sscanf(line, "# TYPE %127s %15s", name, r->type) != 2 || strcmp(name, r->family) != 0)
		fail_msg("expected TYPE of %s after its HELP: %s", r->family, line);
	if (strcmp(r->type, "counter") == 0 && !ends_with(name, strlen(name), "_total"))
		fail_msg("counter %s does not end in _total", name);
	if (strcmp(r->type, "counter") && strcmp(r->type, "gauge") && strcmp(r->type, "histogram"))
		fail_msg("unexpected type: %s", line);
}

/* Reads the whole text; returns the number of families. */
static int check_exposition(const char *text, size_t len)
{
	assert_true(len > 0 && text[len - 1] == '\n');
	assert_int_equal(strlen(text), len);
	reader r = {.last_le = -INFINITY};
	char *copy = strdup(text), *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			check_comment(&r, line);
		else
			check_sample(&r, line);
	}
	free(copy);
	return r.n_families;
}

static void full_snapshot(ftl_metrics_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "w0");
	snprintf(s->cluster, sizeof(s->cluster), "ftl");
	s->members[FTL_MEMBER_ALIVE] = 3;
	s->swim.packets_sent = 10;
	s->swim.dropped[0] = 2;
	s->swim.deaths_declared[FTL_DEATH_SUSPICION] = 1;
	s->is_training = true;
	s->view_epoch = 4;
	s->world_size = 3;
	s->rank = 1;
	s->phase = FTL_RDV_TRAINING;
	/* the training layer's families, as it renders them into the snapshot */
	ftl_train_metrics_snapshot t = {0};
	ftl_train_metrics_create(&t.train);
	t.train.steps = 5;
	t.train.views[FTL_VIEW_CAUSE_DEATH] = 1;
	for (int i = 0; i < 5; i++)
		ftl_histogram_observe(&t.train.step_seconds, 0.02 * i);
	ftl_histogram_observe(&t.train.recovery_seconds, 2.5);
	ftl_histogram_observe(&t.train.allreduce_seconds, 1e9); /* above every bound: +Inf only */
	t.has_checkpoints = true;
	t.ckpt.written = 2;
	t.ckpt.last_write_us = 1500;
	assert_int_equal(ftl_metrics_text_create(&s->training, 64), 0);
	ftl_train_metrics_render(&s->training, &t);
	assert_false(s->training.is_oom);
}

static char *render(const ftl_metrics_snapshot *s, size_t *len)
{
	char *text = ftl_metrics_render(s, len);
	assert_non_null(text);
	return text;
}

static void test_exposition_is_well_formed_with_help_type_and_cumulative_buckets(void **state)
{
	ftl_metrics_snapshot s;
	full_snapshot(&s);
	size_t len;
	char *text = render(&s, &len);
	assert_true(check_exposition(text, len) > 30);
	assert_non_null(strstr(text, "ftl_training_steps_total 5\n"));
	assert_non_null(strstr(text, "ftl_view_world_size 3\n"));
	assert_non_null(strstr(text, "ftl_view_phase{phase=\"training\"} 1\n"));
	assert_non_null(strstr(text, "ftl_view_changes_total{cause=\"death\"} 1\n"));
	assert_non_null(strstr(text, "ftl_members{state=\"alive\"} 3\n"));
	assert_non_null(strstr(text, "ftl_training_recovery_duration_seconds_bucket{le=\"2\"} 0\n"));
	assert_non_null(strstr(text, "ftl_training_recovery_duration_seconds_bucket{le=\"3\"} 1\n"));
	assert_non_null(strstr(text, "ftl_allreduce_duration_seconds_bucket{le=\"10\"} 0\n"));
	assert_non_null(strstr(text, "ftl_allreduce_duration_seconds_bucket{le=\"+Inf\"} 1\n"));
	assert_non_null(strstr(text, "ftl_checkpoint_last_write_duration_seconds 0.0015"));
	assert_non_null(strstr(text, "ftl_membership_deaths_total{reason=\"suspicion timed out\"} 1\n"));
	assert_null(strstr(text, "reason=\"\"")); /* the "no death" reason is not a series */
	free(text);
	ftl_metrics_snapshot_free(&s);
}

static void test_bare_agent_shows_membership_only(void **state)
{
	ftl_metrics_snapshot s;
	full_snapshot(&s);
	s.is_training = false;
	ftl_metrics_snapshot_free(&s); /* a bare agent has no training layer to render anything */
	size_t len;
	char *text = render(&s, &len);
	check_exposition(text, len);
	assert_non_null(strstr(text, "ftl_gossip_packets_total{direction=\"sent\"} 10\n"));
	assert_null(strstr(text, "ftl_training_"));
	assert_null(strstr(text, "ftl_checkpoint"));
	free(text);
	ftl_metrics_snapshot_free(&s);
}

static void test_label_values_are_escaped(void **state)
{
	ftl_metrics_snapshot s;
	full_snapshot(&s);
	snprintf(s.cluster, sizeof(s.cluster), "a\"b\\c\nd");
	size_t len;
	char *text = render(&s, &len);
	check_exposition(text, len);
	assert_non_null(strstr(text, "ftl_agent_info{cluster=\"a\\\"b\\\\c\\nd\",name=\"w0\"} 1\n"));
	free(text);
	ftl_metrics_snapshot_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_histogram_buckets_are_cumulative_and_end_at_inf),
		cmocka_unit_test(test_histogram_without_bounds_has_only_inf),
		cmocka_unit_test(test_exposition_is_well_formed_with_help_type_and_cumulative_buckets),
		cmocka_unit_test(test_bare_agent_shows_membership_only),
		cmocka_unit_test(test_label_values_are_escaped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
