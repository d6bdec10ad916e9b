/* The rendezvous instance: its lifecycle, its three inputs (membership snapshot, message, tick), the update
 * loop they share, the phase, and adopting a view. The protocol is described in rendezvous.h; why it runs
 * Paxos underneath is in rdv_coord.c. */
#include <stdlib.h>
#include <string.h>

#include "rdv_internal.h"

const char *const ftl_rdv_phase_strs[FTL_RDV_PHASE_MAX] = {
	[FTL_RDV_NO_VIEW] = "waiting for workers",
	[FTL_RDV_RENDEZVOUS] = "rendezvous",
	[FTL_RDV_TRAINING] = "training",
	[FTL_RDV_SPARE] = "hot spare",
	[FTL_RDV_WAITING_FOR_QUORUM] = "waiting for quorum",
};

/* A name or address option: set, and shorter than cap. FTL_OK, or FTL_ERR_INVALID with what is wrong. */
static ftl_err check_text(const char *s, size_t cap, const char *what)
{
	if (s == NULL || s[0] == '\0')
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: empty %s", what);
	if (strnlen(s, cap) >= cap)
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: %s too long", what);
	return FTL_OK;
}

/* FTL_OK, or FTL_ERR_INVALID with the option at fault in the diag. */
static ftl_err check_options(const ftl_rdv_options *o)
{
	ftl_err err = check_text(o->name, FTL_NAME_MAX, "name");
	if (!err)
		err = check_text(o->data_addr, FTL_ADDR_MAX, "data address");
	if (!err && o->replica_size > 0)
		err = check_text(o->replica, FTL_NAME_MAX, "replica name");
	if (err)
		return err;
	if (o->replica_size > 0 && o->replica_index >= o->replica_size)
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: replica index must be below the replica size");
	if (o->config.min_workers < 1)
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: min_workers must be at least 1");
	if (o->config.max_workers < o->config.min_workers)
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: max_workers must be at least min_workers");
	if (o->config.min_workers > FTL_RDV_MAX_MEMBERS)
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: min_workers over FTL_RDV_MAX_MEMBERS (4096)");
	if (o->config.settle_us < 0)
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: settle time must not be negative");
	if (o->config.ready_interval_us <= 0)
		return ftl_diag_set(FTL_ERR_INVALID, "rendezvous: ready interval must be positive");
	return FTL_OK;
}

ftl_rdv *ftl_rdv_new(const ftl_rdv_options *o)
{
	ftl_rdv *r;
	if (check_options(o) != FTL_OK)
		return NULL;
	if ((r = calloc(1, sizeof *r)) == NULL) {
		ftl_diag_set(FTL_ERR_SYSTEM, "rendezvous: out of memory");
		return NULL;
	}
	ftl_copy_str(r->self.name, o->name, sizeof r->self.name);
	ftl_copy_str(r->self.data_addr, o->data_addr, sizeof r->self.data_addr);
	r->self.generation = o->generation;
	if (o->replica_size > 0) {
		ftl_copy_str(r->self.replica, o->replica, sizeof r->self.replica);
		r->self.replica_index = o->replica_index;
		r->self.replica_size = o->replica_size;
	}
	ftl_fifo_create(&r->outputs, sizeof(ftl_rdv_output));
	ftl_fifo_create(&r->inbox, sizeof(rdv_msg));
	r->cfg = o->config;
	if (r->cfg.max_workers > FTL_RDV_MAX_MEMBERS)
		r->cfg.max_workers = FTL_RDV_MAX_MEMBERS;
	r->blob_cb = o->blob_cb;
	r->blob_ctx = o->blob_ctx;
	r->rank = -1;
	r->self_in_cand = -1;
	r->next_ready_us = INT64_MAX;
	r->coord_next_us = INT64_MAX;
	r->phase = FTL_RDV_NO_VIEW;
	return r;
}

