/* The member side: while our candidate differs from the view we hold, tell the coordinator (the head of
 * the candidate) what we see, at once when it changes and again every ready_interval (messages may be
 * lost; the coordinator may be new). The coordinator itself reports to nobody: its own candidate is its
 * report. A spare (not in its own candidate) stays quiet; it learns views from commits. */
#include <string.h>

#include "rdv_internal.h"

/* A rebuild, a scale or a bench request (rendezvous.h) also needs a new view: the same members under the next epoch. */
static bool needs_new_view(const ftl_rdv *r)
{
	return r->self_in_cand > 0 &&
	       (r->cand.digest != r->view_members_digest || rdv_is_rebuild_wanted(r) || rdv_is_scale_wanted(r) ||
		rdv_is_bench_wanted(r));
}

void rdv_ready_step(ftl_rdv *r, int64_t now_us)
{
	const char *coordinator = r->cand.n > 0 ? r->cand.members[0].name : "";
	bool is_changed;

	if (!needs_new_view(r)) {
		r->sent_candidate = 0;
		r->next_ready_us = INT64_MAX;
		return;
	}
	is_changed = r->sent_candidate != r->cand.digest || r->sent_survivors != r->cand.survivors_digest ||
		     r->sent_requests != rdv_requests_mix(r) || strcmp(r->sent_to, coordinator) != 0;
	if (!is_changed && now_us < r->next_ready_us)
		return;
	rdv_send_ready(r, coordinator);
	r->sent_candidate = r->cand.digest;
	r->sent_survivors = r->cand.survivors_digest;
	r->sent_requests = rdv_requests_mix(r);
	ftl_copy_str(r->sent_to, coordinator, sizeof r->sent_to);
	r->next_ready_us = now_us + r->cfg.ready_interval_us;
}
