/* The key census inside the membership core: our own key fingerprints follow our keyring, and key ops
 * that the census shows would cut live members off are refused where they are made.
 *
 * Our fingerprints are taken again after every change of the keyring (a key op applied here or heard by
 * gossip, or a caller that changed the keyring directly, noticed at the next tick) and announced with a
 * raised incarnation, so every member's census follows within a dissemination time (key_census.h explains
 * why gossip and not a query).
 *
 * The refusals, each with what to do instead:
 *  - "use" of a key that some live member does not hold, or does not report (an older agent): sealing with
 *    it would cut the member off, and the gossiped op with it, since the op travels sealed with the key.
 *  - "remove" of a key that some live member still seals with (its primary): the others could no longer
 *    open what it sends. Our own primary is refused by the keyring itself. */
#include "swim_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ftl_err ftl_swim_take_key_fps(ftl_swim *s)
{
	ftl_key_fps fps;
	ftl_keyring_fingerprints(s->keyring, &fps);
	ftl_err err = ftl_members_set_key_fps(ftl_swim_self(s), &fps);
	if (err)
		return err;
	s->keyring_changes = ftl_keyring_changes(s->keyring);
	return FTL_OK;
}

void ftl_swim_sync_key_fps(ftl_swim *s)
{
	if (ftl_keyring_changes(s->keyring) == s->keyring_changes || ftl_swim_take_key_fps(s) != 0)
		return; /* unchanged, or out of memory: tried again on the next tick */
	if (s->is_leaving)
		return; /* an alive now would undo our leave */
	ftl_member *self = ftl_swim_self(s);
	self->incarnation++;
	ftl_swim_broadcast_alive(s, self);
}

void ftl_swim_key_census(ftl_swim *s, ftl_key_census *out)
{
	ftl_swim_sync_key_fps(s);
	const ftl_member *self = ftl_swim_self(s);
	ftl_key_fps none = {0};
	ftl_key_census_take(out, &s->members, self->key_fps ? self->key_fps : &none);
}

/* printf at the end of what out already holds, cut to cap. */
static void appendf(char *out, size_t cap, const char *fmt, ...)
{
	size_t len = strnlen(out, cap);
	va_list ap;
	va_start(ap, fmt);
	if (len + 1 < cap)
		vsnprintf(out + len, cap - len, fmt, ap);
	va_end(ap);
}

/* Appends " (lacking: a, b, c and 4 more)", naming the live members that lack fp. */
static void append_lacking(ftl_swim *s, const uint8_t fp[FTL_KEY_FP_SIZE], char *out, size_t cap)
{
	const char *names[3];
	uint32_t n = ftl_key_census_lacking(&s->members, fp, names, 3);
	for (uint32_t i = 0; i < n && i < 3; i++)
		appendf(out, cap, "%s%s", i ? ", " : " (lacking: ", names[i]);
	if (n > 3)
		appendf(out, cap, " and %u more", n - 3);
	if (n > 0)
		appendf(out, cap, ")");
}

bool ftl_swim_key_op_cuts_off(ftl_swim *s, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE])
{
	char msg[512];
	size_t cap = sizeof(msg);
	if (op == FTL_KEY_INSTALL || ftl_keyring_is_insecure(s->keyring))
		return false;
	uint8_t fp[FTL_KEY_FP_SIZE];
	ftl_key_fingerprint(key, fp);
	ftl_key_census c;
	ftl_swim_key_census(s, &c);
	const ftl_key_census_row *row = ftl_key_census_find(&c, fp);
	uint32_t holders = row ? row->holders : 0;
	if (op == FTL_KEY_USE && holders < c.members) {
		snprintf(msg, cap, "that key is held by %u of %u live members", holders, c.members);
		append_lacking(s, fp, msg, cap);
		appendf(msg, cap, ": `ftlctl keys install KEY` again and `keys use` it once `ftlctl keys list` shows "
			"%u/%u", c.members, c.members);
		ftl_diag_set(FTL_ERR_INVALID, "%s", msg);
		return true;
	}
	if (op == FTL_KEY_REMOVE && row && row->local != 0 && row->primaries > 0) {
		snprintf(msg, cap, "that key is still the primary key of %u of %u live members: `keys use` the new "
			 "key and remove the old one once `ftlctl keys list` shows the new one primary on every member",
			 row->primaries, c.members);
		ftl_diag_set(FTL_ERR_INVALID, "%s", msg);
		return true;
	}
	return false;
}
