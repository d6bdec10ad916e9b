/* The member feed and the abort rules: what joins membership to the rendezvous after every input.
 *
 * The rendezvous sees the alive and suspect members that can train (their metadata carries a data address:
 * a suspect may yet refute, and dropping it would cost a view change per false suspicion) and the names of
 * those that cannot be on the far side of a partition: that left gracefully, or whose death was proven (a
 * refusal by its own address or a witness on its host, swim_proof.c; the proof travels with the dead
 * rumor). Neither counts against the quorum (docs/concepts/quorum.md argues why that is safe). The feed follows every membership
 * change that matters to it within one feed window (node_internal.h: a burst costs one feed per window).
 *
 * The abort rules say when the communicator in use is finished: when a member of the view in use is
 * declared dead or leaves (its peers would otherwise wait in a collective for a timeout), and when a new view
 * is taken (the old view's communicator may pair with nobody now). The membership event is checked against
 * the view before the feed runs, so the view it is checked against is the one the communicator was built
 * for. The event carries the rule's verdict, so the shell aborts in the same step that publishes the change. */
#include "node_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_meta.h"

int ftl_node_rank_in_view(const ftl_node *n, const char *name)
{
	if (!n->rdv)
		return -1;
	if (strcmp(name, ftl_swim_name(n->swim)) == 0)
		return ftl_rdv_rank(n->rdv); /* by generation too: a restarted worker is not its predecessor */
	const ftl_rdv_view *v = ftl_rdv_current(n->rdv);
	for (uint32_t i = 0; i < v->n; i++)
		if (strcmp(v->members[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void feed_rendezvous(ftl_node *n, int64_t now_us)
{
	const ftl_members *ms = ftl_swim_members(n->swim);
	ftl_rdv_member *alive = calloc(ms->len ? ms->len : 1, sizeof(*alive));
	const char **left = calloc(ms->len ? ms->len : 1, sizeof(*left));
	size_t n_alive = 0, n_left = 0;
	for (uint32_t i = 0; alive && left && i < ms->len; i++) {
		const ftl_member *m = &ms->arr[i];
		if (m->state == FTL_MEMBER_LEFT || (m->state == FTL_MEMBER_DEAD && m->death_proof)) {
			left[n_left++] = m->name;
			continue;
		}
		if (m->state != FTL_MEMBER_ALIVE && m->state != FTL_MEMBER_SUSPECT)
			continue;
		const uint8_t *user;
		size_t user_len;
		ftl_rdv_member *r = &alive[n_alive];
		ftl_meta_unpack(m->meta, m->meta_len, r, &user, &user_len);
		if (!r->data_addr[0])
			continue; /* not a training worker */
		snprintf(r->name, sizeof(r->name), "%s", m->name);
		r->generation = m->generation;
		n_alive++;
	}
	if (alive && left)
		ftl_rdv_set_members(n->rdv, now_us, alive, n_alive, left, n_left);
	free(alive);
	free(left);
}

/* A dead member of the view ends the communicator in use at once. One that left does not: it left after its
 * last call, and its sockets close after that, so a call still in flight elsewhere either has all it needs
 * from it already and completes (the last collective of a job whose faster workers are gone) or fails by
 * itself with the peer lost; the view committed without it ends the communicator then. */
static bool is_abort_at_once(ftl_swim_event_type t) { return t == FTL_EVENT_DEAD; }

static uint32_t count_alive(const ftl_swim *s)
{
	return ftl_swim_count(s, FTL_MEMBER_ALIVE) + ftl_swim_count(s, FTL_MEMBER_SUSPECT);
}

/* Whether an event can change what the rendezvous is fed. A suspect still counts as alive, so a suspicion
 * and its refutation change nothing (after a partition heals they come by the tens of thousands); an alive
 * back from the dead, or the reap of a member that left, shows in the counts. */
static bool changes_feed(const ftl_node *n, ftl_swim_event_type t)
{
	if (t == FTL_EVENT_SUSPECT)
		return false;
	if (t == FTL_EVENT_ALIVE || t == FTL_EVENT_REAP)
		return count_alive(n->swim) != n->fed_alive || ftl_swim_count(n->swim, FTL_MEMBER_LEFT) != n->fed_left;
	return true;
}

/* Feeds now when the last feed is a window old, else once the window ends (ftl_node_next_deadline). */
static void feed_when_due(ftl_node *n, int64_t now_us, bool is_changed)
{
	if (is_changed && n->feed_due_us == INT64_MAX) {
		int64_t windows = 1 + ftl_swim_members(n->swim)->len / FTL_NODE_FEED_MEMBERS_PER_WINDOW;
		n->feed_due_us = n->is_fed ? n->fed_at_us + windows * FTL_NODE_FEED_WINDOW_US : now_us;
	}
	if (n->feed_due_us > now_us)
		return;
	feed_rendezvous(n, now_us);
	n->is_fed = true;
	n->fed_at_us = now_us;
	n->fed_alive = count_alive(n->swim);
	n->fed_left = ftl_swim_count(n->swim, FTL_MEMBER_LEFT);
	n->fed_proven_later = ftl_swim_get_stats(n->swim)->deaths_proven_later;
	n->feed_due_us = INT64_MAX;
}

void ftl_node_settle(ftl_node *n, int64_t now_us)
{
	ftl_swim_event sev;
	bool is_changed = false;
	while (ftl_swim_next_event(n->swim, &sev)) {
		ftl_node_event ev = {.kind = FTL_NODE_EVENT_MEMBER, .member = sev};
		if (is_abort_at_once(sev.type) && ftl_node_rank_in_view(n, sev.name) >= 0) {
			ev.is_abort = true;
			snprintf(ev.why, sizeof(ev.why), "member %s of the view is gone", sev.name);
		}
		ftl_node_push_event(n, &ev);
		is_changed |= changes_feed(n, sev.type);
	}
	if (n->rdv) {
		is_changed |= ftl_swim_get_stats(n->swim)->deaths_proven_later != n->fed_proven_later;
		feed_when_due(n, now_us, is_changed || !n->is_fed);
		const ftl_rdv_view *v;
		if (ftl_rdv_take_new_view(n->rdv, &v)) {
			ftl_node_event ev = {.kind = FTL_NODE_EVENT_VIEW, .is_abort = true};
			snprintf(ev.why, sizeof(ev.why), "a new view was committed");
			ftl_node_push_event(n, &ev);
		}
	}
	if (!n->is_left_told && ftl_swim_leave_done(n->swim)) {
		n->is_left_told = true;
		ftl_node_push_event(n, &(ftl_node_event){.kind = FTL_NODE_EVENT_LEFT});
	}
}
