/* The member table: every member one node knows of (itself included), found by name in O(1), and the
 * shuffled order in which the node probes them.
 *
 * Members live in one dense array; removal swaps the last member into the hole, so a member pointer or
 * index is valid only until the next ftl_members_add or ftl_members_remove. The probe order is a
 * shuffled array of indices, reshuffled at the end of every round (SWIM's round-robin probing keeps the
 * time between probes of any member bounded); a new member is inserted at a random point of the round
 * and a removal reshuffles. Memory: about 100 bytes per member plus its name, address, metadata and
 * key fingerprints (65 bytes, only for a member that advertises them). */
#ifndef FTL_MEMBERSHIP_MEMBERS_H
#define FTL_MEMBERSHIP_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"

#include "message.h"
#include "rng.h"
#include "suspicion.h"

typedef struct ftl_member {
	char *name;                   /* owned: one block "name\0addr\0" */
	char *addr;                   /* points into the name block */
	uint32_t addr_hash;           /* ftl_hash_str(addr): a search by address reads the name block only on a match */
	uint8_t *meta;                /* owned; NULL when meta_len is 0 */
	ftl_key_fps *key_fps;         /* owned; NULL when it advertises no key fingerprints (key_census.h) */
	uint64_t generation;
	uint64_t incarnation;
	int64_t state_since_us;       /* when state last changed (for reaping and gossip to the dead) */
	int64_t last_heard_us;        /* last direct ack or message from it (for ftlctl) */
	ftl_suspicion *suspicion;     /* owned; set only while state is suspect */
	uint16_t meta_len;            /* beside state: the small fields share one word */
	uint8_t death_proof;          /* dead: the proof of this life's death (FTL_DEATH_REFUSED, _WITNESSED), else 0 */
	ftl_member_state state;
} ftl_member;

typedef struct ftl_members {
	ftl_member *arr;
	uint32_t len;
	uint32_t cap;
	uint64_t *slots;              /* open addressing: the name's hash << 32 | index+1; 0 = empty (the hash
				       * spares a probe the trip to a name that cannot match) */
	uint32_t n_slots;             /* a power of two, at least 2*len */
	uint32_t *order;              /* probe order: indices into arr */
	uint32_t order_len;
	uint32_t order_pos;           /* next position to probe */
} ftl_members;

void ftl_members_init(ftl_members *t);
void ftl_members_free(ftl_members *t);
ftl_member *ftl_members_find(const ftl_members *t, const char *name);
/* Adds a member in the given state; its name must not be in the table. NULL on OOM (the reason in the diag). */
ftl_member *ftl_members_add(ftl_members *t, ftl_rng *rng, const char *name, const char *addr,
			    ftl_member_state state, int64_t now_us);
/* Removes a member (frees its strings and suspicion) and reshuffles the probe order. */
void ftl_members_remove(ftl_members *t, ftl_rng *rng, ftl_member *m);
/* Replaces address and metadata; FTL_ERR_SYSTEM on OOM (the member is unchanged). */
ftl_err ftl_members_set_addr(ftl_member *m, const char *addr);
ftl_err ftl_members_set_meta(ftl_member *m, const uint8_t *meta, uint16_t len);
/* Replaces the key fingerprints it advertises (count 0: none); FTL_ERR_SYSTEM on OOM (the member is unchanged). */
ftl_err ftl_members_set_key_fps(ftl_member *m, const ftl_key_fps *fps);
/* The next member of the probe round, or NULL when the round is over (the order is then reshuffled
 * and the caller may ask again). */
ftl_member *ftl_members_next_in_round(ftl_members *t, ftl_rng *rng);

#endif
