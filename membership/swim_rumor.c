/* What each rumor does to the member table (memberlist's aliveNode/suspectNode/deadNode are the model).
 *
 * Ordering: a rumor about another life (generation) than the one we hold is ignored unless it is an
 * alive with a larger generation, which replaces the entry whatever its state (a restart), unless the entry
 * is alive at another address (a second process given its name: refused, swim_name.c). Within one
 * life, a rumor with a smaller incarnation is stale; alive needs a strictly larger incarnation to
 * override suspect/dead/left, while suspect/dead/left apply at an equal one. A rumor about ourselves
 * that says we are not alive is refuted by raising our incarnation above it. Whatever changed our
 * table is queued for gossip, so news spreads from every node that accepts it. */
#include "swim_internal.h"

#include <stdlib.h>
#include <string.h>

void ftl_swim_fill_rumor(ftl_msg *msg, ftl_msg_type type, const ftl_member *m, const char *from)
{
	memset(msg, 0, sizeof(*msg));
	msg->type = type;
	strcpy(msg->u.rumor.name, m->name);
	msg->u.rumor.generation = m->generation;
	msg->u.rumor.incarnation = m->incarnation;
	ftl_copy_str(msg->u.rumor.from, from, FTL_NAME_MAX);
	if (type == FTL_MSG_DEAD)
		msg->u.rumor.proof = m->death_proof;
}

static void queue_msg(ftl_swim *s, const char *about, const ftl_msg *msg)
{
	uint8_t buf[FTL_WIRE_MSG_MAX];
	size_t len;
	if (ftl_wire_encode_msg(msg, buf, sizeof(buf), &len) == 0)
		ftl_bcast_push(&s->bcast, about, buf, len);
}

void ftl_swim_broadcast_rumor(ftl_swim *s, ftl_msg_type type, const ftl_member *m, const char *from)
{
	ftl_msg msg;
	ftl_swim_fill_rumor(&msg, type, m, from);
	queue_msg(s, m->name, &msg);
}

void ftl_swim_broadcast_alive(ftl_swim *s, const ftl_member *m)
{
	ftl_msg msg;
	memset(&msg, 0, sizeof(msg));
	msg.type = FTL_MSG_ALIVE;
	strcpy(msg.u.alive.name, m->name);
	strcpy(msg.u.alive.addr, m->addr);
	msg.u.alive.generation = m->generation;
	msg.u.alive.incarnation = m->incarnation;
	msg.u.alive.meta_len = m->meta_len;
	if (m->meta_len)
		memcpy(msg.u.alive.meta, m->meta, m->meta_len);
	if (m->key_fps)
		msg.u.alive.key_fps = *m->key_fps;
	queue_msg(s, m->name, &msg);
}

/* Someone says we are not alive (or holds a conflicting alive): outbid them. */
static void refute(ftl_swim *s, uint64_t seen_incarnation)
{
	if (s->is_leaving)
		return;
	ftl_member *self = ftl_swim_self(s);
	if (seen_incarnation >= self->incarnation)
		self->incarnation = seen_incarnation + 1;
	else
		self->incarnation++;
	s->stats.refutations++;
	ftl_awareness_apply(&s->health, 1); /* being suspected hints that we are the slow one */
	ftl_swim_broadcast_alive(s, self);
}

static bool same_meta(const ftl_member *m, const ftl_msg_alive *a)
{
	return m->meta_len == a->meta_len && (a->meta_len == 0 || memcmp(m->meta, a->meta, a->meta_len) == 0);
}

static ftl_err take_alive(ftl_member *m, const ftl_msg_alive *a)
{
	ftl_err err = ftl_members_set_addr(m, a->addr);
	if (!err)
		err = ftl_members_set_meta(m, a->meta, a->meta_len);
	if (!err)
		err = ftl_members_set_key_fps(m, &a->key_fps);
	if (err)
		return err;
	m->generation = a->generation;
	m->incarnation = a->incarnation;
	m->death_proof = 0; /* alive: whatever proof there was is about a life that is over */
	return FTL_OK;
}

