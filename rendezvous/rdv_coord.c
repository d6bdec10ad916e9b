/* The coordinator: the head of its own candidate (the oldest survivor of the view, or the oldest alive
 * member before the first view). It decides the next view in three steps.
 *
 * 1. Agreement. It picks a target: the whole candidate when every joiner in it has been alive for
 *    settle_us (so joins close together make one view change), else the view's survivors alone when they
 *    differ from the view (a death or leave commits at once: detection already waited; the joiners follow
 *    once settled). The target must be within [min_workers, max_workers] and hold the quorum. Then it
 *    waits until every member of the target has sent a ready naming the same list (the candidate digest,
 *    or the survivors digest); a member whose ready is missing or different is asked again (our own ready)
 *    every ready_interval, which also lets two sides that hold different views find out (rdv_receive.c).
 *
 * 2. Paxos. Unanimous readies are not enough to rule out split brain: a ready can be stale by the time
 *    the coordinator acts (a partition cuts the cluster between the last ready and the commit, and both
 *    sides then commit the same epoch). So the view is chosen by single-decree Paxos among the
 *    electorate (the view's members that did not leave): prepare/promise under a ballot (round, name),
 *    then accept/accepted; a strict majority of the electorate must answer each phase. If a promise
 *    reports a view accepted under an earlier ballot, that view is proposed instead of ours (it may already
 *    be chosen: a coordinator that crashed mid-commit is completed, not contradicted). Two sides of a
 *    partition cannot both gather a majority, so at most one view is ever chosen per epoch. With an empty
 *    electorate (the first view, or everyone else left) there is nobody to ask and the view is committed
 *    directly. The blob callback runs only when phase 2 proposes our own list (we will be its rank 0).
 *
 * 3. Commit. The chosen view goes to every alive member (spares and stragglers included), and we adopt it.
 *    A stage that does not finish in RDV_STAGE_TIMEOUT_INTERVALS ready intervals starts again under a
 *    higher ballot; a reject (an acceptor promised a higher ballot) does so at once. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rdv_internal.h"

typedef struct rdv_target {
	const ftl_rdv_member *members;  /* borrowed from the candidate */
	const uint32_t *peer_index;     /* [n], borrowed: each member's place in r->peers */
	uint32_t n;                     /* members[0..n), members[0] is us */
	uint64_t digest;                /* what each member's ready must name */
	bool is_whole_candidate;        /* else the survivors alone */
	bool is_rebuild;                /* the view's own members again, under a new epoch (a rebuild, or a
					 * new maximum): every member already agreed on this list, so no readies
					 * are awaited */
} rdv_target;

void rdv_proposal_abort(ftl_rdv *r)
{
	rdv_proposal *p = &r->proposal;
	int64_t retry_us = p->retry_us;
	ftl_rdv_view_clear(&p->value);
	free(p->acceptors);
	free(p->is_answered);
	memset(p, 0, sizeof *p);
	p->retry_us = retry_us;
}

/* When the last joiner of the candidate will have settled (INT64_MIN when there is none). The candidate is
 * built from r->peers after every change of it (rdv_rebuild), so its alive_index points into it: O(joiners). */
static int64_t settled_at(const ftl_rdv *r)
{
	int64_t at = INT64_MIN;
	for (uint32_t i = r->cand.n_survivors; i < r->cand.n; i++) {
		const rdv_peer *s = &r->peers.state[r->cand.alive_index[i]];
		if (s->seen_since_us + r->cfg.settle_us > at)
			at = s->seen_since_us + r->cfg.settle_us;
	}
	return at;
}

/* Picks what to commit now, if anything; sets *wake_us to when that may change without an input. */
static bool choose_target(const ftl_rdv *r, int64_t now_us, rdv_target *t, int64_t *wake_us)
{
	const rdv_candidate *c = &r->cand;
	int64_t settle_us = settled_at(r);

	int64_t expected_until = rdv_expected_until(r);

	if (!rdv_is_coordinator(r) || !rdv_candidate_has_quorum(c))
		return false;
	if (c->digest == r->view_members_digest) {
		if (!(rdv_is_rebuild_wanted(r) || rdv_is_scale_wanted(r) || rdv_is_bench_wanted(r)) ||
		    c->n < r->cfg.min_workers)
			return false;
		*t = (rdv_target){c->members, c->alive_index, c->n, c->digest, true, true};
		return true;
	}
	if (expected_until > now_us && expected_until != INT64_MAX)
		*wake_us = ftl_deadline_min(*wake_us, expected_until);
	if (now_us >= settle_us && rdv_has_workers_needed(r)) {
		*t = (rdv_target){c->members, c->alive_index, c->n, c->digest, true, false};
		return true;
	}
	if (now_us < settle_us)
		*wake_us = ftl_deadline_min(*wake_us, settle_us);
	if (c->n_survivors >= r->cfg.min_workers && c->survivors_digest != r->view_members_digest) {
		*t = (rdv_target){c->members, c->alive_index, c->n_survivors, c->survivors_digest, false, false};
		return true;
	}
	return false;
}

