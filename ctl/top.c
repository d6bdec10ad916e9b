/* The frame of `ftlctl top` (see top.h). A person watching a job rescale wants, at a glance: how many
 * workers train and in which view, whether steps still advance and how fast, how long the last failure
 * cost, and which member is in which state; the member table is `ftlctl members`'s. */
#include "top.h"

#include "ctl_render.h"

/* "12.5 steps/s", or "-" without two samples of the same job (no previous one, or the step went back: a
 * merge into another lineage, or a resume). */
static void step_rate(const json_t *view, const json_t *before_view, double elapsed_s, char *out, size_t len)
{
	const json_t *now = json_object_get(view, "step"), *then = json_object_get(before_view, "step");
	if (!json_is_integer(now) || !json_is_integer(then) || elapsed_s <= 0 ||
	    json_integer_value(now) < json_integer_value(then)) {
		snprintf(out, len, "-");
		return;
	}
	snprintf(out, len, "%.1f steps/s", (double)(json_integer_value(now) - json_integer_value(then)) / elapsed_s);
}

static void render_training(FILE *out, const json_t *view, const json_t *before_view, double elapsed_s)
{
	char epoch[32], world[32], rank[32], step[32], rate[48];
	ctl_render_number(view, "epoch", "-", epoch, sizeof epoch);
	ctl_render_number(view, "world_size", "-", world, sizeof world);
	ctl_render_number(view, "rank", "-", rank, sizeof rank);
	ctl_render_number(view, "step", "-", step, sizeof step);
	step_rate(view, before_view, elapsed_s, rate, sizeof rate);
	fprintf(out, "view         epoch %s, %s, world size %s, coordinator %s, this worker's rank %s\n", epoch,
		ctl_render_text(view, "phase"), world, ctl_render_text(view, "coordinator"),
		ctl_render_integer(view, "rank") < 0 ? "-" : rank);
	fprintf(out, "steps        step %s, %s, %lld retries\n", step, rate, ctl_render_integer(view, "retries"));
	const json_t *last = json_object_get(view, "last_recovery_ms");
	if (json_is_number(last))
		fprintf(out, "recovery     last %.2f s (failure to the next step), %lld in all\n",
			json_number_value(last) / 1000.0, ctl_render_integer(view, "recoveries"));
	else
		fprintf(out, "recovery     none yet\n");
	if (json_is_string(json_object_get(view, "missing")))
		fprintf(out, "missing      %s\n", ctl_render_text(view, "missing"));
}

void ctl_top_render(FILE *out, const json_t *now, const json_t *before, double elapsed_s)
{
	const json_t *self = json_object_get(now, "self"), *counts = json_object_get(now, "counts");
	const json_t *view = json_object_get(now, "view");
	fprintf(out, "ftl top      %s at %s, cluster %s\n", ctl_render_text(self, "name"), ctl_render_text(self, "addr"),
		ctl_render_text(now, "cluster"));
	if (json_is_object(view))
		render_training(out, view, json_object_get(before, "view"), elapsed_s);
	else
		fprintf(out, "view         none (a membership agent, not a training worker)\n");
	fprintf(out, "members      %lld alive, %lld suspect, %lld dead, %lld left; health %lld\n",
		ctl_render_integer(counts, "alive"), ctl_render_integer(counts, "suspect"),
		ctl_render_integer(counts, "dead"), ctl_render_integer(counts, "left"), ctl_render_integer(now, "health"));
	fprintf(out, "\n");
	ctl_render_members(out, json_object_get(now, "members"));
}
