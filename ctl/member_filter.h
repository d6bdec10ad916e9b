/* The `ftlctl members` filters: by status (a comma-separated set) and by a substring of the name. */
#ifndef FTL_CTL_MEMBER_FILTER_H
#define FTL_CTL_MEMBER_FILTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "ftl/error.h"

typedef struct member_filter {
	unsigned statuses;       /* bit per status in member_statuses; 0 means any */
	const char *name_part;   /* NULL means any */
} member_filter;

extern const char *const member_statuses[];

/* Adds a comma-separated list like "alive,suspect" to the filter. FTL_OK, or FTL_ERR_INVALID with the
 * first unknown word named in the diag (the caller prints the usage error). */
ftl_err member_filter_add_statuses(member_filter *filter, const char *list);
bool member_filter_matches(const member_filter *filter, const json_t *member);
/* A new array with the members of `members` that match (the caller frees it). */
json_t *member_filter_apply(const member_filter *filter, const json_t *members);

#endif