static void alive_about_self(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a)
{
	ftl_member *self = ftl_swim_self(s);
	if (ftl_swim_name_refuse(s, now_us, self, a))
		return; /* a second process given our name */
	if (a->generation != self->generation || a->incarnation < self->incarnation)
		return; /* an older life of ours, or old news */
	if (a->incarnation > self->incarnation || strcmp(a->addr, self->addr) != 0)
		refute(s, a->incarnation);
}

void ftl_swim_on_alive(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a)
{
	if (s->is_addr_valid && !s->is_addr_valid(a->addr)) {
		s->stats.dropped[FTL_DROP_BAD_ADDR]++;
		return;
	}
	if (strcmp(a->name, s->name) == 0) {
		alive_about_self(s, now_us, a);
		return;
	}
	ftl_member *m = ftl_members_find(&s->members, a->name);
	if (!m && ftl_tombstones_buried(&s->tombstones, a->name, a->generation)) {
		s->stats.alive_of_reaped++; /* a replay, or back from a long partition: ask it */
		ftl_swim_revive_ask(s, now_us, a);
		return;
	}
	if (!m) {
		m = ftl_swim_add_member(s, a->name, a->addr, now_us);
		if (!m || take_alive(m, a) != 0)
			return;
		ftl_swim_emit(s, now_us, FTL_EVENT_JOIN, m);
		ftl_swim_broadcast_alive(s, m);
		return;
	}
	if (a->generation < m->generation)
		return;
	if (ftl_swim_name_refuse(s, now_us, m, a))
		return; /* a second process given a live member's name: m stays */
	if (a->generation > m->generation) { /* a restart: the new life replaces the old whatever its state */
		if (take_alive(m, a) != 0)
			return;
		ftl_swim_set_state_quiet(s, m, FTL_MEMBER_ALIVE, now_us);
		m->state_since_us = now_us;
		m->last_heard_us = now_us;
		ftl_swim_emit(s, now_us, FTL_EVENT_JOIN, m);
		ftl_swim_broadcast_alive(s, m);
		return;
	}
	if (a->incarnation < m->incarnation)
		return;
	if (a->incarnation == m->incarnation) {
		/* Old news, perhaps first relayed by an older agent that drops the key fingerprints it does not
		 * know: take the fingerprints we lack, nothing else. */
		if (!m->key_fps && a->key_fps.count > 0)
			ftl_members_set_key_fps(m, &a->key_fps);
		return;
	}
	bool is_changed = strcmp(m->addr, a->addr) != 0 || !same_meta(m, a);
	if (take_alive(m, a) != 0)
		return;
	if (m->state != FTL_MEMBER_ALIVE)
		ftl_swim_set_state(s, m, FTL_MEMBER_ALIVE, now_us);
	else if (is_changed)
		ftl_swim_emit(s, now_us, FTL_EVENT_UPDATE, m);
	ftl_swim_broadcast_alive(s, m);
}

ftl_err ftl_swim_add_known(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a)
{
	if (strcmp(a->name, s->name) == 0 || ftl_members_find(&s->members, a->name))
		return ftl_diag_set(FTL_ERR_INVALID, "member %s is already known", a->name);
	ftl_member *m = ftl_swim_add_member(s, a->name, a->addr, now_us);
	if (!m)
		return ftl_diag_code(); /* the reason ftl_swim_add_member left */
	return take_alive(m, a);
}

/* The member this rumor is about, or NULL when the rumor is stale or about another life.
 * A stale accusation of ourselves means its sender missed our refutation: announce ourselves again
 * (once per queue drain), so a lost refutation does not turn into a false death. */
