/* What the shell reads from the node and the few things it reports that are counts, not decisions: the
 * agent builds its status, metrics and member counts from one snapshot instead of calling membership, and
 * publishes the view from the rendezvous's side. */
#include "node_internal.h"

void ftl_node_read(const ftl_node *n, ftl_node_snapshot *out)
{
	const ftl_swim *s = n->swim;
	*out = (ftl_node_snapshot){
		.name = ftl_swim_name(s),
		.generation = ftl_swim_generation(s),
		.incarnation = ftl_swim_incarnation(s),
		.health = ftl_swim_health_score(s),
		.n_members = ftl_swim_members(s)->len,
		.stats = ftl_swim_get_stats(s),
		.config = ftl_swim_get_config(s),
		.is_leave_done = ftl_swim_leave_done(s),
	};
	for (int state = 0; state < FTL_MEMBER_STATE_MAX; state++)
		out->count[state] = ftl_swim_count(s, (ftl_member_state)state);
	int live = (int)(out->count[FTL_MEMBER_ALIVE] + out->count[FTL_MEMBER_SUSPECT]);
	out->suspicion_max_us = ftl_swim_suspicion_max_us(out->config, live);
	out->detection_bound_us = ftl_swim_detection_bound_us(out->config, live);
}

void ftl_node_read_view(const ftl_node *n, ftl_node_view_state *out)
{
	*out = (ftl_node_view_state){.rank = -1};
	if (!n->rdv)
		return;
	out->view = ftl_rdv_current(n->rdv);
	out->rank = ftl_rdv_rank(n->rdv);
	out->phase = ftl_rdv_get_phase(n->rdv);
	out->lineage_steps = ftl_rdv_steps(n->rdv);
	out->coordinator = ftl_rdv_coordinator(n->rdv);
	out->max_workers = ftl_rdv_max_workers(n->rdv);
}

size_t ftl_node_missing(const ftl_node *n, const char **names, size_t cap, ftl_rdv_quorum *q)
{
	return n->rdv ? ftl_rdv_missing(n->rdv, names, cap, q) : 0;
}

ftl_err ftl_node_view_copy(ftl_rdv_view *dst, const ftl_rdv_view *src) { return ftl_rdv_view_copy(dst, src); }

void ftl_node_view_clear(ftl_rdv_view *v) { ftl_rdv_view_clear(v); }

const char *const *const ftl_node_phase_strs = ftl_rdv_phase_strs;

/* The node's row of one member of membership's table. */
static void member_row(const ftl_member *m, ftl_node_member *out)
{
	*out = (ftl_node_member){
		.name = m->name,
		.addr = m->addr,
		.state = m->state,
		.generation = m->generation,
		.incarnation = m->incarnation,
		.last_heard_us = m->last_heard_us,
		.meta = m->meta,
		.meta_len = m->meta_len,
	};
}

bool ftl_node_member_at(const ftl_node *n, uint32_t i, ftl_node_member *out)
{
	const ftl_members *t = ftl_swim_members(n->swim);
	if (i >= t->len)
		return false;
	member_row(&t->arr[i], out);
	return true;
}

bool ftl_node_find_member(const ftl_node *n, const char *name, ftl_node_member *out)
{
	const ftl_member *m = ftl_swim_find(n->swim, name);
	if (m)
		member_row(m, out);
	return m != NULL;
}

uint32_t ftl_node_key_lacking(const ftl_node *n, const uint8_t fp[FTL_KEY_FP_SIZE], const char **names, uint32_t cap)
{
	return ftl_key_census_lacking(ftl_swim_members(n->swim), fp, names, cap);
}

void ftl_node_key_census(ftl_node *n, ftl_key_census *out) { ftl_swim_key_census(n->swim, out); }

void ftl_node_count_drop(ftl_node *n, ftl_swim_drop why) { ftl_swim_count_drop(n->swim, why); }

ftl_err ftl_node_push_pull_encode(ftl_node *n, bool is_join, uint8_t **frame, size_t *len)
{
	return ftl_swim_push_pull_encode(n->swim, is_join, frame, len);
}
