/* ftl_node: lifecycle, the inputs (each followed by ftl_node_settle, so the caller always finds the
 * consequences of its call among the outputs and events) and the output queues. */
#include "node_internal.h"

#include <stdlib.h>
#include <string.h>

#include "node_meta.h"

const char *const ftl_node_event_kind_strs[FTL_NODE_EVENT_KIND_MAX] = {"member", "view", "left"};

ftl_node *ftl_node_new(const ftl_node_options *o, int64_t now_us)
{
	ftl_node *n = calloc(1, sizeof(*n));
	if (!n) {
		ftl_diag_set(FTL_ERR_SYSTEM, "out of memory");
		return NULL;
	}
	n->feed_due_us = INT64_MAX;
	n->swim = ftl_swim_new(&o->swim, now_us);
	if (!n->swim) {
		free(n);
		return NULL;
	}
	if (o->is_training) {
		/* our replica as the others read it: from the metadata we gossip */
		ftl_rdv_member gossiped = {0};
		const uint8_t *user;
		size_t user_len;
		ftl_meta_unpack(o->swim.meta, o->swim.meta_len, &gossiped, &user, &user_len);
		ftl_rdv_options ro = {
			.name = o->swim.name,
			.generation = o->swim.generation,
			.data_addr = o->data_addr,
			.replica = gossiped.replica,
			.replica_index = gossiped.replica_index,
			.replica_size = gossiped.replica_size,
			.config = o->rdv,
			.blob_cb = o->blob_cb,
			.blob_ctx = o->blob_ctx,
		};
		n->rdv = ftl_rdv_new(&ro);
		if (!n->rdv) {
			ftl_node_delete(n);
			return NULL;
		}
		ftl_node_settle(n, now_us);
	}
	return n;
}

void ftl_node_delete(ftl_node *n)
{
	if (!n)
		return;
	ftl_rdv_delete(n->rdv);
	ftl_swim_delete(n->swim);
	free(n->events);
	free(n);
}

/* ---- inputs ---- */

void ftl_node_receive_datagram(ftl_node *n, int64_t now_us, const uint8_t *data, size_t len)
{
	ftl_swim_receive(n->swim, now_us, data, len);
	ftl_node_settle(n, now_us);
}

void ftl_node_receive_frame(ftl_node *n, int64_t now_us, const uint8_t *data, size_t len)
{
	if (!n->rdv)
		return;
	ftl_rdv_receive(n->rdv, now_us, data, len);
	ftl_node_settle(n, now_us);
}

void ftl_node_tick(ftl_node *n, int64_t now_us)
{
	ftl_swim_tick(n->swim, now_us); /* does only what is due */
	if (n->rdv && ftl_rdv_next_deadline(n->rdv) <= now_us)
		ftl_rdv_tick(n->rdv, now_us);
	ftl_node_settle(n, now_us);
}

int64_t ftl_node_next_deadline(const ftl_node *n)
{
	int64_t at = ftl_swim_next_deadline(n->swim);
	if (n->rdv && ftl_rdv_next_deadline(n->rdv) < at)
		at = ftl_rdv_next_deadline(n->rdv);
	return n->feed_due_us < at ? n->feed_due_us : at;
}

ftl_err ftl_node_push_pull_merge(ftl_node *n, int64_t now_us, const uint8_t *frame, size_t len, bool *is_join)
{
	ftl_err rc = ftl_swim_push_pull_merge(n->swim, now_us, frame, len, is_join);
	ftl_node_settle(n, now_us);
	return rc;
}

void ftl_node_check_done(ftl_node *n, int64_t now_us, const char *name, uint64_t generation, const char *addr,
			 ftl_swim_check_result result)
{
	ftl_swim_check_done(n->swim, now_us, name, generation, addr, result);
	ftl_node_settle(n, now_us);
}

void ftl_node_witnessed_deaths(ftl_node *n, int64_t now_us, const char *const *names, const uint64_t *generations,
			       size_t count)
{
	for (size_t i = 0; i < count; i++)
		ftl_swim_witnessed_death(n->swim, now_us, names[i], generations[i]);
	ftl_node_settle(n, now_us);
}

ftl_err ftl_node_add_known(ftl_node *n, int64_t now_us, const ftl_msg_alive *a)
{
	n->is_fed = false; /* fed at the next input: a list of thousands is added one call at a time */
	return ftl_swim_add_known(n->swim, now_us, a);
}

void ftl_node_comm_failed(ftl_node *n, int64_t now_us, const char *name)
{
	ftl_swim_hint(n->swim, now_us, name);
	ftl_node_settle(n, now_us);
}

/* ---- user requests ---- */

void ftl_node_leave(ftl_node *n, int64_t now_us)
{
	ftl_swim_leave(n->swim, now_us);
	ftl_node_settle(n, now_us);
}