void ftl_rdv_delete(ftl_rdv *r)
{
	if (r == NULL)
		return;
	rdv_proposal_abort(r);
	rdv_acceptor_reset(&r->acceptor);
	ftl_rdv_view_clear(&r->view);
	rdv_candidate_free(&r->cand);
	rdv_peers_free(&r->peers);
	free(r->left_names);
	free(r->left);
	rdv_queues_free(r);
	free(r);
}

bool rdv_is_rebuild_wanted(const ftl_rdv *r)
{
	return r->view.epoch > 0 && r->rank >= 0 && r->rebuild_epoch == r->view.epoch;
}

bool rdv_is_scale_wanted(const ftl_rdv *r)
{
	return r->view.epoch > 0 && r->max_epoch == r->view.epoch && r->max_request != ftl_rdv_max_workers(r);
}

static bool is_same_benched(const ftl_rdv_benched *a, const ftl_rdv_benched *b)
{
	return a->generation == b->generation && strcmp(a->name, b->name) == 0;
}

bool rdv_is_bench_wanted(const ftl_rdv *r)
{
	return r->view.epoch > 0 && r->bench_epoch == r->view.epoch && r->bench_request.name[0] &&
	       !is_same_benched(&r->bench_request, &r->view.benched);
}

void rdv_carry_requests(const ftl_rdv *r, ftl_rdv_view *next)
{
	next->max_workers = rdv_is_scale_wanted(r) ? r->max_request : r->view.max_workers;
	next->benched = rdv_is_bench_wanted(r) ? r->bench_request : r->view.benched;
}

uint32_t ftl_rdv_max_workers(const ftl_rdv *r)
{
	return r->view.max_workers != 0 ? r->view.max_workers : r->cfg.max_workers;
}

uint64_t rdv_requests_mix(const ftl_rdv *r)
{
	uint64_t bench = r->bench_epoch ^ r->bench_request.generation;
	for (const char *c = r->bench_request.name; *c; c++)
		bench = bench * 31 + (unsigned char)*c;
	return r->rebuild_epoch ^ (r->waive_epoch << 1) ^ (r->max_epoch << 2) ^ ((uint64_t)r->max_request << 32) ^
	       (bench << 3);
}

bool rdv_has_workers_needed(const ftl_rdv *r)
{
	const rdv_candidate *c = &r->cand;
	if (r->view.epoch == 0 && rdv_expected_until(r) > r->now_us)
		return c->n + c->n_spares >= r->cfg.expected_workers;
	return c->n >= r->cfg.min_workers;
}

int64_t rdv_expected_until(const ftl_rdv *r)
{
	if (r->view.epoch > 0 || r->cfg.expected_workers <= r->cfg.min_workers)
		return INT64_MIN;
	return r->cfg.expected_wait_us > 0 ? r->started_us + r->cfg.expected_wait_us : INT64_MAX;
}

static ftl_rdv_phase compute_phase(const ftl_rdv *r)
{
	if (r->rank >= 0 && r->cand.digest == r->view_members_digest && !rdv_is_rebuild_wanted(r))
		return FTL_RDV_TRAINING;
	if (r->view.epoch > 0 && !rdv_candidate_has_quorum(&r->cand))
		return FTL_RDV_WAITING_FOR_QUORUM;
	if (!rdv_has_workers_needed(r))
		return FTL_RDV_NO_VIEW;
	if (r->self_in_cand < 0)
		return FTL_RDV_SPARE;
	return FTL_RDV_RENDEZVOUS;
}

void rdv_rebuild(ftl_rdv *r)
{
	if (rdv_candidate_build(&r->cand, &r->view, r->peers.members, r->peers.n, r->left, r->n_left,
				ftl_rdv_max_workers(r), r->cfg.spares) != 0)
		r->dropped++; /* out of memory: an empty candidate commits nothing until the next input */
	if (r->view.epoch > 0 && r->waive_epoch == r->view.epoch)
		r->cand.electorate = r->cand.electorate_alive; /* the operator said the missing are gone for good */
	r->self_in_cand = rdv_candidate_find(&r->cand, r->self.name, r->self.generation);
	r->phase = compute_phase(r);
}

