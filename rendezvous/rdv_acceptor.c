/* The acceptor side of the Paxos round that decides each view (why Paxos: see rdv_coord.c). Every member
 * of the current view votes on the view after it: it promises not to accept anything under a ballot lower
 * than the highest it has promised, reports the view it accepted before (if any) in its promise, and
 * accepts a view under a ballot at least as high as its promise. The vote is reset whenever the node
 * adopts a new view: a vote is about the view after the current one only. */
#include <string.h>

#include "rdv_internal.h"

void rdv_acceptor_reset(rdv_acceptor *a)
{
	ftl_rdv_view_clear(&a->value);
	memset(a, 0, sizeof *a);
}

/* Only members of the current view vote (joiners and spares do not count toward the quorum). */
static bool is_voter(const ftl_rdv *r)
{
	return r->rank >= 0 && !rdv_has_left(r, r->self.name);
}

static void reject(ftl_rdv *r, const rdv_msg *m)
{
	rdv_msg reply = {.type = RDV_MSG_REJECT, .ballot = r->acceptor.promised};
	rdv_send(r, m->from, &reply);
}

void rdv_acceptor_on_prepare(ftl_rdv *r, const rdv_msg *m)
{
	rdv_acceptor *a = &r->acceptor;
	if (!is_voter(r))
		return;
	if (rdv_ballot_cmp(&m->ballot, &a->promised) < 0) {
		reject(r, m);
		return;
	}
	a->promised = m->ballot;
	rdv_msg reply = {.type = RDV_MSG_PROMISE, .ballot = m->ballot, .accepted = a->accepted, .view = a->value};
	rdv_send(r, m->from, &reply);
}

void rdv_acceptor_on_accept(ftl_rdv *r, const rdv_msg *m)
{
	rdv_acceptor *a = &r->acceptor;
	if (!is_voter(r))
		return;
	if (m->view.epoch != r->view.epoch + 1 || m->view.lineage != r->view.lineage || m->view.n == 0) {
		r->dropped++; /* a proposal for some other view than the next */
		return;
	}
	if (rdv_ballot_cmp(&m->ballot, &a->promised) < 0) {
		reject(r, m);
		return;
	}
	if (ftl_rdv_view_copy(&a->value, &m->view) != 0) {
		a->accepted.round = 0; /* out of memory: accept nothing rather than a torn value */
		return;
	}
	a->promised = m->ballot;
	a->accepted = m->ballot;
	rdv_msg reply = {.type = RDV_MSG_ACCEPTED, .ballot = m->ballot};
	rdv_send(r, m->from, &reply);
}
