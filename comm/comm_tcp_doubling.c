/* comm_tcp_doubling: allreduce in log2(n) rounds over the mesh links, for the sizes where the ring's
 * 2(n-1) steps cost more in latency than they save in bytes.
 *
 * Recursive doubling: in round k, v and v xor 2^k swap their whole partial sums and both reduce. Every
 * rank sends log2(n) buffers (the ring sends 2(n-1)/n), so it only wins while a round is latency.
 * Halving/doubling (Rabenseifner): the reduce-scatter halves the range each round (send the half the
 * partner keeps, reduce the half we keep), the all-gather doubles it back; 2(n-1)/n of the buffer like
 * the ring, in 2 log2(n) rounds instead of 2(n-1) steps.
 *
 * A world that is not a power of two folds first (the schedule in comm_tcp.h): the even rank of each of
 * the first n-p pairs hands its buffer to its odd neighbour and gets the result back at the end.
 *
 * Every rank gets the same bits: the two operands of every reduction are put in rank order (lower rank
 * first), partners reduce the same pairs of partial sums, and in halving each element is reduced by one
 * rank and copied to the others. Each round is a one-step plan of the stream engine on the partner's
 * link, with the sequence number of the collective, so headers still catch mismatched calls. */
#include <string.h>

#include "comm_tcp.h"

void ftl_comm_tcp_doubling_schedule(int n, int r, struct ftl_comm_tcp_doubling *d)
{
	int p = 1;
	while (p <= n / 2)
		p *= 2;
	int rem = n - p, v;
	memset(d, 0, sizeof(*d));
	d->p = p;
	d->fold_peer = -1;
	if (r < 2 * rem) {
		d->fold_peer = r ^ 1;
		d->is_folded_out = r % 2 == 0;
		if (d->is_folded_out)
			return;
		v = r / 2;
	} else {
		v = r - rem;
	}
	for (int k = 0; (1 << k) < p; k++) {
		int pv = v ^ (1 << k);
		d->partner[k] = pv < rem ? 2 * pv + 1 : pv + rem;
		d->n_rounds++;
	}
}

/* One round with peer: send [send, send_len) while receiving recv_len bytes into recv, reduced with own
 * when own is not NULL. */
struct round {
	int peer;
	const char *send;
	size_t send_len;
	char *recv;
	size_t recv_len;
	const char *own;
	bool is_final_reduce;
};

static ftl_err run_round(struct ftl_comm_tcp *t, struct ftl_comm_tcp_plan *p, const struct round *rd)
{
	struct ftl_comm_tcp_step *st = &t->steps[0];
	*st = (struct ftl_comm_tcp_step){
		.send = rd->send, .send_len = rd->send_len, .send_gate = -1,
		.recv = rd->recv, .recv_len = rd->recv_len, .own = rd->own,
		.is_incoming_first = rd->peer < t->base.rank, .is_final_reduce = rd->is_final_reduce,
	};
	p->steps = st;
	p->n_steps = 1;
	p->out_fd = p->in_fd = ftl_comm_tcp_link_fd(t, rd->peer);
	p->out_rank = p->in_rank = rd->peer;
	return ftl_comm_tcp_run(t, p);
}

ftl_err ftl_comm_tcp_allreduce_doubling(struct ftl_comm_tcp *t, const void *sendbuf, void *recvbuf, size_t count,
					ftl_dtype dtype, ftl_reduce_op op, bool is_halving)
{
	const struct ftl_comm_tcp_doubling *d = &t->dbl;
	struct ftl_comm_tcp_plan p = ftl_comm_tcp_plan_init(t, FTL_COMM_TCP_ALLREDUCE, count, dtype);
	p.hdr.op = (uint32_t)op;
	p.hdr.root = is_halving; /* both sides must run the same algorithm */
	p.reduce = ftl_comm_reduce_kernel(dtype, op);
	p.divisor = op == FTL_AVG ? t->base.world_size : 1;
	size_t elem = p.elem_size, bytes = count * elem;
	const char *src = sendbuf;
	char *dst = recvbuf;
	ftl_err e;
	if (d->is_folded_out) {
		struct round give = {.peer = d->fold_peer, .send = src, .send_len = bytes};
		struct round take = {.peer = d->fold_peer, .recv = dst, .recv_len = bytes};
		if ((e = run_round(t, &p, &give)) != FTL_OK)
			return e;
		return run_round(t, &p, &take);
	}
	const char *cur = src; /* where our partial sum is: sendbuf until the first reduction */
	if (d->fold_peer >= 0) {
		struct round take = {.peer = d->fold_peer, .recv = dst, .recv_len = bytes, .own = src};
		if ((e = run_round(t, &p, &take)) != FTL_OK)
			return e;
		cur = dst;
	}
	if (!is_halving) {
		for (int k = 0; k < d->n_rounds; k++) {
			if (cur == dst) { /* we reduce into what we send: send a copy */
				memcpy(t->stage, dst, bytes);
				cur = t->stage;
			}
			struct round r = {.peer = d->partner[k], .send = cur, .send_len = bytes, .recv = dst,
					  .recv_len = bytes, .own = cur, .is_final_reduce = k == d->n_rounds - 1};
			if ((e = run_round(t, &p, &r)) != FTL_OK)
				return e;
			cur = dst;
		}
	} else {
		/* Reduce-scatter, farthest partner first: the range we keep halves each round. */
		size_t lo = 0, hi = count, other_lo[FTL_COMM_TCP_LINKS_MAX], other_hi[FTL_COMM_TCP_LINKS_MAX];
		for (int k = d->n_rounds - 1; k >= 0; k--) {
			size_t mid = lo + (hi - lo) / 2;
			bool is_keeping_low = d->partner[k] > t->base.rank;
			size_t klo = is_keeping_low ? lo : mid, khi = is_keeping_low ? mid : hi;
			other_lo[k] = is_keeping_low ? mid : lo;
			other_hi[k] = is_keeping_low ? hi : mid;
			struct round r = {.peer = d->partner[k], .send = cur + other_lo[k] * elem,
					  .send_len = (other_hi[k] - other_lo[k]) * elem, .recv = dst + klo * elem,
					  .recv_len = (khi - klo) * elem, .own = cur + klo * elem, .is_final_reduce = k == 0};
			if ((e = run_round(t, &p, &r)) != FTL_OK)
				return e;
			cur = dst;
			lo = klo;
			hi = khi;
		}
		/* All-gather, nearest partner first: hand over what we have, take the other half. */
		for (int k = 0; k < d->n_rounds; k++) {
			struct round r = {.peer = d->partner[k], .send = dst + lo * elem, .send_len = (hi - lo) * elem,
					  .recv = dst + other_lo[k] * elem, .recv_len = (other_hi[k] - other_lo[k]) * elem};
			if ((e = run_round(t, &p, &r)) != FTL_OK)
				return e;
			lo = lo < other_lo[k] ? lo : other_lo[k];
			hi = hi > other_hi[k] ? hi : other_hi[k];
		}
	}
	if (d->fold_peer >= 0) {
		struct round give = {.peer = d->fold_peer, .send = dst, .send_len = bytes};
		return run_round(t, &p, &give);
	}
	return FTL_OK;
}
