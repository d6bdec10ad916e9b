/* Tombstones: the lives (name, generation) of members that died or left and were reaped.
 *
 * Reaping forgets a member so the table does not grow forever, but then an alive rumor or push-pull entry
 * for that life, replayed by anyone who captured it (or repeated by a node that missed the death), would
 * look like a join. A reaped life is remembered here, and an alive for it (or for an older life of that
 * name) is not believed (swim_revive.c asks the life itself); a larger generation, a restart, joins. The most recent FTL_TOMBSTONES_MAX
 * reaps are kept (about 80 bytes each), the oldest forgotten first; there is no time limit, so the replay
 * window is as long as the cluster reaps fewer members than that. Lookups are O(n), and only made for
 * an alive about a name the table does not hold. */
#ifndef FTL_MEMBERSHIP_TOMBSTONES_H
#define FTL_MEMBERSHIP_TOMBSTONES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "message.h"

#define FTL_TOMBSTONES_MAX 4096

typedef struct ftl_tombstone {
	char name[FTL_NAME_MAX];
	uint64_t generation;
} ftl_tombstone;

typedef struct ftl_tombstones {
	ftl_tombstone *arr;  /* grown on demand up to FTL_TOMBSTONES_MAX, then a ring */
	size_t len;
	size_t cap;
	size_t next;         /* the slot the next one overwrites once full */
} ftl_tombstones;

void ftl_tombstones_init(ftl_tombstones *t);
void ftl_tombstones_free(ftl_tombstones *t);
/* Remembers a reaped life (a later generation of the same name replaces an earlier one). */
void ftl_tombstones_add(ftl_tombstones *t, const char *name, uint64_t generation);
/* Forgets name's tombstone (it proved itself alive). */
void ftl_tombstones_unbury(ftl_tombstones *t, const char *name);
/* True when name's life `generation`, or a later one, was reaped. */
bool ftl_tombstones_buried(const ftl_tombstones *t, const char *name, uint64_t generation);

#endif
