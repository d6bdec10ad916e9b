/* Every change of a member's state goes through ftl_swim_set_state, which keeps the per-state counts
 * (N for the formulas without a scan), the list of suspects whose timers run, and the events; with the
 * small helpers every satellite shares (ourselves, N, emitting an event), this is the floor of swim_*.c. */
#include "swim_internal.h"

#include <stdlib.h>
#include <string.h>

ftl_member *ftl_swim_self(ftl_swim *s) { return ftl_members_find(&s->members, s->name); }

int ftl_swim_live_count(const ftl_swim *s)
{
	return (int)(s->count[FTL_MEMBER_ALIVE] + s->count[FTL_MEMBER_SUSPECT]);
}

/* A zeroed event of that type, queued; NULL (counted) when the caller has not drained the queue. */
static ftl_swim_event *queue_event(ftl_swim *s, int64_t now_us, ftl_swim_event_type type)
{
	ftl_swim_event *ev = ftl_fifo_len(&s->events) < FTL_SWIM_MAX_EVENTS ? ftl_fifo_push(&s->events) : NULL;
	if (!ev) {
		s->stats.events_lost++;
		return NULL;
	}
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->at_us = now_us;
	return ev;
}

/* Changes of other members only: ours are not news to the caller. */
static ftl_swim_event *push_event(ftl_swim *s, int64_t now_us, ftl_swim_event_type type, const ftl_member *m)
{
	if (strcmp(m->name, s->name) == 0)
		return NULL;
	ftl_swim_event *ev = queue_event(s, now_us, type);
	if (ev) {
		strcpy(ev->name, m->name);
		strcpy(ev->addr, m->addr);
		ev->generation = m->generation;
		ev->incarnation = m->incarnation;
	}
	return ev;
}

void ftl_swim_emit_name(ftl_swim *s, int64_t now_us, ftl_swim_event_type type, const char *name, const char *addr,
			uint64_t generation, const char *holder_addr, const char *from)
{
	ftl_swim_event *ev = queue_event(s, now_us, type);
	if (!ev)
		return;
	strcpy(ev->name, name);
	strcpy(ev->addr, addr);
	ev->generation = generation;
	strcpy(ev->holder_addr, holder_addr);
	strcpy(ev->from, from);
}

void ftl_swim_emit(ftl_swim *s, int64_t now_us, ftl_swim_event_type type, const ftl_member *m)
{
	push_event(s, now_us, type, m);
}

void ftl_swim_emit_death(ftl_swim *s, int64_t now_us, const ftl_member *m, ftl_death_reason reason, const char *from)
{
	s->stats.deaths_declared[reason]++;
	ftl_swim_event *ev = push_event(s, now_us, FTL_EVENT_DEAD, m);
	if (ev) {
		ev->reason = reason;
		ftl_copy_str(ev->from, from, FTL_NAME_MAX);
	}
}

static const ftl_swim_event_type event_of_state[FTL_MEMBER_STATE_MAX] = {
	[FTL_MEMBER_ALIVE] = FTL_EVENT_ALIVE,
	[FTL_MEMBER_SUSPECT] = FTL_EVENT_SUSPECT,
	[FTL_MEMBER_DEAD] = FTL_EVENT_DEAD,
	[FTL_MEMBER_LEFT] = FTL_EVENT_LEFT,
};

static void add_suspect(ftl_swim *s, const char *name)
{
	if (s->n_suspects == s->cap_suspects) {
		uint32_t cap = s->cap_suspects ? s->cap_suspects * 2 : 8;
		char(*arr)[FTL_NAME_MAX] = realloc(s->suspects, cap * sizeof(*arr));
		if (!arr)
			return; /* the member stays suspect; refutation or a dead rumor still resolves it */
		s->suspects = arr;
		int64_t *due = realloc(s->suspect_due_us, cap * sizeof(*due));
		if (!due)
			return;
		s->suspect_due_us = due;
		s->cap_suspects = cap;
	}
	strcpy(s->suspects[s->n_suspects], name);
	s->suspect_due_us[s->n_suspects++] = INT64_MAX; /* its timer starts next (swim_rumor.c) */
}

static void remove_suspect(ftl_swim *s, const char *name)
{
	for (uint32_t i = 0; i < s->n_suspects; i++) {
		if (strcmp(s->suspects[i], name) == 0) {
			memcpy(s->suspects[i], s->suspects[--s->n_suspects], FTL_NAME_MAX);
			s->suspect_due_us[i] = s->suspect_due_us[s->n_suspects];
			return;
		}
	}
}

static void change_state(ftl_swim *s, ftl_member *m, ftl_member_state state, int64_t now_us, bool is_loud)
{
	ftl_member_state old = m->state;
	if (old == FTL_MEMBER_SUSPECT && state != FTL_MEMBER_SUSPECT) {
		s->stats.suspicions_refuted += state == FTL_MEMBER_ALIVE;
		free(m->suspicion);
		m->suspicion = NULL;
		remove_suspect(s, m->name);
	}
	if (state == FTL_MEMBER_SUSPECT && old != FTL_MEMBER_SUSPECT) {
		add_suspect(s, m->name);
		s->stats.suspicions++;
	}
	s->count[old]--;
	s->count[state]++;
	m->state = state;
	if (old != state) {
		m->state_since_us = now_us;
		if (is_loud)
			ftl_swim_emit(s, now_us, event_of_state[state], m);
	}
}

void ftl_swim_set_state(ftl_swim *s, ftl_member *m, ftl_member_state state, int64_t now_us)
{
	change_state(s, m, state, now_us, true);
}

void ftl_swim_set_state_quiet(ftl_swim *s, ftl_member *m, ftl_member_state state, int64_t now_us)
{
	change_state(s, m, state, now_us, false);
}

ftl_member *ftl_swim_add_member(ftl_swim *s, const char *name, const char *addr, int64_t now_us)
{
	if (s->members.len >= (uint32_t)s->cfg.max_members) {
		s->stats.dropped[FTL_DROP_TABLE_FULL]++;
		ftl_diag_set(FTL_ERR_INVALID, "member %s refused: the member table is full (max_members %d, "
			     "FTL_MAX_MEMBERS raises it)", name, s->cfg.max_members);
		return NULL;
	}
	ftl_member *m = ftl_members_add(&s->members, &s->rng, name, addr, FTL_MEMBER_ALIVE, now_us);
	if (m)
		s->count[FTL_MEMBER_ALIVE]++;
	return m;
}
