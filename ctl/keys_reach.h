/* `ftlctl keys install|use|remove KEY --wait SECONDS`: has the step reached every live member yet? A key
 * rotation is three steps, each to be let reach the whole cluster before the next (the agent refuses
 * `use` and `remove` otherwise); --wait turns "watch `keys list` until it shows M/M" into one command a
 * script can run. Decided from `keys list` replies (their census, PROTOCOL.md) alone, so these are pure
 * functions, like readiness.h:
 *   install  the key's row shows every live member holding it (M/M);
 *   use      ... every live member sealing with it;
 *   remove   no live member holds it: no row with its fingerprint, which ftlctl reads from the census
 *            before the removal (the agent cannot name a key it no longer holds). */
#ifndef FTL_CTL_KEYS_REACH_H
#define FTL_CTL_KEYS_REACH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum ctl_keys_step { CTL_KEYS_INSTALL, CTL_KEYS_USE, CTL_KEYS_REMOVE } ctl_keys_step;

typedef struct ctl_keys_target {
	ctl_keys_step step;
	const char *key;      /* as ftlctl was given it (install, use) */
	char fingerprint[32]; /* the key's, from the census before the step (remove) */
} ctl_keys_target;

typedef enum ctl_keys_progress {
	CTL_KEYS_REACHED,   /* every live member */
	CTL_KEYS_PENDING,   /* not yet; ask again */
	CTL_KEYS_UNKNOWABLE /* this census cannot tell: no census (an agent from before key fingerprints),
			       members that report no keys, or more keys than it counts */
} ctl_keys_progress;

/* Whether list_reply's census can show a step at all (not CTL_KEYS_UNKNOWABLE); why gets the reason when it
 * cannot. Asked before the step is taken, so a wait that cannot end changes nothing. */
ctl_keys_progress ctl_keys_census_usable(const json_t *list_reply, char *why, size_t why_len);
/* For a removal: the fingerprint of t->key in list_reply (taken before the removal) into t->fingerprint;
 * false when this agent does not hold the key (the agent will refuse the removal anyway). */
bool ctl_keys_target_fingerprint(ctl_keys_target *t, const json_t *list_reply);
/* Where the step stands in list_reply. Either way, how gets one line, e.g. "3/3 live members hold it" or
 * "2/3 live members hold it; lacking: w4". */
ctl_keys_progress ctl_keys_reach(const json_t *list_reply, const ctl_keys_target *t, char *how, size_t how_len);

#endif
