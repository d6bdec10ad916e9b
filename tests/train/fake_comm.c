/* The comm double (see fake_comm.h). */
#include "fake_comm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ftl/ftl.h>

unsigned char fake_device_memory[FAKE_DEVICE_BYTES];

bool fake_is_device_pointer(const void *p)
{
	uintptr_t x = (uintptr_t)p, lo = (uintptr_t)fake_device_memory;
	return x >= lo && x < lo + FAKE_DEVICE_BYTES;
}

static ftl_err see(struct ftl_comm *c, const void *p)
{
	fake_comm *f = (fake_comm *)c;
	f->calls++;
	if (p && fake_is_device_pointer(p))
		f->device_pointers++;
	else if (p)
		f->host_pointers++;
	ftl_err e = f->fail_next;
	if (e == FTL_OK)
		return FTL_OK;
	f->fail_next = FTL_OK;
	return ftl_comm_fail(c, e, true, "fake comm: a peer is gone (scripted)");
}

static ftl_err fake_allreduce(struct ftl_comm *c, const void *s, void *r, size_t n, ftl_dtype d, ftl_reduce_op op)
{
	ftl_err e = see(c, r);
	int64_t *words = r;
	if (e == FTL_OK && s == r && d == FTL_I64 && op == FTL_MIN && c->world_size > 1)
		for (size_t i = 0; i < n; i++)
			words[i] = words[i] < ((fake_comm *)c)->peers_i64 ? words[i] : ((fake_comm *)c)->peers_i64;
	return e;
}

static void tape_broadcast(fake_tape *t, bool is_root, void *buf, size_t len)
{
	if (is_root) {
		if (t->n == FAKE_TAPE_MAX || !(t->bytes[t->n] = malloc(len)))
			abort();
		memcpy(t->bytes[t->n], buf, len);
		t->len[t->n++] = len;
		return;
	}
	if (t->played == t->n || t->len[t->played] != len)
		abort(); /* the ranks disagree on what is broadcast: a bug the test must see */
	memcpy(buf, t->bytes[t->played++], len);
}

static ftl_err fake_broadcast(struct ftl_comm *c, void *buf, size_t n, ftl_dtype d, int root, bool held)
{
	(void)held;
	ftl_err e = see(c, buf);
	fake_comm *f = (fake_comm *)c;
	if (e == FTL_OK && f->tape)
		tape_broadcast(f->tape, c->rank == root, buf, n * ftl_dtype_size(d));
	return e;
}

static ftl_err fake_allgather(struct ftl_comm *c, const void *s, void *r, size_t n, ftl_dtype d) { return see(c, r); }

static ftl_err fake_barrier(struct ftl_comm *c) { return see(c, NULL); }

static void fake_abort(struct ftl_comm *c) {}

static void fake_destroy(struct ftl_comm *c)
{
	fake_comm *f = (fake_comm *)c;
	if (f->destroyed)
		(*f->destroyed)++;
	free(f);
}

static const struct ftl_comm_backend_ops fake_ops = {
	.allreduce = fake_allreduce,
	.broadcast = fake_broadcast,
	.allgather = fake_allgather,
	.barrier = fake_barrier,
	.abort = fake_abort,
	.destroy = fake_destroy,
};

fake_comm *fake_comm_new(ftl_comm_backend backend, int rank, int world)
{
	fake_comm *f = calloc(1, sizeof(*f));
	if (!f)
		abort();
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.backend = backend;
	cfg.rank = rank;
	cfg.world_size = world;
	ftl_comm_base_init(&f->base, &fake_ops, &cfg);
	f->is_device = backend == FTL_COMM_NCCL;
	return f;
}

void fake_tape_free(fake_tape *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->bytes[i]);
	memset(t, 0, sizeof(*t));
}