bool rdv_is_coordinator(const ftl_rdv *r)
{
	return r->self_in_cand == 0;
}

bool rdv_has_left(const ftl_rdv *r, const char *name)
{
	for (size_t i = 0; i < r->n_left; i++)
		if (strcmp(r->left[i], name) == 0)
			return true;
	return false;
}

ftl_err rdv_adopt(ftl_rdv *r, const ftl_rdv_view *v)
{
	ftl_err err = ftl_rdv_view_copy(&r->view, v);
	if (err)
		return err;
	r->view_digest = rdv_view_digest(&r->view);
	r->view_members_digest = rdv_members_digest(r->view.members, r->view.n);
	r->rank = rdv_view_find(&r->view, r->self.name, r->self.generation);
	r->is_view_new = true;
	r->rebuild_epoch = 0;
	r->waive_epoch = 0;
	r->max_epoch = 0;
	r->max_request = 0;
	r->bench_epoch = 0;
	memset(&r->bench_request, 0, sizeof r->bench_request);
	r->max_round = 0;
	r->sent_candidate = 0;
	rdv_acceptor_reset(&r->acceptor);
	rdv_proposal_abort(r);
	rdv_rebuild(r);
	return FTL_OK;
}

/* Runs the member and coordinator steps, then whatever we sent ourselves, until nothing is left to do. */
static void update(ftl_rdv *r, int64_t now_us)
{
	rdv_msg m;
	bool is_busy;
	if (rdv_expected_until(r) != INT64_MIN)
		r->phase = compute_phase(r); /* the expected-workers wait may have ended since the last input */
	do {
		rdv_ready_step(r, now_us);
		rdv_coord_step(r, now_us);
		is_busy = false;
		while (rdv_inbox_pop(r, &m)) {
			rdv_handle(r, now_us, &m);
			rdv_msg_free(&m);
			is_busy = true;
		}
	} while (is_busy);
}

static ftl_err set_left(ftl_rdv *r, const char *const *left, size_t n_left)
{
	char (*names)[FTL_NAME_MAX] = malloc((n_left + 1) * sizeof *names);
	const char **ptrs = malloc((n_left + 1) * sizeof *ptrs);
	if (names == NULL || ptrs == NULL) {
		free(names);
		free(ptrs);
		return ftl_diag_set(FTL_ERR_SYSTEM, "rendezvous: out of memory for the names of %zu members that left",
				    n_left);
	}
	for (size_t i = 0; i < n_left; i++) {
		ftl_copy_str(names[i], left[i], FTL_NAME_MAX);
		ptrs[i] = names[i];
	}
	free(r->left_names);
	free(r->left);
	r->left_names = names;
	r->left = ptrs;
	r->n_left = n_left;
	return FTL_OK;
}

/* Every input passes the time: the first one starts the expected-workers wait. */
static void set_now(ftl_rdv *r, int64_t now_us)
{
	if (!r->has_started) {
		r->has_started = true;
		r->started_us = now_us;
	}
	r->now_us = now_us;
}

void ftl_rdv_set_members(ftl_rdv *r, int64_t now_us, const ftl_rdv_member *alive, size_t n_alive,
			 const char *const *left, size_t n_left)
{
	set_now(r, now_us);
	if (n_left > FTL_RDV_MAX_MEMBERS)
		n_left = FTL_RDV_MAX_MEMBERS;
	if (rdv_peers_update(&r->peers, now_us, alive, n_alive, &r->self) != 0 || set_left(r, left, n_left) != 0)
		r->dropped++; /* out of memory: keep the last snapshot */
	rdv_rebuild(r);
	update(r, now_us);
}

