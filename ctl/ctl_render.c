/* Human-readable output of status, members and events (see ctl_render.h). */
#include "ctl_render.h"

#include <string.h>

enum { COLUMNS = 8, CELL = 128 };

/* The last column, REPLICA, is shown only when some member is in a replica (a sharded job). */
static const char *const column_titles[COLUMNS] = {"NAME",       "ADDRESS",    "STATUS", "INCARNATION",
						   "GENERATION", "LAST-HEARD", "RANK",   "REPLICA"};

const char *ctl_render_text(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s != NULL ? s : "?";
}

void ctl_render_number(const json_t *obj, const char *key, const char *none_text, char *out, size_t out_len)
{
	const json_t *v = json_object_get(obj, key);
	if (json_is_integer(v))
		snprintf(out, out_len, "%lld", (long long)json_integer_value(v));
	else
		snprintf(out, out_len, "%s", json_is_null(v) ? none_text : "?");
}

long long ctl_render_integer(const json_t *obj, const char *key)
{
	return (long long)json_integer_value(json_object_get(obj, key));
}

void ctl_format_last_heard(const json_t *ms, char *out, size_t out_len)
{
	double seconds;
	if (!json_is_integer(ms) || json_integer_value(ms) < 0) {
		snprintf(out, out_len, "-");
		return;
	}
	seconds = (double)json_integer_value(ms) / 1000.0;
	if (seconds < 10)
		snprintf(out, out_len, "%.2fs", seconds);
	else if (seconds < 100)
		snprintf(out, out_len, "%.1fs", seconds);
	else
		snprintf(out, out_len, "%.0fs", seconds);
}

static void member_cells(const json_t *member, char cells[COLUMNS][CELL])
{
	snprintf(cells[0], CELL, "%s", ctl_render_text(member, "name"));
	snprintf(cells[1], CELL, "%s", ctl_render_text(member, "addr"));
	snprintf(cells[2], CELL, "%s", ctl_render_text(member, "status"));
	ctl_render_number(member, "incarnation", "-", cells[3], CELL);
	ctl_render_number(member, "generation", "-", cells[4], CELL);
	ctl_format_last_heard(json_object_get(member, "last_heard_ms"), cells[5], CELL);
	ctl_render_number(member, "rank", "-", cells[6], CELL);
	const json_t *replica = json_object_get(member, "replica");
	if (json_is_object(replica))
		snprintf(cells[7], CELL, "%s/%lld", ctl_render_text(replica, "name"), ctl_render_integer(replica, "index"));
	else
		snprintf(cells[7], CELL, "-");
}

static void print_row(FILE *out, const char *const cells[COLUMNS], const int widths[COLUMNS], int columns)
{
	for (int col = 0; col < columns - 1; col++)
		fprintf(out, "%-*s  ", widths[col], cells[col]);
	fprintf(out, "%s\n", cells[columns - 1]);
}

void ctl_render_members(FILE *out, const json_t *members)
{
	int widths[COLUMNS];
	char cells[COLUMNS][CELL];
	const char *row[COLUMNS];
	size_t i;
	const json_t *member;

	for (int col = 0; col < COLUMNS; col++)
		widths[col] = (int)strlen(column_titles[col]);
	int columns = COLUMNS - 1;
	json_array_foreach(members, i, member) {
		member_cells(member, cells);
		columns = json_is_object(json_object_get(member, "replica")) ? COLUMNS : columns;
		for (int col = 0; col < COLUMNS; col++)
			if ((int)strlen(cells[col]) > widths[col])
				widths[col] = (int)strlen(cells[col]);
	}
	print_row(out, column_titles, widths, columns);
	json_array_foreach(members, i, member) {
		member_cells(member, cells);
		for (int col = 0; col < COLUMNS; col++)
			row[col] = cells[col];
		print_row(out, row, widths, columns);
	}
}

static double real_of(const json_t *obj, const char *key)
{
	return json_number_value(json_object_get(obj, key));
}

/* The pace of the ranks (an optional field: after the first exchange of a training view): the slow rank, or
 * the largest lead when none is slow. */
