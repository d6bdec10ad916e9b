/* `ftlctl keys install|use|remove KEY --wait SECONDS`: has the step reached every live member yet? A key
 * rotation is three steps, each to be let reach the whole cluster before the next (the agent refuses
 * `use` and `remove` otherwise); --wait turns "watch `keys list` until it shows M/M" into one command a
 * script can run. Decided from a `keys list` reply (its census, PROTOCOL.md) alone, so it is a pure
 * function, like readiness.h:
 *   install  the key's row shows every live member holding it (M/M);
 *   use      ... every live member sealing with it;
 *   remove   no live member holds a key this agent does not (the removed one is gone everywhere). */
#ifndef FTL_CTL_KEYS_REACH_H
#define FTL_CTL_KEYS_REACH_H

#include <jansson.h>
#include <stddef.h>

typedef enum ctl_keys_step { CTL_KEYS_INSTALL, CTL_KEYS_USE, CTL_KEYS_REMOVE } ctl_keys_step;

typedef enum ctl_keys_progress {
	CTL_KEYS_REACHED,   /* every live member */
	CTL_KEYS_PENDING,   /* not yet; ask again */
	CTL_KEYS_UNKNOWABLE /* the reply has no census (an agent from before key fingerprints) */
} ctl_keys_progress;

/* Where step of key stands in list_reply. Either way, how gets one line, e.g. "3/3 live members hold it"
 * or "2/3 live members hold it; lacking: w4". */
ctl_keys_progress ctl_keys_reach(const json_t *list_reply, ctl_keys_step step, const char *key, char *how,
				 size_t how_len);

#endif