ftl_err ftl_node_set_meta(ftl_node *n, int64_t now_us, const uint8_t *meta, uint16_t len)
{
	ftl_err rc = ftl_swim_set_meta(n->swim, now_us, meta, len);
	ftl_node_settle(n, now_us);
	return rc;
}

ftl_err ftl_node_key_op(ftl_node *n, int64_t now_us, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE])
{
	ftl_err rc = ftl_swim_key_op(n->swim, now_us, op, key);
	ftl_node_settle(n, now_us);
	return rc;
}

void ftl_node_request_rebuild(ftl_node *n, int64_t now_us, uint64_t epoch)
{
	if (!n->rdv)
		return;
	ftl_rdv_request_rebuild(n->rdv, now_us, epoch);
	ftl_node_settle(n, now_us);
}

void ftl_node_set_steps(ftl_node *n, uint64_t lineage, uint64_t steps)
{
	if (n->rdv)
		ftl_rdv_set_steps(n->rdv, lineage, steps);
}

ftl_err ftl_node_waive_quorum(ftl_node *n, int64_t now_us)
{
	if (!n->rdv)
		return ftl_diag_set(FTL_ERR_INVALID, "this node does not train (no rendezvous): no quorum to reset");
	ftl_err err = ftl_rdv_waive_quorum(n->rdv, now_us);
	if (err)
		return err;
	ftl_node_settle(n, now_us);
	return FTL_OK;
}

ftl_err ftl_node_request_bench(ftl_node *n, int64_t now_us, const char *name, uint64_t generation)
{
	if (!n->rdv)
		return ftl_diag_set(FTL_ERR_INVALID, "this node does not train (no rendezvous): nothing to bench");
	ftl_err err = ftl_rdv_request_bench(n->rdv, now_us, name, generation);
	if (err)
		return err;
	ftl_node_settle(n, now_us);
	return FTL_OK;
}

ftl_err ftl_node_request_max(ftl_node *n, int64_t now_us, uint32_t max_workers)
{
	if (!n->rdv)
		return ftl_diag_set(FTL_ERR_INVALID, "this node does not train (no rendezvous): no job to scale");
	ftl_err err = ftl_rdv_request_max(n->rdv, now_us, max_workers);
	if (err)
		return err;
	ftl_node_settle(n, now_us);
	return FTL_OK;
}

/* ---- outputs ---- */

bool ftl_node_next_output(ftl_node *n, ftl_swim_output *out) { return ftl_swim_next_output(n->swim, out); }

/* A frame for a member membership does not know (reaped, or never heard of) has nowhere to go: dropped. */
bool ftl_node_next_frame(ftl_node *n, ftl_node_frame *out)
{
	while (n->rdv && ftl_rdv_next_output(n->rdv, &out->msg)) {
		const ftl_member *m = ftl_swim_find(n->swim, out->msg.to);
		if (m) {
			strcpy(out->to_addr, m->addr);
			return true;
		}
		ftl_rdv_output_free(&out->msg);
	}
	return false;
}

void ftl_node_frame_free(ftl_node_frame *f) { ftl_rdv_output_free(&f->msg); }

void ftl_node_push_event(ftl_node *n, const ftl_node_event *ev)
{
	if (n->ev_len == n->ev_cap) {
		size_t cap = n->ev_cap ? 2 * n->ev_cap : 16;
		if (n->ev_cap >= FTL_NODE_EVENTS_MAX && ev->kind == FTL_NODE_EVENT_MEMBER) {
			n->events_lost++;
			return;
		}
		ftl_node_event *grown = malloc(cap * sizeof(*grown));
		if (!grown) {
			n->events_lost++;
			return;
		}
		for (size_t k = 0; k < n->ev_len; k++) /* unwrap the ring into the new array */
			grown[k] = n->events[(n->ev_head + k) % n->ev_cap];
		free(n->events);
		n->events = grown;
		n->ev_cap = cap;
		n->ev_head = 0;
	}
	n->events[(n->ev_head + n->ev_len) % n->ev_cap] = *ev;
	n->ev_len++;
}

bool ftl_node_next_event(ftl_node *n, ftl_node_event *ev)
{
	if (n->ev_len == 0)
		return false;
	*ev = n->events[n->ev_head];
	n->ev_head = (n->ev_head + 1) % n->ev_cap;
	n->ev_len--;
	return true;
}

/* ---- reading ---- */

ftl_swim *ftl_node_swim(const ftl_node *n) { return n->swim; }
const ftl_rdv *ftl_node_rdv(const ftl_node *n) { return n->rdv; }
bool ftl_node_has_left(const ftl_node *n) { return n->is_left_told; }