static ftl_member *rumor_target(ftl_swim *s, const ftl_msg_rumor *r)
{
	ftl_member *m = ftl_members_find(&s->members, r->name);
	if (!m || r->generation != m->generation)
		return NULL;
	if (r->incarnation < m->incarnation) {
		if (strcmp(r->name, s->name) == 0 && !s->is_leaving && !ftl_bcast_has(&s->bcast, s->name))
			ftl_swim_broadcast_alive(s, m);
		return NULL;
	}
	return m;
}

static int64_t next_due(const ftl_suspicion *sp);

/* Writes down when m's timer next needs us, after it started or was confirmed. O(suspects). */
static void timer_changed(ftl_swim *s, const ftl_member *m)
{
	for (uint32_t i = s->n_suspects; i-- > 0;) {
		if (strcmp(s->suspects[i], m->name) == 0) {
			s->suspect_due_us[i] = next_due(m->suspicion);
			return;
		}
	}
}

static void start_suspicion(ftl_swim *s, ftl_member *m, int64_t now_us, const char *accuser)
{
	int n = ftl_swim_live_count(s);
	m->suspicion = malloc(sizeof(*m->suspicion));
	if (!m->suspicion)
		return; /* resolved by refutation or a dead rumor from others */
	ftl_suspicion_start(m->suspicion, now_us, ftl_swim_suspicion_min_us(&s->cfg, n),
			    ftl_swim_suspicion_max_us(&s->cfg, n), ftl_swim_suspicion_confirmations(&s->cfg, n),
			    accuser);
	timer_changed(s, m);
}

void ftl_swim_on_suspect(ftl_swim *s, int64_t now_us, const ftl_msg_rumor *r)
{
	ftl_member *m = rumor_target(s, r);
	if (!m)
		return;
	if (m == ftl_swim_self(s)) {
		refute(s, r->incarnation);
		return;
	}
	if (m->state == FTL_MEMBER_SUSPECT) {
		/* An independent confirmation shortens the timeout (Lifeguard); spread it so others count it. */
		if (m->suspicion && ftl_suspicion_confirm(m->suspicion, r->from)) {
			timer_changed(s, m);
			ftl_swim_broadcast_rumor(s, FTL_MSG_SUSPECT, m, r->from);
		}
		return;
	}
	if (m->state != FTL_MEMBER_ALIVE)
		return;
	m->incarnation = r->incarnation;
	ftl_swim_set_state(s, m, FTL_MEMBER_SUSPECT, now_us);
	start_suspicion(s, m, now_us, r->from);
	ftl_swim_broadcast_rumor(s, FTL_MSG_SUSPECT, m, r->from);
	if (strcmp(r->from, s->name) != 0)
		ftl_swim_confirm_soon(s, now_us, m); /* another's suspicion: see for ourselves now */
}

/* The proof a death rests on: ours (a refusal, a witness), or the one the rumor carries; 0 for none. */
static uint8_t proof_of(ftl_death_reason reason, const ftl_msg_rumor *r)
{
	if (reason == FTL_DEATH_REFUSED || reason == FTL_DEATH_WITNESSED)
		return (uint8_t)reason;
	if (reason == FTL_DEATH_GOSSIP && (r->proof == FTL_DEATH_REFUSED || r->proof == FTL_DEATH_WITNESSED))
		return (uint8_t)r->proof;
	return 0;
}

