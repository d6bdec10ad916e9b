/* Failure detection: the probe of one member per period (ping, then ping-req through k others, then
 * suspicion; a missed direct ack also asks for a proof-of-death check, swim_proof.c), the answers we give to pings and ping-reqs, and Lifeguard's health bookkeeping:
 * a direct ack improves our health score, each nack we expected but did not get worsens it (the
 * intermediaries were alive, so missing nacks point at us), and with no one to nack any failure does.
 *
 * Quick probes. A probe of a member that is already suspect can only confirm the suspicion, and one out of
 * turn has a reason already (the comm saw the member's connection break, or a collective waited on it in
 * silence), so neither waits a probe timeout before asking for help: the ping and the ping-reqs go out
 * together and it ends after two probe timeouts (80 ms on train). A quick probe that fails raises a
 * suspicion like any other, which ends at its minimum only once k others confirm it; alone it waits the
 * maximum. The suspicions and confirmations we raise go out at once, not at the next gossip tick.
 *
 * Confirming probes. The members that hear a suspicion they did not raise probe the suspect at once
 * (ftl_swim_confirm_soon) instead of in their turn, which may be seconds away in a large cluster: that is what brings the k confirmations of a vanished host within a probe period, so
 * its suspicion ends at its minimum. Only about 2k of the n members do it (each with probability
 * 2k / (n - 2)), so a suspicion costs O(k) extra probes whatever n, and a member wrongly suspected is
 * probed by a few who reach it rather than by everyone. */
#include "swim_internal.h"

#include <string.h>

static bool is_probe_target(const ftl_swim *s, const ftl_member *m, int64_t now_us)
{
	return strcmp(m->name, s->name) != 0 && ftl_swim_is_live(s, m, now_us);
}

static const ftl_member *pick_target(ftl_swim *s, int64_t now_us)
{
	if (s->hint[0]) {
		const ftl_member *m = ftl_members_find(&s->members, s->hint);
		s->hint[0] = '\0';
		if (m && is_probe_target(s, m, now_us))
			return m;
	}
	bool is_reshuffled = false;
	for (uint32_t tries = 0; tries <= s->members.len + 1; tries++) {
		const ftl_member *m = ftl_members_next_in_round(&s->members, &s->rng);
		if (!m) {
			if (is_reshuffled)
				return NULL;
			is_reshuffled = true;
			continue;
		}
		if (is_probe_target(s, m, now_us))
			return m;
	}
	return NULL;
}

static void touch(ftl_swim *s, const char *name, int64_t now_us)
{
	ftl_member *m = ftl_members_find(&s->members, name);
	if (m)
		m->last_heard_us = now_us;
}

static void send_indirect(ftl_swim *s, int64_t now_us);

/* A quick probe (out of turn, or of a suspect: see the top) asks for help at once and ends after two probe
 * timeouts; a probe in turn waits a probe timeout for the direct ack and ends after a probe period. */
static void probe_start(ftl_swim *s, int64_t now_us, const char *target, bool is_out_of_turn)
{
	const ftl_member *m = ftl_members_find(&s->members, target);
	if (!m)
		return;
	ftl_probe *p = &s->probe;
	memset(p, 0, sizeof(*p));
	p->is_active = true;
	strcpy(p->target, m->name);
	p->seq = ++s->seq;
	p->started_us = now_us;
	bool is_quick = is_out_of_turn || m->state == FTL_MEMBER_SUSPECT;
	int64_t span = s->cfg.probe_interval_us;
	if (is_quick && 2 * s->cfg.probe_timeout_us < span)
		span = 2 * s->cfg.probe_timeout_us;
	p->direct_deadline_us = now_us + ftl_awareness_scale(&s->health, s->cfg.probe_timeout_us);
	p->end_us = now_us + ftl_awareness_scale(&s->health, span);
	s->next_probe_us = p->end_us;
	s->stats.probes++;

	ftl_msg ping = {.type = FTL_MSG_PING};
	ping.u.ping.seq = p->seq;
	strcpy(ping.u.ping.target, m->name);
	strcpy(ping.u.ping.source, s->name);
	strcpy(ping.u.ping.source_addr, s->addr);
	ftl_msg buddy;
	bool is_buddy = m->state == FTL_MEMBER_SUSPECT; /* Lifeguard's buddy rule: tell the suspect at once */
	if (is_buddy)
		ftl_swim_fill_rumor(&buddy, FTL_MSG_SUSPECT, m, s->name);
	ftl_swim_send(s, m->name, m->addr, &ping, is_buddy ? &buddy : NULL);
	if (is_quick)
		send_indirect(s, now_us);
}

void ftl_swim_probe_soon(ftl_swim *s, int64_t now_us, const ftl_member *m)
{
	if (s->is_leaving || !is_probe_target(s, m, now_us))
		return;
	if (!s->probe.is_active)
		probe_start(s, now_us, m->name, true);
	else if (strcmp(s->probe.target, m->name) != 0)
		strcpy(s->hint, m->name); /* probed as soon as the current probe ends */
}

