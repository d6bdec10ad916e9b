/* Everything a node says goes through rdv_send_all: the header is filled in one place (our name,
 * generation and view, which every message carries for the catch-up), then the message is encoded once and
 * shared by the outputs of every recipient (a commit of a large view to every member costs one encoding
 * and one buffer, not one per member), or, when addressed to ourselves, copied into the inbox. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rdv_internal.h"

/* Most outputs held for a caller that does not drain them; more are dropped (counted). */
#define RDV_OUTPUT_MAX (4 * FTL_RDV_MAX_MEMBERS)

/* One encoded message and the number of outputs (plus its maker, while sending) that point into it. An
 * output's data is frame->data; ftl_rdv_output_free finds the frame from there. */
typedef struct rdv_frame {
	size_t refs;               /* outputs pointing here, plus one while rdv_send_all is still queueing */
	uint8_t data[];            /* the encoded message */
} rdv_frame;

static rdv_frame *frame_of(uint8_t *data)
{
	return (rdv_frame *)(data - offsetof(rdv_frame, data));
}

static void frame_release(rdv_frame *f)
{
	if (f != NULL && --f->refs == 0)
		free(f);
}

static rdv_frame *frame_encode(const rdv_msg *m, size_t *len)
{
	uint8_t *buf;
	rdv_frame *f;
	if (rdv_encode(m, &buf, len) != 0)
		return NULL; /* cannot happen for what we build: every field is ours and valid */
	f = malloc(sizeof *f + *len);
	if (f != NULL) {
		f->refs = 1;
		memcpy(f->data, buf, *len);
	}
	free(buf);
	return f;
}

static void queue_output(ftl_rdv *r, const char *to, rdv_frame *f, size_t len)
{
	ftl_rdv_output *out;
	if (ftl_fifo_len(&r->outputs) >= RDV_OUTPUT_MAX || (out = ftl_fifo_push(&r->outputs)) == NULL) {
		r->dropped++;
		return;
	}
	ftl_copy_str(out->to, to, sizeof out->to);
	out->data = f->data;
	out->len = len;
	f->refs++;
}

static void queue_inbox(ftl_rdv *r, const rdv_msg *m)
{
	rdv_msg copy = *m, *slot;
	copy.view.members = NULL;
	if (ftl_rdv_view_copy(&copy.view, &m->view) != 0) {
		r->dropped++;
		return;
	}
	if ((slot = ftl_fifo_push(&r->inbox)) == NULL) {
		rdv_msg_free(&copy);
		r->dropped++;
		return;
	}
	*slot = copy;
}

void rdv_send_all(ftl_rdv *r, rdv_names to, rdv_msg *m)
{
	rdv_frame *f = NULL;
	size_t len = 0;
	ftl_copy_str(m->from, r->self.name, sizeof m->from);
	m->generation = r->self.generation;
	m->epoch = r->view.epoch;
	m->view_digest = r->view_digest;
	m->lineage = r->view.lineage;
	m->view_size = r->view.n;
	m->steps = r->steps;
	for (size_t i = 0; i < to.n; i++) {
		const char *name = to.first + i * to.stride;
		if (strcmp(name, r->self.name) == 0) {
			queue_inbox(r, m);
			continue;
		}
		if (f == NULL && (f = frame_encode(m, &len)) == NULL) {
			r->dropped++;
			return;
		}
		queue_output(r, name, f, len);
	}
	frame_release(f);
}

void rdv_send(ftl_rdv *r, const char *to, rdv_msg *m)
{
	rdv_send_all(r, (rdv_names){to, 1, 0}, m);
}

void rdv_send_ready(ftl_rdv *r, const char *to)
{
	rdv_msg m = {.type = RDV_MSG_READY};
	ftl_copy_str(m.data_addr, r->self.data_addr, sizeof m.data_addr);
	m.candidate_digest = r->cand.digest;
	m.survivors_digest = r->cand.survivors_digest;
	m.rebuild_epoch = rdv_is_rebuild_wanted(r) ? r->view.epoch : 0;
	m.waive_epoch = r->view.epoch > 0 && r->waive_epoch == r->view.epoch ? r->waive_epoch : 0;
	if (rdv_is_scale_wanted(r)) {
		m.max_epoch = r->max_epoch;
		m.max_request = r->max_request;
	}
	if (rdv_is_bench_wanted(r)) {
		m.bench_epoch = r->bench_epoch;
		m.bench = r->bench_request;
	}
	rdv_send(r, to, &m);
}

void rdv_send_commit(ftl_rdv *r, const char *to)
{
	rdv_msg m = {.type = RDV_MSG_COMMIT, .view = r->view};
	rdv_send(r, to, &m);
}

void rdv_send_commit_to_peers(ftl_rdv *r)
{
	rdv_msg m = {.type = RDV_MSG_COMMIT, .view = r->view};
	_Static_assert(offsetof(ftl_rdv_member, name) == 0, "rdv_names walks the member array by name");
	/* To ourselves too: a no-op there, and it keeps this one shared encoding. */
	if (r->peers.n > 0)
		rdv_send_all(r, (rdv_names){r->peers.members[0].name, r->peers.n, sizeof r->peers.members[0]}, &m);
}

bool rdv_inbox_pop(ftl_rdv *r, rdv_msg *m)
{
	rdv_msg *next = ftl_fifo_pop(&r->inbox);
	if (next != NULL)
		*m = *next;
	return next != NULL;
}

bool ftl_rdv_next_output(ftl_rdv *r, ftl_rdv_output *out)
{
	ftl_rdv_output *next = ftl_fifo_pop(&r->outputs);
	if (next != NULL)
		*out = *next;
	return next != NULL;
}

void ftl_rdv_output_free(ftl_rdv_output *out)
{
	if (out->data != NULL)
		frame_release(frame_of(out->data));
	out->data = NULL;
	out->len = 0;
}

void rdv_queues_free(ftl_rdv *r)
{
	ftl_rdv_output out;
	rdv_msg m;
	while (ftl_rdv_next_output(r, &out))
		ftl_rdv_output_free(&out);
	while (rdv_inbox_pop(r, &m))
		rdv_msg_free(&m);
	ftl_fifo_destroy(&r->outputs);
	ftl_fifo_destroy(&r->inbox);
}
