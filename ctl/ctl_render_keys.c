/* `ftlctl keys list` as text: every key with how many live members hold it (N/M) and seal with it, from the
 * agent's key census (PROTOCOL.md), or the bare key list of an agent from before the census. */
#include "ctl_render.h"

#include <stdbool.h>

/* "lacking: a, b and 3 more", from the names the agent listed and the count N/M implies. */
static void render_lacking(FILE *out, const json_t *row, long long lacking)
{
	const json_t *names = json_object_get(row, "lacking");
	size_t i;
	const json_t *name;
	if (lacking <= 0)
		return;
	fprintf(out, "  lacking: ");
	json_array_foreach(names, i, name)
		fprintf(out, "%s%s", i ? ", " : "", json_string_value(name) ? json_string_value(name) : "?");
	if (lacking > (long long)json_array_size(names))
		fprintf(out, "%s%lld more", json_array_size(names) ? " and " : "", lacking - (long long)json_array_size(names));
}

static void render_census(FILE *out, const json_t *reply, const json_t *census)
{
	const json_t *primary = json_array_get(json_object_get(reply, "keys"), 0);
	long long members = ctl_render_integer(reply, "members");
	size_t i;
	const json_t *row;
	fprintf(out, "%-44s  %-16s  %-7s  %s\n", "KEY", "FINGERPRINT", "HELD BY", "PRIMARY ON");
	json_array_foreach(census, i, row) {
		const json_t *key = json_object_get(row, "key");
		char held[48], primary_on[48];
		long long holders = ctl_render_integer(row, "holders");
		snprintf(held, sizeof held, "%lld/%lld", holders, members);
		snprintf(primary_on, sizeof primary_on, "%lld/%lld", ctl_render_integer(row, "primary_of"), members);
		bool is_primary_here = json_is_string(key) && json_equal((json_t *)key, (json_t *)primary);
		bool has_notes = is_primary_here || holders < members;
		fprintf(out, "%-44s  %-16s  %-7s  %-*s", json_is_string(key) ? json_string_value(key) : "(not installed here)",
			ctl_render_text(row, "fingerprint"), held, has_notes ? 10 : 0, primary_on);
		if (is_primary_here)
			fprintf(out, "  primary here");
		render_lacking(out, row, members - holders);
		fputc('\n', out);
	}
	if (ctl_render_integer(reply, "unreported") > 0)
		fprintf(out, "%lld live member(s) report no keys (agents from before key fingerprints): they count as "
			     "lacking every key\n", ctl_render_integer(reply, "unreported"));
	if (json_is_true(json_object_get(reply, "truncated")))
		fprintf(out, "members hold more distinct keys than the agent counts: not every key is shown\n");
}

void ctl_render_keys(FILE *out, const json_t *reply)
{
	const json_t *census = json_object_get(reply, "census");
	size_t i;
	const json_t *key;
	if (json_is_array(census)) {
		render_census(out, reply, census);
		return;
	}
	json_array_foreach(json_object_get(reply, "keys"), i, key)
		fprintf(out, "%s%s\n", json_string_value(key) ? json_string_value(key) : "?", i == 0 ? "  (primary)" : "");
}