static void declare(ftl_swim *s, int64_t now_us, const ftl_msg_rumor *r, ftl_member_state state,
		    ftl_death_reason reason)
{
	ftl_member *m = rumor_target(s, r);
	uint8_t proof = state == FTL_MEMBER_DEAD ? proof_of(reason, r) : 0;
	if (m && m->state == FTL_MEMBER_DEAD && state == FTL_MEMBER_DEAD && proof && !m->death_proof) {
		m->death_proof = proof; /* dead already (a suspicion ran out, or news without the proof): now proven */
		s->stats.deaths_proven_later++;
		ftl_swim_broadcast_rumor(s, FTL_MSG_DEAD, m, r->from);
		return;
	}
	if (!m || m->state == state || (state == FTL_MEMBER_DEAD && m->state == FTL_MEMBER_LEFT))
		return;
	if (m == ftl_swim_self(s)) {
		refute(s, r->incarnation);
		return;
	}
	m->incarnation = r->incarnation;
	if (state == FTL_MEMBER_DEAD) {
		m->death_proof = proof; /* before the event: the member feed that follows reads it */
		ftl_swim_set_state_quiet(s, m, state, now_us);
		ftl_swim_emit_death(s, now_us, m, reason, r->from);
	} else {
		ftl_swim_set_state(s, m, state, now_us);
	}
	ftl_swim_broadcast_rumor(s, state == FTL_MEMBER_DEAD ? FTL_MSG_DEAD : FTL_MSG_LEFT, m, r->from);
}

void ftl_swim_on_dead(ftl_swim *s, int64_t now_us, const ftl_msg_rumor *r)
{
	declare(s, now_us, r, FTL_MEMBER_DEAD, FTL_DEATH_GOSSIP);
}

void ftl_swim_on_left(ftl_swim *s, int64_t now_us, const ftl_msg_rumor *r)
{
	declare(s, now_us, r, FTL_MEMBER_LEFT, FTL_DEATH_NONE);
}

void ftl_swim_declare_dead(ftl_swim *s, int64_t now_us, ftl_member *m, ftl_death_reason reason)
{
	ftl_msg msg;
	ftl_swim_fill_rumor(&msg, FTL_MSG_DEAD, m, s->name);
	declare(s, now_us, &msg.u.rumor, FTL_MEMBER_DEAD, reason);
}

/* Six times, evenly through our own timer, we ping the suspect carrying the suspicion (the buddy rule
 * once more). If it refuted and we missed every copy of the refutation, it answers the stale accusation
 * by re-announcing itself (rumors are handled before the ping), and that rides back on its ack: a lost
 * refutation does not become a false death even when push-pull is rare (large clusters). With 10% loss
 * one check fails 19% of the time, six 5e-5 (with three, lan at 64 nodes still lost one node in six
 * simulated 10-minute runs). Six pings per suspicion per observer at most; death is never declared
 * sooner. */
#define SUSPICION_CHECKS 6

static int64_t check_time(const ftl_suspicion *sp)
{
	int64_t span = ftl_suspicion_deadline(sp) - sp->start_us;
	return sp->start_us + span * (sp->checks + 1) / (SUSPICION_CHECKS + 1);
}

/* A check until the last one, then the deadline. */
static int64_t next_due(const ftl_suspicion *sp)
{
	return sp->checks < SUSPICION_CHECKS ? check_time(sp) : ftl_suspicion_deadline(sp);
}

void ftl_swim_expire_suspicions(ftl_swim *s, int64_t now_us)
{
	for (uint32_t i = s->n_suspects; i-- > 0;) {
		if (s->suspect_due_us[i] > now_us)
			continue; /* neither its next check nor its deadline */
		ftl_member *m = ftl_members_find(&s->members, s->suspects[i]);
		if (m && m->suspicion && m->suspicion->checks < SUSPICION_CHECKS && check_time(m->suspicion) <= now_us) {
			m->suspicion->checks++;
			s->suspect_due_us[i] = next_due(m->suspicion);
			ftl_swim_check_suspect(s, m);
		}
		if (!m || !m->suspicion || ftl_suspicion_deadline(m->suspicion) > now_us)
			continue;
		ftl_swim_declare_dead(s, now_us, m, FTL_DEATH_SUSPICION);
		s->next_gossip_us = now_us; /* the view waits for this news: no gossip tick's wait */
	}
}

int64_t ftl_swim_next_suspicion_deadline(const ftl_swim *s)
{
	int64_t t = INT64_MAX;
	for (uint32_t i = 0; i < s->n_suspects; i++)
		if (s->suspect_due_us[i] < t)
			t = s->suspect_due_us[i];
	return t;
}