static void render_pace(FILE *out, const json_t *pace)
{
	const json_t *ranks = json_object_get(pace, "ranks"), *slow = json_object_get(pace, "slow_rank");
	if (!json_is_array(ranks) || json_array_size(ranks) == 0)
		return;
	size_t i, top = 0;
	const json_t *row;
	json_array_foreach(ranks, i, row)
		if (real_of(row, "lead_ms") > real_of(json_array_get(ranks, top), "lead_ms"))
			top = i;
	row = json_is_integer(slow) ? json_array_get(ranks, (size_t)json_integer_value(slow)) : NULL;
	if (row != NULL) {
		fprintf(out, "pace         rank %lld (%s) is slow: the others wait %.1f ms of a %.1f ms step for it\n",
			ctl_render_integer(row, "rank"), ctl_render_text(row, "name"), real_of(row, "lead_ms"),
			real_of(row, "step_ms"));
		return;
	}
	row = json_array_get(ranks, top);
	fprintf(out, "pace         no slow rank (the most waited for: rank %lld, %.1f ms of a %.1f ms step)\n",
		ctl_render_integer(row, "rank"), real_of(row, "lead_ms"), real_of(row, "step_ms"));
}

/* The rebalance policy's shares (each rank's "share", when the policy is on): the rank that takes the least. */
static void render_shares(FILE *out, const json_t *pace)
{
	const json_t *ranks = json_object_get(pace, "ranks"), *row;
	size_t i, least = 0, n = json_array_size(ranks);
	if (n == 0 || !json_is_number(json_object_get(json_array_get(ranks, 0), "share")))
		return;
	json_array_foreach(ranks, i, row)
		if (real_of(row, "share") < real_of(json_array_get(ranks, least), "share"))
			least = i;
	row = json_array_get(ranks, least);
	fprintf(out, "shares       rank %lld (%s) takes the least of the global batch: %.1f%% (even: %.1f%%)\n",
		ctl_render_integer(row, "rank"), ctl_render_text(row, "name"), 100.0 * real_of(row, "share"),
		100.0 / (double)n);
}

static void render_view(FILE *out, const json_t *view)
{
	char epoch[32], world[32], step[32];
	if (!json_is_object(view)) {
		fprintf(out, "view         none yet\n");
		return;
	}
	ctl_render_number(view, "epoch", "-", epoch, sizeof epoch);
	ctl_render_number(view, "world_size", "-", world, sizeof world);
	ctl_render_number(view, "step", "-", step, sizeof step);
	fprintf(out, "view         epoch %s, %s, coordinator %s, world size %s, step %s\n", epoch,
		ctl_render_text(view, "phase"), ctl_render_text(view, "coordinator"), world, step);
	if (json_is_string(json_object_get(view, "missing")))
		fprintf(out, "missing      %s\nto resolve   %s\n", ctl_render_text(view, "missing"), ctl_render_text(view, "resolve"));
	render_pace(out, json_object_get(view, "pace"));
	render_shares(out, json_object_get(view, "pace"));
}

/* Where ftl_execute stands on this worker (an optional field: agents without training omit it). */
static void render_execute(FILE *out, const json_t *execute)
{
	if (json_is_object(execute))
		fprintf(out, "execute      %s\n", ctl_render_text(execute, "state"));
}

static void render_health(FILE *out, const json_t *health)
{
	long long score = (long long)json_integer_value(health);
	if (!json_is_integer(health))
		fprintf(out, "health       ?\n");
	else if (score == 0)
		fprintf(out, "health       0 (healthy)\n");
	else
		fprintf(out, "health       %lld (degraded: this node answers slowly, so its timeouts are stretched)\n",
			score);
}

static long long sum_of(const json_t *obj)
{
	const char *key;
	const json_t *v;
	long long sum = 0;
	json_object_foreach((json_t *)obj, key, v)
		sum += (long long)json_integer_value(v);
	return sum;
}

