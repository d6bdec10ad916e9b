/* What a decoded message does. First the epochs: every message carries the sender's view epoch and digest,
 * and two nodes that hold different views settle that before anything else —
 *   - the sender is behind: we answer with our view (a commit), which it adopts;
 *   - we are behind: we answer with a ready, which makes the sender answer with its view;
 *   - views of two lineages (clusters whose first views were made apart, see rendezvous.h on lineages): the
 *     order of rdv_view_id_cmp decides, by the same two answers: the lineage with more steps wins.
 * So a minority side, a spare that missed a commit, or a restarted joiner catches up on the first message
 * exchanged in either direction. Only then does the message count, by type. */
#include "rdv_internal.h"

/* The steps the sender's message speaks for in view v: its own lineage's, when v is of it. */
static uint64_t steps_of(const rdv_msg *m, const ftl_rdv_view *v)
{
	return m->lineage == v->lineage ? m->steps : 0;
}

static void on_commit(ftl_rdv *r, const rdv_msg *m)
{
	uint64_t steps = steps_of(m, &m->view);
	rdv_view_id theirs = rdv_view_id_of(&m->view, steps), ours = rdv_view_id_of(&r->view, r->steps);
	int cmp = rdv_view_id_cmp(&theirs, &ours);
	if (m->view.epoch == 0 || m->view.n == 0 || m->view.lineage == 0) {
		r->dropped++; /* not a view anyone commits */
		return;
	}
	bool is_other_lineage = m->view.lineage != r->view.lineage;
	if (cmp > 0 && rdv_adopt(r, &m->view) != 0)
		r->dropped++;
	else if (cmp > 0) /* we now speak for the adopted lineage's work, not for the one we leave */
		r->steps = is_other_lineage ? steps : (steps > r->steps ? steps : r->steps);
	if (cmp < 0)
		rdv_send_commit(r, m->from);
}

/* Settles a difference of views; returns true if there was one (the message is then spent). */
static bool catch_up(ftl_rdv *r, const rdv_msg *m)
{
	rdv_view_id theirs = {.epoch = m->epoch, .lineage = m->lineage, .digest = m->view_digest, .n = m->view_size,
			      .steps = m->steps};
	rdv_view_id ours = rdv_view_id_of(&r->view, r->steps);
	int cmp = rdv_view_id_cmp(&theirs, &ours);
	if (cmp == 0)
		return false;
	if (cmp < 0)
		rdv_send_commit(r, m->from);
	else
		rdv_send_ready(r, m->from);
	return true;
}

void rdv_handle(ftl_rdv *r, int64_t now_us, const rdv_msg *m)
{
	if (m->lineage != 0 && m->lineage == r->view.lineage && m->steps > r->steps)
		r->steps = m->steps; /* our lineage has done at least that much, whoever says it */
	if (m->type == RDV_MSG_COMMIT) {
		on_commit(r, m);
		return;
	}
	if (catch_up(r, m))
		return;
	if (m->ballot.round > r->max_round)
		r->max_round = m->ballot.round;
	switch (m->type) {
	case RDV_MSG_READY:
		rdv_coord_on_ready(r, m);
		break;
	case RDV_MSG_PREPARE:
		rdv_acceptor_on_prepare(r, m);
		break;
	case RDV_MSG_ACCEPT:
		rdv_acceptor_on_accept(r, m);
		break;
	case RDV_MSG_PROMISE:
		rdv_coord_on_promise(r, now_us, m);
		break;
	case RDV_MSG_ACCEPTED:
		rdv_coord_on_accepted(r, now_us, m);
		break;
	case RDV_MSG_REJECT:
		rdv_coord_on_reject(r, m);
		break;
	case RDV_MSG_COMMIT:
	case RDV_MSG_TYPE_MAX:
		break;
	}
}
