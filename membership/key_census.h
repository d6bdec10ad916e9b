/* The key census: which of the cluster's live members hold which keys, so that `ftlctl keys list` can say
 * "held by N of M members" for every key, and a key change that would cut members off is refused before
 * anything changes (swim_keys.c).
 *
 * How members learn what the others hold. Every member gossips the fingerprints of its keys
 * (key_fingerprint.h: 8 bytes each, never the key) in its own alive message and its push-pull entry, and
 * announces a new set with a raised incarnation whenever its keyring changes, exactly as it announces new
 * metadata. So the census is a local read of the member table, answered at once, and always as fresh as
 * the membership itself: a member that joins, dies or rotates a key is counted the moment its membership
 * news arrives, by the same dissemination and push-pull repair that carry that news.
 * We chose this over serf's approach (a query fanned out to every member, counting the answers until a
 * timeout) because a query's count depends on its timeout and on who answered in time, a busy or lossy
 * member looks like one without the key, each `keys list` costs a cluster-wide broadcast and N replies,
 * and a refusal decided on a partial answer is a guess. The price here is small: 8 bytes per key (66 bytes
 * at most) on alive messages, and one more alive rumor per member per key change.
 *
 * Mixed versions: an agent from before fingerprints advertises none and drops the field when it relays
 * others' alives (a same-incarnation alive that carries fingerprints fills them in later). Such a member
 * counts in M but not in N for any key ("unreported"): we cannot tell what it holds. */
#ifndef FTL_MEMBERSHIP_KEY_CENSUS_H
#define FTL_MEMBERSHIP_KEY_CENSUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "key_fingerprint.h"

typedef struct ftl_members ftl_members; /* the member table (members.h), walked by the census functions */

#define FTL_KEY_CENSUS_ROWS 32 /* distinct keys counted; past them the census says it is incomplete */

typedef struct ftl_key_census_row {
	uint8_t fp[FTL_KEY_FP_SIZE];
	int local;          /* its place in our own keyring (0: our primary), or -1 when we do not hold it */
	uint32_t holders;   /* live members that advertise it, ourselves included: N of N/M */
	uint32_t primaries; /* ... as their primary, the key they seal with */
} ftl_key_census_row;

typedef struct ftl_key_census {
	uint32_t members;      /* M: live members (alive or suspect), ourselves included */
	uint32_t unreported;   /* ... that advertise no fingerprints (an agent before them) */
	bool is_truncated;     /* some member holds a key beyond FTL_KEY_CENSUS_ROWS others: not counted */
	size_t n_rows;
	ftl_key_census_row rows[FTL_KEY_CENSUS_ROWS]; /* ours in keyring order first, then others' as met */
} ftl_key_census;

/* Counts over the member table; ours are the fingerprints of our own keyring (rows even where no one else
 * holds them). O(members * keys). */
void ftl_key_census_take(ftl_key_census *c, const ftl_members *t, const ftl_key_fps *ours);
/* The row of fp, or NULL. */
const ftl_key_census_row *ftl_key_census_find(const ftl_key_census *c, const uint8_t fp[FTL_KEY_FP_SIZE]);
/* Live members that do not advertise fp (unreported ones included): how many, and the first max names. */
uint32_t ftl_key_census_lacking(const ftl_members *t, const uint8_t fp[FTL_KEY_FP_SIZE], const char **names,
				uint32_t max);

#endif