static bool has_agreed(const ftl_rdv *r, const rdv_peer *s, const rdv_target *t)
{
	if (!s->is_reported || s->report_epoch != r->view.epoch || s->report_view_digest != r->view_digest)
		return false;
	return (t->is_whole_candidate ? s->report_candidate : s->report_survivors) == t->digest;
}

/* True when every member of the target agrees; asks the others again, at most once per ready interval. */
static bool all_agree(ftl_rdv *r, int64_t now_us, const rdv_target *t)
{
	bool is_all = true;
	for (uint32_t i = 1; i < t->n; i++) { /* members[0] is us */
		rdv_peer *s = &r->peers.state[t->peer_index[i]];
		if (has_agreed(r, s, t))
			continue;
		is_all = false;
		if (s->polled_us == INT64_MIN || now_us - s->polled_us >= r->cfg.ready_interval_us) {
			rdv_send_ready(r, t->members[i].name);
			s->polled_us = now_us;
		}
	}
	if (!is_all)
		r->coord_next_us = ftl_deadline_min(r->coord_next_us, now_us + r->cfg.ready_interval_us);
	return is_all;
}

static void send_to_acceptors(ftl_rdv *r, rdv_msg *m)
{
	rdv_proposal *p = &r->proposal;
	rdv_send_all(r, (rdv_names){p->acceptors[0], p->n_acceptors, sizeof p->acceptors[0]}, m);
}

static void enter_stage(ftl_rdv *r, int64_t now_us, rdv_stage stage)
{
	rdv_proposal *p = &r->proposal;
	p->stage = stage;
	p->answered = 0;
	memset(p->is_answered, 0, p->n_acceptors * sizeof *p->is_answered);
	p->started_us = now_us;
}

/* Sends the chosen view to every alive member and adopts it. */
static void commit(ftl_rdv *r, const ftl_rdv_view *chosen)
{
	if (rdv_adopt(r, chosen) != 0) {
		r->dropped++;
		return;
	}
	rdv_send_commit_to_peers(r);
}

/* Commits the proposal's value (adopting it ends the proposal, so it is moved out first). A first view
 * starts a lineage named by its own digest. */
static void commit_value(ftl_rdv *r)
{
	ftl_rdv_view chosen = r->proposal.value;
	r->proposal.value = (ftl_rdv_view){0};
	if (chosen.lineage == 0)
		chosen.lineage = rdv_view_digest(&chosen) | 1;
	commit(r, &chosen);
	ftl_rdv_view_clear(&chosen);
}

/* Fills the blob of our own value; false when the callback postpones the commit. */
static bool make_blob(ftl_rdv *r, ftl_rdv_view *v)
{
	size_t len = 0;
	if (r->blob_cb != NULL && r->blob_cb(r->blob_ctx, v->epoch, v->blob, sizeof v->blob, &len) != FTL_OK)
		return false;
	if (len > FTL_RDV_BLOB_MAX)
		return false;
	v->blob_len = (uint16_t)len;
	return true;
}

static void postpone(ftl_rdv *r, int64_t now_us)
{
	rdv_proposal_abort(r);
	r->proposal.retry_us = now_us + r->cfg.ready_interval_us;
	r->coord_next_us = ftl_deadline_min(r->coord_next_us, r->proposal.retry_us);
}

/* Phase 2, or the commit itself when there is no electorate to ask. */
static void begin_accept(ftl_rdv *r, int64_t now_us)
{
	rdv_proposal *p = &r->proposal;
	if (p->value_ballot.round == 0 && !make_blob(r, &p->value)) {
		postpone(r, now_us);
		return;
	}
	if (p->needed == 0) {
		commit_value(r);
		return;
	}
	enter_stage(r, now_us, RDV_STAGE_ACCEPT);
	rdv_msg m = {.type = RDV_MSG_ACCEPT, .ballot = p->ballot, .view = p->value};
	send_to_acceptors(r, &m);
}

/* The acceptors: the view's members that are alive (same life) and did not leave, whether or not the next
 * view keeps them (a member of a replica that lost a shard, or one stepping down to a spare under a lower
 * maximum, still votes: it counts in the electorate). */
static ftl_err collect_acceptors(ftl_rdv *r)
{
	rdv_proposal *p = &r->proposal;
	uint32_t n = r->view.n;
	p->acceptors = malloc((n + 1) * sizeof *p->acceptors);
	p->is_answered = calloc(n + 1, sizeof *p->is_answered);
	if (p->acceptors == NULL || p->is_answered == NULL)
		return ftl_diag_set(FTL_ERR_SYSTEM, "rendezvous: out of memory for the %u acceptors of a proposal", n);
	for (uint32_t i = 0; i < n; i++) {
		const ftl_rdv_member *m = &r->view.members[i];
		int k = rdv_peers_find(&r->peers, m->name);
		if (k >= 0 && r->peers.members[k].generation == m->generation && !rdv_has_left(r, m->name))
			ftl_copy_str(p->acceptors[p->n_acceptors++], m->name, FTL_NAME_MAX);
	}
	p->needed = rdv_quorum_needed(r->cand.electorate);
	return FTL_OK;
}

