/* Has a key step reached every live member (see keys_reach.h). */
#include "keys_reach.h"

#include <stdio.h>
#include <string.h>

static json_int_t integer(const json_t *obj, const char *name) { return json_integer_value(json_object_get(obj, name)); }

/* The census row whose field (key or fingerprint) is text, or NULL. */
static const json_t *row_where(const json_t *census, const char *field, const char *text)
{
	size_t i;
	const json_t *row;
	json_array_foreach(census, i, row) {
		const char *value = json_string_value(json_object_get(row, field));
		if (value != NULL && strcmp(value, text) == 0)
			return row;
	}
	return NULL;
}

/* "; lacking: a, b" from the row's names (up to 16, as the agent lists them), or nothing. */
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

ctl_keys_progress ctl_keys_census_usable(const json_t *list_reply, char *why, size_t why_len)
{
	json_int_t unreported = integer(list_reply, "unreported");
	if (!json_is_array(json_object_get(list_reply, "census")))
		snprintf(why, why_len, "the agent reports no key census (an agent from before key fingerprints)");
	else if (unreported > 0)
		snprintf(why, why_len, "%lld live member(s) report no keys (agents from before key fingerprints): "
				       "finish the upgrade first", (long long)unreported);
	else if (json_is_true(json_object_get(list_reply, "truncated")))
		snprintf(why, why_len, "members hold more distinct keys than the agent counts");
	else
		return CTL_KEYS_PENDING;
	return CTL_KEYS_UNKNOWABLE;
}

bool ctl_keys_target_fingerprint(ctl_keys_target *t, const json_t *list_reply)
{
	const json_t *row = row_where(json_object_get(list_reply, "census"), "key", t->key);
	const char *fingerprint = json_string_value(json_object_get(row, "fingerprint"));
	t->fingerprint[0] = '\0';
	if (fingerprint == NULL || strlen(fingerprint) >= sizeof t->fingerprint)
		return false;
	strcpy(t->fingerprint, fingerprint);
	return true;
}

ctl_keys_progress ctl_keys_reach(const json_t *list_reply, const ctl_keys_target *t, char *how, size_t how_len)
{
	if (ctl_keys_census_usable(list_reply, how, how_len) == CTL_KEYS_UNKNOWABLE)
		return CTL_KEYS_UNKNOWABLE;
	const json_t *census = json_object_get(list_reply, "census");
	long long members = (long long)integer(list_reply, "members");
	if (t->step == CTL_KEYS_REMOVE) {
		const json_t *row = t->fingerprint[0] ? row_where(census, "fingerprint", t->fingerprint) : NULL;
		long long holders = row ? (long long)integer(row, "holders") : 0;
		snprintf(how, how_len, "%lld/%lld live members hold it", holders, members);
		return holders == 0 ? CTL_KEYS_REACHED : CTL_KEYS_PENDING;
	}
	const json_t *row = row_where(census, "key", t->key);
	long long holders = row ? (long long)integer(row, "holders") : 0;
	long long sealing = row ? (long long)integer(row, "primary_of") : 0;
	if (t->step == CTL_KEYS_INSTALL) {
		snprintf(how, how_len, "%lld/%lld live members hold it", holders, members);
		append_lacking(how, how_len, row);
		return row && holders == members ? CTL_KEYS_REACHED : CTL_KEYS_PENDING;
	}
	snprintf(how, how_len, "%lld/%lld live members seal with it", sealing, members);
	return row && sealing == members ? CTL_KEYS_REACHED : CTL_KEYS_PENDING;
}
