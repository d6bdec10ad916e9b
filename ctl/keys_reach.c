/* Has a key step reached every live member (see keys_reach.h). */
#include "keys_reach.h"

#include <stdio.h>
#include <string.h>

static const json_t *row_of(const json_t *census, const char *key)
{
	size_t i;
	const json_t *row;
	json_array_foreach(census, i, row) {
		const char *text = json_string_value(json_object_get(row, "key"));
		if (text != NULL && strcmp(text, key) == 0)
			return row;
	}
	return NULL;
}

/* ", lacking: a, b" from the row's names (up to 16, as the agent lists them), or nothing. */
static void append_lacking(char *how, size_t how_len, const json_t *row)
{
	size_t i, used = strlen(how);
	const json_t *name;
	json_array_foreach(json_object_get(row, "lacking"), i, name) {
		if (used >= how_len)
			return;
		used += (size_t)snprintf(how + used, how_len - used, "%s%s", i ? ", " : "; lacking: ",
					 json_string_value(name) ? json_string_value(name) : "?");
	}
}

static json_int_t integer(const json_t *obj, const char *name) { return json_integer_value(json_object_get(obj, name)); }

/* Live members that hold a key this agent does not (null rows), counted once per such key. */
static json_int_t strangers(const json_t *census, size_t *keys)
{
	size_t i;
	const json_t *row;
	json_int_t most = 0;
	*keys = 0;
	json_array_foreach(census, i, row) {
		if (json_is_string(json_object_get(row, "key")))
			continue;
		(*keys)++;
		if (integer(row, "holders") > most)
			most = integer(row, "holders");
	}
	return most;
}

ctl_keys_progress ctl_keys_reach(const json_t *list_reply, ctl_keys_step step, const char *key, char *how,
				 size_t how_len)
{
	const json_t *census = json_object_get(list_reply, "census");
	json_int_t members = integer(list_reply, "members");
	if (!json_is_array(census)) {
		snprintf(how, how_len, "the agent reports no key census (an agent from before key fingerprints)");
		return CTL_KEYS_UNKNOWABLE;
	}
	if (step == CTL_KEYS_REMOVE) {
		size_t keys;
		json_int_t most = strangers(census, &keys);
		if (keys == 0) {
			snprintf(how, how_len, "no live member of %lld holds a key this agent does not", (long long)members);
			return CTL_KEYS_REACHED;
		}
		snprintf(how, how_len, "%lld/%lld live members still hold a key this agent does not (%zu such key%s)",
			 (long long)most, (long long)members, keys, keys == 1 ? "" : "s");
		return CTL_KEYS_PENDING;
	}
	const json_t *row = row_of(census, key);
	json_int_t holders = row ? integer(row, "holders") : 0, sealing = row ? integer(row, "primary_of") : 0;
	if (step == CTL_KEYS_INSTALL) {
		snprintf(how, how_len, "%lld/%lld live members hold it", (long long)holders, (long long)members);
		append_lacking(how, how_len, row);
		return row && holders == members ? CTL_KEYS_REACHED : CTL_KEYS_PENDING;
	}
	snprintf(how, how_len, "%lld/%lld live members seal with it", (long long)sealing, (long long)members);
	return row && sealing == members ? CTL_KEYS_REACHED : CTL_KEYS_PENDING;
}