void ftl_swim_confirm_soon(ftl_swim *s, int64_t now_us, const ftl_member *m)
{
	int n = ftl_swim_live_count(s);
	int k = ftl_swim_suspicion_confirmations(&s->cfg, n);
	if (k < 1 || n < 3)
		return; /* no confirmation can shorten it, or nobody but the accuser and us */
	double share = (double)(2 * k) / (double)(n - 2);
	if (share >= 1.0 || ftl_rng_unit(&s->rng) < share)
		ftl_swim_probe_soon(s, now_us, m);
}

static void send_indirect(ftl_swim *s, int64_t now_us)
{
	ftl_probe *p = &s->probe;
	p->is_indirect_sent = true;
	const ftl_member *target = ftl_members_find(&s->members, p->target);
	if (!target)
		return;
	ftl_swim_proof_request(s, now_us, target);
	if (s->cfg.indirect_checks == 0)
		return;
	const ftl_member *helpers[16];
	int n = ftl_swim_random_members(s, now_us, s->cfg.indirect_checks, target->name, ftl_swim_is_live, helpers);
	ftl_msg req = {.type = FTL_MSG_PING_REQ};
	req.u.ping_req.seq = p->seq;
	strcpy(req.u.ping_req.target, target->name);
	strcpy(req.u.ping_req.target_addr, target->addr);
	strcpy(req.u.ping_req.source, s->name);
	strcpy(req.u.ping_req.source_addr, s->addr);
	req.u.ping_req.want_nack = true;
	for (int i = 0; i < n; i++)
		ftl_swim_send(s, helpers[i]->name, helpers[i]->addr, &req, NULL);
	p->expected_nacks = n;
}

/* The probe is over: start the hinted one at once if there is one. */
static void probe_done(ftl_swim *s, int64_t now_us)
{
	s->probe.is_active = false;
	if (s->hint[0] && !s->is_leaving) {
		const ftl_member *m = pick_target(s, now_us);
		if (m)
			probe_start(s, now_us, m->name, true);
	}
}

static void probe_failed(ftl_swim *s, int64_t now_us)
{
	ftl_probe *p = &s->probe;
	s->stats.probes_failed++;
	ftl_awareness_apply(&s->health, p->expected_nacks > 0 ? p->expected_nacks - p->nacks : 1);
	ftl_member *m = ftl_members_find(&s->members, p->target);
	if (m && ftl_swim_is_live(s, m, now_us)) {
		ftl_msg msg;
		ftl_swim_fill_rumor(&msg, FTL_MSG_SUSPECT, m, s->name);
		ftl_swim_on_suspect(s, now_us, &msg.u.rumor);
		/* Tell the suspect straight away too: if it is only slow or behind a lossy link, it refutes now
		 * instead of when gossip happens to reach it, which is what keeps loss from killing nodes. */
		if ((m = ftl_members_find(&s->members, p->target)) != NULL)
			ftl_swim_send(s, m->name, m->addr, &msg, NULL);
		s->next_gossip_us = now_us; /* and the others now: they confirm it (or not) a round sooner */
	}
	probe_done(s, now_us);
}

void ftl_swim_probe_tick(ftl_swim *s, int64_t now_us)
{
	if (s->is_leaving)
		return;
	ftl_probe *p = &s->probe;
	if (p->is_active && !p->is_indirect_sent && now_us >= p->direct_deadline_us)
		send_indirect(s, now_us);
	if (p->is_active && now_us >= p->end_us)
		probe_failed(s, now_us);
	if (!p->is_active && now_us >= s->next_probe_us) {
		const ftl_member *m = pick_target(s, now_us);
		if (m)
			probe_start(s, now_us, m->name, false);
		else
			s->next_probe_us = now_us + s->cfg.probe_interval_us;
	}
}

int64_t ftl_swim_probe_deadline(const ftl_swim *s)
{
	const ftl_probe *p = &s->probe;
	if (s->is_leaving)
		return INT64_MAX;
	if (!p->is_active)
		return s->next_probe_us;
	return p->is_indirect_sent ? p->end_us : p->direct_deadline_us;
}

void ftl_swim_on_ping(ftl_swim *s, int64_t now_us, const ftl_msg_ping *ping)
{
	if (strcmp(ping->target, s->name) != 0) {
		s->stats.dropped[FTL_DROP_WRONG_TARGET]++;
		return;
	}
	touch(s, ping->source, now_us);
	ftl_msg ack = {.type = FTL_MSG_ACK};
	ack.u.ack.seq = ping->seq;
	strcpy(ack.u.ack.source, s->name);
	/* A member we hold dead is pinging us: tell it, so it refutes now rather than at the next push-pull. */
	const ftl_member *m = ftl_members_find(&s->members, ping->source);
	ftl_msg news;
	bool is_news = m && m->state == FTL_MEMBER_DEAD;
	if (is_news)
		ftl_swim_fill_rumor(&news, FTL_MSG_DEAD, m, s->name);
	ftl_swim_send(s, ping->source, ping->source_addr, &ack, is_news ? &news : NULL);
}