/* Starts an attempt: our value is the target as the next epoch; phase 1 under a fresh ballot. */
static void begin_prepare(ftl_rdv *r, int64_t now_us, const rdv_target *t)
{
	rdv_proposal *p = &r->proposal;
	ftl_rdv_view own = {.epoch = r->view.epoch + 1, .lineage = r->view.lineage, .n = t->n,
			    .members = (ftl_rdv_member *)t->members};
	rdv_carry_requests(r, &own);

	rdv_proposal_abort(r);
	if (collect_acceptors(r) != 0 || ftl_rdv_view_copy(&p->value, &own) != 0) {
		rdv_proposal_abort(r);
		r->dropped++;
		return;
	}
	p->target_digest = t->digest;
	p->ballot.round = ++r->max_round;
	ftl_copy_str(p->ballot.by, r->self.name, sizeof p->ballot.by);
	if (p->needed == 0) {
		begin_accept(r, now_us);
		return;
	}
	enter_stage(r, now_us, RDV_STAGE_PREPARE);
	rdv_msg m = {.type = RDV_MSG_PREPARE, .ballot = p->ballot};
	send_to_acceptors(r, &m);
}

void rdv_coord_step(ftl_rdv *r, int64_t now_us)
{
	rdv_proposal *p = &r->proposal;
	int64_t timeout_us = RDV_STAGE_TIMEOUT_INTERVALS * r->cfg.ready_interval_us;
	rdv_target t;

	r->coord_next_us = INT64_MAX;
	if (!choose_target(r, now_us, &t, &r->coord_next_us)) {
		rdv_proposal_abort(r);
		return;
	}
	if (p->stage != RDV_STAGE_IDLE && (p->target_digest != t.digest || now_us - p->started_us >= timeout_us))
		rdv_proposal_abort(r); /* the target moved under the attempt, or it stalled: start over */
	if (p->stage != RDV_STAGE_IDLE) {
		r->coord_next_us = ftl_deadline_min(r->coord_next_us, p->started_us + timeout_us);
		return;
	}
	if (now_us < p->retry_us) {
		r->coord_next_us = ftl_deadline_min(r->coord_next_us, p->retry_us);
		return;
	}
	if (t.is_rebuild || all_agree(r, now_us, &t))
		begin_prepare(r, now_us, &t);
	if (p->stage != RDV_STAGE_IDLE)
		r->coord_next_us = ftl_deadline_min(r->coord_next_us, p->started_us + timeout_us);
}

void rdv_coord_on_ready(ftl_rdv *r, const rdv_msg *m)
{
	int k = rdv_peers_find(&r->peers, m->from);
	rdv_peer *s;
	if (k < 0 || r->peers.members[k].generation != m->generation)
		return; /* not alive as far as we know: membership will tell us */
	s = &r->peers.state[k];
	s->is_reported = true;
	s->report_epoch = m->epoch;
	s->report_view_digest = m->view_digest;
	s->report_candidate = m->candidate_digest;
	s->report_survivors = m->survivors_digest;
	rdv_take_requests(r, m);
}

/* Counts an acceptor's first answer to our ballot in the given stage; false to ignore the message (late,
 * repeated, or not from one of our acceptors). */
static bool count_answer(ftl_rdv *r, const rdv_msg *m, rdv_stage stage)
{
	rdv_proposal *p = &r->proposal;
	if (p->stage != stage || rdv_ballot_cmp(&m->ballot, &p->ballot) != 0)
		return false;
	for (uint32_t i = 0; i < p->n_acceptors; i++) {
		if (strcmp(p->acceptors[i], m->from) != 0)
			continue;
		if (p->is_answered[i])
			return false;
		p->is_answered[i] = true;
		p->answered++;
		return true;
	}
	return false;
}

void rdv_coord_on_promise(ftl_rdv *r, int64_t now_us, const rdv_msg *m)
{
	rdv_proposal *p = &r->proposal;
	if (!count_answer(r, m, RDV_STAGE_PREPARE))
		return;
	if (m->accepted.round > 0 && m->view.epoch == r->view.epoch + 1 && m->view.lineage == r->view.lineage &&
	    rdv_ballot_cmp(&m->accepted, &p->value_ballot) > 0) {
		if (ftl_rdv_view_copy(&p->value, &m->view) != 0) {
			rdv_proposal_abort(r); /* out of memory: a later attempt retries */
			return;
		}
		p->value_ballot = m->accepted;
	}
	if (p->answered >= p->needed)
		begin_accept(r, now_us);
}

void rdv_coord_on_accepted(ftl_rdv *r, int64_t now_us, const rdv_msg *m)
{
	if (count_answer(r, m, RDV_STAGE_ACCEPT) && r->proposal.answered >= r->proposal.needed)
		commit_value(r);
}

void rdv_coord_on_reject(ftl_rdv *r, const rdv_msg *m)
{
	if (r->proposal.stage != RDV_STAGE_IDLE && rdv_ballot_cmp(&m->ballot, &r->proposal.ballot) > 0)
		rdv_proposal_abort(r); /* the next step starts again above the ballot that beat ours */
}
