/* Filtering member rows for `ftlctl members` (see member_filter.h). */
#include "member_filter.h"

#include <string.h>

#include "base/diag.h"

const char *const member_statuses[] = {"alive", "suspect", "dead", "left", NULL};

/* The index of word[0..len) in member_statuses, or -1 when it is not a status. */
static int status_index(const char *word, size_t len)
{
	for (int i = 0; member_statuses[i] != NULL; i++)
		if (strlen(member_statuses[i]) == len && strncmp(member_statuses[i], word, len) == 0)
			return i;
	return -1;
}

ftl_err member_filter_add_statuses(member_filter *filter, const char *list)
{
	const char *word = list;
	for (;;) {
		size_t len = strcspn(word, ",");
		int index = status_index(word, len);
		if (index < 0)
			return ftl_diag_set(FTL_ERR_INVALID, "unknown status %.*s; use alive, suspect, dead or left",
					    (int)len, word);
		filter->statuses |= 1u << index;
		if (word[len] == '\0')
			return FTL_OK;
		word += len + 1;
	}
}

bool member_filter_matches(const member_filter *filter, const json_t *member)
{
	const char *status = json_string_value(json_object_get(member, "status"));
	const char *name = json_string_value(json_object_get(member, "name"));
	if (filter->statuses != 0) {
		int index = status != NULL ? status_index(status, strlen(status)) : -1;
		if (index < 0 || (filter->statuses & (1u << index)) == 0)
			return false;
	}
	if (filter->name_part != NULL && (name == NULL || strstr(name, filter->name_part) == NULL))
		return false;
	return true;
}

json_t *member_filter_apply(const member_filter *filter, const json_t *members)
{
	json_t *kept = json_array();
	size_t i;
	const json_t *member;
	if (kept == NULL)
		return NULL;
	json_array_foreach(members, i, member)
		if (member_filter_matches(filter, member))
			json_array_append(kept, (json_t *)member);
	return kept;
}