void ftl_rdv_receive(ftl_rdv *r, int64_t now_us, const uint8_t *data, size_t len)
{
	rdv_msg m;
	set_now(r, now_us);
	if (rdv_decode(data, len, &m) != 0) {
		r->dropped++;
		return;
	}
	if (strcmp(m.from, r->self.name) == 0) {
		r->dropped++; /* our own name from the network: a reflection, or a stale twin */
	} else {
		rdv_handle(r, now_us, &m);
		update(r, now_us);
	}
	rdv_msg_free(&m);
}

void ftl_rdv_tick(ftl_rdv *r, int64_t now_us)
{
	set_now(r, now_us);
	update(r, now_us);
}

void ftl_rdv_request_rebuild(ftl_rdv *r, int64_t now_us, uint64_t epoch)
{
	set_now(r, now_us);
	if (epoch == 0 || epoch != r->view.epoch || r->rank < 0 || r->rebuild_epoch == epoch)
		return; /* a view since superseded, or one we are not in: nothing to rebuild */
	r->rebuild_epoch = epoch;
	rdv_rebuild(r);
	update(r, now_us);
}

ftl_err ftl_rdv_waive_quorum(ftl_rdv *r, int64_t now_us)
{
	set_now(r, now_us);
	if (r->phase != FTL_RDV_WAITING_FOR_QUORUM)
		return ftl_diag_set(FTL_ERR_INVALID, "not waiting for quorum (phase: %s): nothing to reset",
				    ftl_rdv_phase_strs[r->phase]);
	r->waive_epoch = r->view.epoch;
	rdv_rebuild(r);
	update(r, now_us);
	return FTL_OK;
}

ftl_err ftl_rdv_request_max(ftl_rdv *r, int64_t now_us, uint32_t max_workers)
{
	set_now(r, now_us);
	if (r->view.epoch == 0 || r->rank < 0)
		return ftl_diag_set(FTL_ERR_INVALID, "not a member of a view (phase: %s): ask a worker that trains",
				    ftl_rdv_phase_strs[r->phase]);
	if (max_workers < r->cfg.min_workers || max_workers > FTL_RDV_MAX_MEMBERS)
		return ftl_diag_set(FTL_ERR_INVALID, "a maximum of %u workers: expected %u (FTL_MIN_WORKERS) to %d",
				    max_workers, r->cfg.min_workers, FTL_RDV_MAX_MEMBERS);
	if (max_workers < r->self.replica_size)
		return ftl_diag_set(FTL_ERR_INVALID, "a maximum of %u workers is below a replica (%u workers): a view "
				    "holds whole replicas, so it could hold none", max_workers, r->self.replica_size);
	r->max_epoch = r->view.epoch;
	r->max_request = max_workers;
	rdv_rebuild(r);
	update(r, now_us);
	return FTL_OK;
}

ftl_err ftl_rdv_request_bench(ftl_rdv *r, int64_t now_us, const char *name, uint64_t generation)
{
	set_now(r, now_us);
	if (r->view.epoch == 0 || r->rank < 0)
		return ftl_diag_set(FTL_ERR_INVALID, "not a member of a view (phase: %s): nothing to bench",
				    ftl_rdv_phase_strs[r->phase]);
	if (rdv_view_find(&r->view, name, generation) < 0)
		return ftl_diag_set(FTL_ERR_INVALID, "%s is not a member of view %llu: nothing to bench", name,
				    (unsigned long long)r->view.epoch);
	if (r->self.replica_size > 0)
		return ftl_diag_set(FTL_ERR_INVALID, "a job of replicas: a spare replaces a whole replica, not one "
				    "worker of it, so %s stays", name);
	if (r->cand.n_spares == 0)
		return ftl_diag_set(FTL_ERR_INVALID, "no spare waits to take %s's place: it stays in the view", name);
	r->bench_epoch = r->view.epoch;
	ftl_copy_str(r->bench_request.name, name, sizeof r->bench_request.name);
	r->bench_request.generation = generation;
	rdv_rebuild(r);
	update(r, now_us);
	return FTL_OK;
}