void ftl_swim_on_ping_req(ftl_swim *s, int64_t now_us, const ftl_msg_ping_req *req)
{
	touch(s, req->source, now_us);
	if (s->n_relays == FTL_SWIM_MAX_RELAYS || strcmp(req->target, s->name) == 0)
		return;
	ftl_relay *r = &s->relays[s->n_relays++];
	memset(r, 0, sizeof(*r));
	r->our_seq = ++s->seq;
	r->their_seq = req->seq;
	strcpy(r->requester_addr, req->source_addr);
	r->want_nack = req->want_nack;
	r->nack_at_us = now_us + s->cfg.probe_timeout_us;
	r->expires_us = now_us + s->cfg.probe_interval_us;
	ftl_msg ping = {.type = FTL_MSG_PING};
	ping.u.ping.seq = r->our_seq;
	strcpy(ping.u.ping.target, req->target);
	strcpy(ping.u.ping.source, s->name);
	strcpy(ping.u.ping.source_addr, s->addr);
	ftl_swim_send(s, req->target, req->target_addr, &ping, NULL);
}

static void remove_relay(ftl_swim *s, int i) { s->relays[i] = s->relays[--s->n_relays]; }

void ftl_swim_check_suspect(ftl_swim *s, const ftl_member *m)
{
	ftl_msg ping = {.type = FTL_MSG_PING};
	ping.u.ping.seq = ++s->seq;
	strcpy(ping.u.ping.target, m->name);
	strcpy(ping.u.ping.source, s->name);
	strcpy(ping.u.ping.source_addr, s->addr);
	ftl_msg buddy;
	ftl_swim_fill_rumor(&buddy, FTL_MSG_SUSPECT, m, s->name);
	s->check_seqs[s->n_check_seqs++ % FTL_SWIM_CHECK_SEQS] = ping.u.ping.seq;
	ftl_swim_send(s, m->name, m->addr, &ping, &buddy);
}

static bool is_check_seq(const ftl_swim *s, uint32_t seq)
{
	for (int i = 0; i < FTL_SWIM_CHECK_SEQS && i < s->n_check_seqs; i++)
		if (s->check_seqs[i] == seq)
			return true;
	return false;
}

void ftl_swim_on_ack(ftl_swim *s, int64_t now_us, const ftl_msg_ack *ack)
{
	touch(s, ack->source, now_us);
	ftl_probe *p = &s->probe;
	if (p->is_active && ack->seq == p->seq) {
		if (!p->is_indirect_sent) {
			ftl_awareness_apply(&s->health, -1);
			s->stats.probe_acks++;
			s->stats.probe_rtt_sum_us += (uint64_t)(now_us - p->started_us);
		}
		p->is_acked = true;
		probe_done(s, now_us);
		return;
	}
	if (ack->seq == p->seq)
		return; /* the same probe answered again: the direct ack and the helpers' of a quick probe */
	for (int i = 0; i < s->n_relays; i++) {
		if (s->relays[i].our_seq == ack->seq) {
			ftl_msg fwd = {.type = FTL_MSG_ACK};
			fwd.u.ack.seq = s->relays[i].their_seq;
			strcpy(fwd.u.ack.source, ack->source);
			ftl_swim_send(s, "", s->relays[i].requester_addr, &fwd, NULL);
			remove_relay(s, i);
			return;
		}
	}
	if (ftl_swim_revive_ack(s, now_us, ack))
		return;
	if (!is_check_seq(s, ack->seq)) /* a check ping's ack only brings its piggybacked news */
		s->stats.dropped[FTL_DROP_UNKNOWN_SEQ]++;
}

void ftl_swim_on_nack(ftl_swim *s, int64_t now_us, const ftl_msg_nack *nack)
{
	touch(s, nack->source, now_us);
	if (s->probe.is_active && nack->seq == s->probe.seq)
		s->probe.nacks++;
	else if (nack->seq != s->probe.seq)
		s->stats.dropped[FTL_DROP_UNKNOWN_SEQ]++; /* not a late one of our last probe either */
}

void ftl_swim_relay_tick(ftl_swim *s, int64_t now_us)
{
	for (int i = s->n_relays; i-- > 0;) {
		ftl_relay *r = &s->relays[i];
		if (r->want_nack && !r->is_nack_sent && now_us >= r->nack_at_us) {
			ftl_msg nack = {.type = FTL_MSG_NACK};
			nack.u.nack.seq = r->their_seq;
			strcpy(nack.u.nack.source, s->name);
			ftl_swim_send(s, "", r->requester_addr, &nack, NULL);
			r->is_nack_sent = true;
		}
		if (now_us >= r->expires_us)
			remove_relay(s, i);
	}
}

int64_t ftl_swim_relay_deadline(const ftl_swim *s)
{
	int64_t t = INT64_MAX;
	for (int i = 0; i < s->n_relays; i++) {
		const ftl_relay *r = &s->relays[i];
		int64_t d = (r->want_nack && !r->is_nack_sent) ? r->nack_at_us : r->expires_us;
		if (d < t)
			t = d;
	}
	return t;
}
