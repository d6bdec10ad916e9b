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

/* Makes room for one more item in a ring-less FIFO (head, len) by compacting or growing; -1 on OOM. */
static int fifo_reserve(void **items, size_t size, size_t *head, size_t len, size_t *cap)
{
	if (*head + len < *cap)
		return 0;
	if (*head > 0) {
		memmove(*items, (char *)*items + *head * size, len * size);
		*head = 0;
		if (len < *cap)
			return 0;
	}
	size_t new_cap = *cap ? 2 * *cap : 16;
	void *grown = realloc(*items, new_cap * size);
	if (grown == NULL)
		return -1;
	*items = grown;
	*cap = new_cap;
	return 0;
}

/* The oldest item of a FIFO (head, len), or NULL when it is empty. */
static void *fifo_pop(void *items, size_t size, size_t *head, size_t *len)
{
	void *item;
	if (*len == 0)
		return NULL;
	item = (char *)items + *head * size;
	(*head)++;
	if (--*len == 0)
		*head = 0; /* the next push reuses the front: items stays valid until then */
	return item;
}

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
	rdv_queue *q = &r->outputs;
	ftl_rdv_output *out;
	if (q->len >= RDV_OUTPUT_MAX ||
	    fifo_reserve((void **)&q->items, sizeof *q->items, &q->head, q->len, &q->cap) != 0) {
		r->dropped++;
		return;
	}
	out = &q->items[q->head + q->len++];
	ftl_copy_str(out->to, to, sizeof out->to);
	out->data = f->data;
	out->len = len;
	f->refs++;
}

static void queue_inbox(ftl_rdv *r, const rdv_msg *m)
{
	rdv_inbox *in = &r->inbox;
	rdv_msg *copy;
	if (fifo_reserve((void **)&in->items, sizeof *in->items, &in->head, in->len, &in->cap) != 0) {
		r->dropped++;
		return;
	}
	copy = &in->items[in->head + in->len];
	*copy = *m;
	copy->view.members = NULL;
	if (rdv_view_copy(&copy->view, &m->view) != 0) {
		r->dropped++;
		return;
	}
	in->len++;
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
	rdv_send(r, to, &m);
}

void rdv_send_commit(ftl_rdv *r, const char *to)
{
	rdv_msg m = {.type = RDV_MSG_COMMIT, .view = r->view};
	rdv_send(r, to, &m);
}

bool rdv_inbox_pop(ftl_rdv *r, rdv_msg *m)
{
	rdv_msg *next = fifo_pop(r->inbox.items, sizeof *m, &r->inbox.head, &r->inbox.len);
	if (next != NULL)
		*m = *next;
	return next != NULL;
}

bool ftl_rdv_next_output(ftl_rdv *r, ftl_rdv_output *out)
{
	ftl_rdv_output *next = fifo_pop(r->outputs.items, sizeof *out, &r->outputs.head, &r->outputs.len);
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
	free(r->outputs.items);
	free(r->inbox.items);
	memset(&r->outputs, 0, sizeof r->outputs);
	memset(&r->inbox, 0, sizeof r->inbox);
}
