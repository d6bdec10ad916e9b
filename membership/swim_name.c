/* One name, one live process.
 *
 * A name is a member's identity in the job (ranks, ftlctl, the rendezvous), and a restart shows as a larger
 * generation, which replaces whatever entry holds the name (swim_rumor.c). That is right for a process that
 * comes back after its predecessor died or left, or on the same address (a pod restarted in place: no other
 * live process can hold that port), and wrong for a second process given a live member's name, by mistake
 * (two pods with one name, a second launcher without --name-prefix) or by an adversary with the key: it
 * would displace the live member, which then waits for a view it is never in, never told why.
 *
 * So an alive of a new life at another address, while the member holding the name is alive, is refused by
 * every member that holds it so, the live member itself included: our table is unchanged, the alive is not
 * gossiped on, it is counted (names_refused) and reported (FTL_EVENT_NAME_REFUSED), and the claimant is told
 * straight away (FTL_MSG_NAME_TAKEN to the address it advertised; once per probe interval per claimant, so
 * a flood of its alives costs a few datagrams). We also ask for proof of the holder's death (swim_proof.c):
 * if it is in fact gone and only not yet detected, its address refuses, it is dead at once, and the
 * claimant's next try is a plain restart. A holder that is suspect, dead or left is not protected: its
 * successor must be able to come back, elsewhere too.
 *
 * A claimant told so for its own life stops taking part: no probes, no gossip, nothing taken in; the caller
 * reads ftl_swim_name_taken (and FTL_EVENT_NAME_TAKEN) and stops with a sentence. A refusal for any other
 * life of ours (a replay, an earlier process of this name) changes nothing. memberlist's check of a
 * conflicting address is the model; ours also tells the newcomer, which is what stops it. */
#include "swim_internal.h"

#include <string.h>

/* Whether the claimant was told within the last probe interval; if not, remembers that it is now. */
static bool was_told_lately(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a)
{
	ftl_refusal *slot = NULL;
	for (int i = 0; i < FTL_SWIM_REFUSALS; i++) {
		ftl_refusal *r = &s->refusals[i];
		if (r->expires_us > now_us && r->generation == a->generation && strcmp(r->name, a->name) == 0)
			return true;
		if (!slot || r->expires_us < slot->expires_us)
			slot = r; /* a free slot, or else the one that expires first */
	}
	strcpy(slot->name, a->name);
	slot->generation = a->generation;
	slot->expires_us = now_us + s->cfg.probe_interval_us;
	return false;
}

static void tell_claimant(ftl_swim *s, const ftl_member *holder, const ftl_msg_alive *a)
{
	ftl_msg msg = {.type = FTL_MSG_NAME_TAKEN};
	ftl_msg_name_taken *t = &msg.u.name_taken;
	strcpy(t->name, a->name);
	t->generation = a->generation;
	strcpy(t->addr, holder->addr);
	strcpy(t->from, s->name);
	ftl_swim_send(s, a->name, a->addr, &msg, NULL);
}

bool ftl_swim_name_refuse(ftl_swim *s, int64_t now_us, const ftl_member *holder, const ftl_msg_alive *a)
{
	if (holder->state != FTL_MEMBER_ALIVE || a->generation <= holder->generation ||
	    strcmp(holder->addr, a->addr) == 0)
		return false;
	s->stats.names_refused++;
	if (was_told_lately(s, now_us, a))
		return true;
	ftl_swim_emit_name(s, now_us, FTL_EVENT_NAME_REFUSED, a->name, a->addr, a->generation, holder->addr, s->name);
	tell_claimant(s, holder, a);
	if (strcmp(holder->name, s->name) != 0)
		ftl_swim_proof_request(s, now_us, holder);
	return true;
}

void ftl_swim_on_name_taken(ftl_swim *s, int64_t now_us, const ftl_msg_name_taken *t)
{
	const ftl_member *self = ftl_swim_self(s);
	if (s->is_name_taken || strcmp(t->name, s->name) != 0 || t->generation != self->generation)
		return;
	s->is_name_taken = true;
	s->name_taken = *t;
	s->probe.is_active = false;
	ftl_swim_emit_name(s, now_us, FTL_EVENT_NAME_TAKEN, s->name, self->addr, self->generation, t->addr, t->from);
}

const ftl_msg_name_taken *ftl_swim_name_taken(const ftl_swim *s) { return s->is_name_taken ? &s->name_taken : NULL; }