static void render_traffic(FILE *out, const json_t *counters)
{
	if (!json_is_object(counters))
		return;
	fprintf(out, "traffic      sent %lld packets (%lld bytes), received %lld (%lld bytes), dropped %lld\n",
		ctl_render_integer(counters, "packets_sent"), ctl_render_integer(counters, "bytes_sent"),
		ctl_render_integer(counters, "packets_received"), ctl_render_integer(counters, "bytes_received"),
		sum_of(json_object_get(counters, "dropped")));
}

/* The timing in force, when the agent reports it (an optional field). */
static void render_timing(FILE *out, const json_t *timing)
{
	if (!json_is_object(timing))
		return;
	fprintf(out,
		"timing       probe every %lld ms (timeout %lld ms), gossip every %lld ms, suspicion up to %lld ms;\n"
		"             a crash is detected within %lld ms\n",
		ctl_render_integer(timing, "probe_interval_ms"), ctl_render_integer(timing, "probe_timeout_ms"),
		ctl_render_integer(timing, "gossip_interval_ms"), ctl_render_integer(timing, "suspicion_max_ms"),
		ctl_render_integer(timing, "detection_bound_ms"));
}

/* The last checkpoint and the writer, when the agent checkpoints (an optional field). */
static void render_checkpoint(FILE *out, const json_t *ckpt)
{
	if (!json_is_object(ckpt))
		return;
	const json_t *age = json_object_get(ckpt, "age_s");
	if (json_is_integer(json_object_get(ckpt, "last_step")))
		fprintf(out, "checkpoint   step %lld, %.1f s ago, %s\n", ctl_render_integer(ckpt, "last_step"),
			json_number_value(age), ctl_render_text(ckpt, "last_file"));
	else
		fprintf(out, "checkpoint   none yet in %s\n", ctl_render_text(ckpt, "dir"));
	fprintf(out, "             writer %s; %lld written, %lld skipped (busy), %lld failed\n", ctl_render_text(ckpt, "writer"),
		ctl_render_integer(ckpt, "written"), ctl_render_integer(ckpt, "skipped"), ctl_render_integer(ckpt, "failed"));
}

void ctl_render_status(FILE *out, const json_t *status)
{
	const json_t *self = json_object_get(status, "self");
	const json_t *counts = json_object_get(status, "counts");
	char generation[32], incarnation[32];

	ctl_render_number(self, "generation", "-", generation, sizeof generation);
	ctl_render_number(self, "incarnation", "-", incarnation, sizeof incarnation);
	fprintf(out, "cluster      %s (profile %s)\n", ctl_render_text(status, "cluster"), ctl_render_text(status, "profile"));
	fprintf(out, "self         %s at %s, generation %s, incarnation %s\n", ctl_render_text(self, "name"),
		ctl_render_text(self, "addr"), generation, incarnation);
	render_view(out, json_object_get(status, "view"));
	render_execute(out, json_object_get(status, "execute"));
	fprintf(out, "members      %lld alive, %lld suspect, %lld dead, %lld left\n", ctl_render_integer(counts, "alive"),
		ctl_render_integer(counts, "suspect"), ctl_render_integer(counts, "dead"), ctl_render_integer(counts, "left"));
	render_health(out, json_object_get(status, "health"));
	render_traffic(out, json_object_get(status, "counters"));
	render_timing(out, json_object_get(status, "timing"));
	render_checkpoint(out, json_object_get(status, "checkpoint"));
	fprintf(out, "\n");
	ctl_render_members(out, json_object_get(status, "members"));
}

void ctl_render_event(FILE *out, const json_t *event)
{
	char generation[32], incarnation[32];
	ctl_render_number(event, "generation", "-", generation, sizeof generation);
	ctl_render_number(event, "incarnation", "-", incarnation, sizeof incarnation);
	fprintf(out, "%s  %-7s  %s  %s  generation %s  incarnation %s", ctl_render_text(event, "time"), ctl_render_text(event, "event"),
		ctl_render_text(event, "name"), ctl_render_text(event, "addr"), generation, incarnation);
	if (json_is_string(json_object_get(event, "reason")))
		fprintf(out, "  (%s, by %s)", ctl_render_text(event, "reason"), ctl_render_text(event, "from"));
	fputc('\n', out);
}
