/* The lives the witness (witness.h) looked for on this host and did not find: a set of (name, generation),
 * so that a membership change opens the life files of members it has not tried yet, and no others.
 *
 * Why a set: a life's file exists before its owner tells anyone of that life (ftl_witness_hold comes
 * first on the owner's loop thread), so a life whose file was absent once is not on this host and never
 * will be (a restart is a new generation, tried afresh). Without it, every membership change tried every
 * remote member again: O(members) failed opens per change, and a key holder gossiping thousands of fake
 * names kept the agent's loop busy for minutes (scripts/hostile/growth.py, issue 41 item 7).
 *
 * Keys are 64-bit hashes of the name seeded with the generation; two lives that collide cost only the
 * witness's fast path for one of them (SWIM still detects its death). The set is cleared when it holds
 * far more lives than the member table, since gone members' lives are then most of it: each member left
 * is tried once more. */
#ifndef FTL_AGENT_WITNESS_ABSENT_H
#define FTL_AGENT_WITNESS_ABSENT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ftl_absent_lives {
	uint64_t *slots; /* open addressing, linear probing; 0 = empty */
	uint32_t n_slots, len;
} ftl_absent_lives;

bool ftl_absent_has(const ftl_absent_lives *s, const char *name, uint64_t generation);
/* Out of memory: not added (the life is tried again at the next change). */
void ftl_absent_add(ftl_absent_lives *s, const char *name, uint64_t generation);
/* Clears the set when it holds more than twice the `members` the table has now (and 64). */
void ftl_absent_trim(ftl_absent_lives *s, uint32_t members);
void ftl_absent_free(ftl_absent_lives *s);

#endif