void rdv_take_requests(ftl_rdv *r, const rdv_msg *ready)
{
	uint64_t rebuild_epoch = ready->rebuild_epoch, waive_epoch = ready->waive_epoch;
	bool is_new = false;
	if (rebuild_epoch != 0 && rebuild_epoch == r->view.epoch && r->rank >= 0 && r->rebuild_epoch != rebuild_epoch) {
		r->rebuild_epoch = rebuild_epoch;
		is_new = true;
	}
	if (waive_epoch != 0 && waive_epoch == r->view.epoch && r->waive_epoch != waive_epoch) {
		r->waive_epoch = waive_epoch;
		is_new = true;
	}
	if (ready->max_epoch != 0 && ready->max_epoch == r->view.epoch && ready->max_request != 0 &&
	    (r->max_epoch != ready->max_epoch || r->max_request != ready->max_request)) {
		r->max_epoch = ready->max_epoch;
		r->max_request = ready->max_request;
		is_new = true;
	}
	if (ready->bench_epoch != 0 && ready->bench_epoch == r->view.epoch && ready->bench.name[0] &&
	    (r->bench_epoch != ready->bench_epoch || !is_same_benched(&r->bench_request, &ready->bench))) {
		r->bench_epoch = ready->bench_epoch;
		r->bench_request = ready->bench;
		is_new = true;
	}
	if (is_new)
		rdv_rebuild(r);
}

size_t ftl_rdv_missing(const ftl_rdv *r, const char **names, size_t cap, ftl_rdv_quorum *q)
{
	size_t n = 0;
	for (uint32_t i = 0; i < r->view.n; i++) {
		const ftl_rdv_member *v = &r->view.members[i];
		int k = rdv_peers_find(&r->peers, v->name);
		bool is_alive = k >= 0 && r->peers.members[k].generation == v->generation;
		if (is_alive || rdv_has_left(r, v->name))
			continue;
		if (n < cap)
			names[n] = v->name;
		n++;
	}
	if (q != NULL)
		*q = (ftl_rdv_quorum){.electorate = r->cand.electorate, .alive = r->cand.electorate_alive,
				      .needed = rdv_quorum_needed(r->cand.electorate),
				      .is_waived = r->view.epoch > 0 && r->waive_epoch == r->view.epoch};
	return n;
}

int64_t ftl_rdv_next_deadline(const ftl_rdv *r)
{
	return r->next_ready_us < r->coord_next_us ? r->next_ready_us : r->coord_next_us;
}

bool ftl_rdv_take_new_view(ftl_rdv *r, const ftl_rdv_view **view)
{
	if (!r->is_view_new)
		return false;
	r->is_view_new = false;
	*view = &r->view;
	return true;
}

const ftl_rdv_view *ftl_rdv_current(const ftl_rdv *r)
{
	return &r->view;
}

int ftl_rdv_rank(const ftl_rdv *r)
{
	return r->rank;
}

ftl_rdv_phase ftl_rdv_get_phase(const ftl_rdv *r)
{
	return r->phase;
}

const char *ftl_rdv_coordinator(const ftl_rdv *r)
{
	return r->cand.n > 0 ? r->cand.members[0].name : "";
}

uint64_t ftl_rdv_dropped(const ftl_rdv *r)
{
	return r->dropped;
}

void ftl_rdv_set_steps(ftl_rdv *r, uint64_t lineage, uint64_t steps)
{
	if (lineage == 0 || lineage != r->view.lineage)
		return;
	r->steps = steps > r->steps ? steps : r->steps; /* a lineage's work only grows: a worker that fell behind
							  * (a spare since) does not lower what it heard */
	if (steps > 0 && r->announced_lineage != lineage && ftl_rdv_rank(r) == 0) {
		/* Once per lineage: every member, spares included, then knows the job has work to lose, which a
		 * spare that later finds itself rank 0 without the state must not start again from nothing. */
		r->announced_lineage = lineage;
		rdv_send_commit_to_peers(r);
	}
}

uint64_t ftl_rdv_steps(const ftl_rdv *r)
{
	return r->steps;
}
