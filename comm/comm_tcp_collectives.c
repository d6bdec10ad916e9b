/* comm_tcp_collectives: each collective as a plan of ring steps for comm_tcp_engine.
 *
 * Allreduce picks an algorithm by size and world size (ftl_comm_tcp_choose(), with the measured crossovers); the
 * doubling and halving ones live in comm_tcp_doubling.c. The ring is the bandwidth-optimal one: the buffer is cut into world_size chunks; in n-1 reduce-scatter
 * steps every rank sends one chunk and reduces the one it receives, so each rank ends up owning one fully
 * reduced chunk; in n-1 all-gather steps the owned chunks go round and land straight in recvbuf. In every
 * step after the first a rank forwards exactly the chunk it received in the step before, which is what
 * lets the engine pipeline the whole thing at segment granularity. Each rank sends 2(n-1)/n of the buffer.
 *
 * Broadcast is a pipelined chain root -> root+1 -> ... -> root-1: each rank receives into buf and forwards
 * what has landed. Allgather is the all-gather half of the ring. Barrier is an allgather of one byte per
 * rank: nobody gets every byte before everybody has sent theirs. */
#include <string.h>

#include "comm_tcp.h"

const char *const ftl_comm_tcp_kind_strs[FTL_COMM_TCP_KIND_MAX] = {
	[FTL_COMM_TCP_ALLREDUCE] = "allreduce",
	[FTL_COMM_TCP_BROADCAST] = "broadcast",
	[FTL_COMM_TCP_ALLGATHER] = "allgather",
	[FTL_COMM_TCP_BARRIER] = "barrier",
	[FTL_COMM_TCP_P2P] = "p2p",
};

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

const char *const ftl_comm_tcp_algo_strs[FTL_COMM_TCP_ALGO_MAX] = {
	[FTL_COMM_TCP_ALGO_AUTO] = "auto",
	[FTL_COMM_TCP_ALGO_RING] = "ring",
	[FTL_COMM_TCP_ALGO_DOUBLING] = "doubling",
	[FTL_COMM_TCP_ALGO_HALVING] = "halving",
};

/* Byte offset and length of chunk c when count elements are cut into n nearly equal chunks. */
static void chunk(size_t count, int n, int c, size_t elem, size_t *off, size_t *len)
{
	size_t base = count / (size_t)n, extra = count % (size_t)n, uc = (size_t)c;
	*off = (uc * base + (uc < extra ? uc : extra)) * elem;
	*len = (base + (uc < extra)) * elem;
}

static ftl_err ring_allreduce(struct ftl_comm_tcp *t, const void *sendbuf, void *recvbuf, size_t count,
			      ftl_dtype dtype, ftl_reduce_op op)
{
	int n = t->base.world_size, r = t->base.rank;
	size_t elem = ftl_dtype_size(dtype);
	struct ftl_comm_tcp_plan p = ftl_comm_tcp_plan_init(t, FTL_COMM_TCP_ALLREDUCE, count, dtype);
	p.hdr.op = (uint32_t)op;
	p.reduce = ftl_comm_reduce_kernel(dtype, op);
	p.divisor = op == FTL_AVG ? n : 1;
	p.n_steps = 2 * (n - 1);
	const char *src = sendbuf;
	char *dst = recvbuf;
	for (int s = 0; s < p.n_steps; s++) {
		struct ftl_comm_tcp_step *st = &t->steps[s];
		size_t off, len;
		chunk(count, n, mod(r - s, n), elem, &off, &len);
		st->send = (s == 0 ? src : dst) + off; /* step 0 sends our own data, later ones forward */
		st->send_len = len;
		st->send_gate = s - 1;
		chunk(count, n, mod(r - s - 1, n), elem, &off, &len);
		st->recv = dst + off;
		st->recv_len = len;
		st->own = s < n - 1 ? src + off : NULL; /* reduce-scatter reduces, all-gather lands */
		st->is_final_reduce = s == n - 2;
	}
	return ftl_comm_tcp_run(t, &p);
}

/* Which allreduce for a size and world size. The crossovers are measured on the 2-core loopback host that
 * runs 2 and 4 ranks, busbw in GB/s, two runs each, interleaved (the spread is wide; the ordering held in
 * both runs where the figures below say so). First measured 2026-11-12:
 *   for r in 1 2; do for n in 2 4; do for a in ring doubling halving; do
 *     build-rel/bench/comm/bench_comm_tcp $n $a; done; done; done
 * and again on 2026-11-23, after the small-message spin (2 ranks spin, 4 ranks on 2 cores do not), with
 * the same loop up to 16 MiB, and once more with lo limited to 10 Gbit/s (bench/comm/compressed_on_link.sh
 * says how) to see which ordering survives where bytes cost more than the CPU:
 *                      doubling      halving       ring          10 Gbit/s: doubling halving ring
 *   4 ranks   4 KiB    0.122 0.094   0.047 0.044   0.031 0.028              0.039    0.046   0.028
 *            64 KiB    0.874 0.776   0.682 0.615   0.417 0.261              0.233    0.317   0.317
 *           256 KiB    1.635 1.472   1.460 1.465   0.958 0.554              0.234    0.311   0.309
 *             1 MiB    2.354 1.967   1.934 1.904   1.022 0.671              0.312    0.312   0.312
 *             4 MiB    1.195 1.050   1.028 0.964   0.878 0.847              0.312    0.312   0.312
 *            16 MiB    1.046 1.043   0.930 0.929   1.032 0.908
 *   2 ranks   4 KiB    0.575 0.447   0.227 0.252   0.282 0.306              0.131    0.091   0.092
 *            64 KiB    2.665 2.062   2.063 2.026   2.291 2.635              0.664    0.664   0.664
 *           256 KiB    4.398 3.460   3.362 2.857   2.191 4.525              0.625    0.623   0.624
 *             1 MiB    4.994 4.139   4.408 3.379   4.092 3.673              0.624    0.624   0.624
 *             4 MiB    2.478 2.330   2.300 2.322   2.289 1.882              0.623    0.624   0.624
 *            16 MiB    2.110 1.978   1.810 1.606   2.332 1.897
 * So: doubling up to 64 KiB (latency: log2 n rounds); above, at 2 ranks, doubling up to its staging buffer
 * (256 KiB): with two ranks halving sends the same bytes as doubling in two rounds instead of one. Above
 * that a 2-rank doubling ran as halving, which lost to the ring at 1 MiB in 6 of 6 interleaved runs on
 * 2026-11-27 (3.0-3.6 GB/s against 3.7-5.6; Open MPI tcp 4.0-4.3 in the same session): at two ranks the
 * ring is halving's two rounds pipelined by segment, so the all-gather of the first reduced segment goes
 * out while the rest is still being reduced. So at 2 ranks, the ring above 256 KiB. At more ranks halving
 * up to 2 MiB: doubling's log2 n whole buffers win on loopback,
 * where bytes are cheap, but lose to halving's 2(n-1)/n of the buffer on the limited link (64-256 KiB).
 * The pipelined ring beyond 2 MiB (it overlaps the reduction with the wire; halving's rounds do not).
 * Worlds above 4 were not measured here (2 cores); doubling's bytes grow with log2 n, so its crossover can
 * only move down there, and halving's advantage in rounds only grows. */
enum ftl_comm_tcp_algo ftl_comm_tcp_choose(int n, size_t bytes)
{
	if (bytes <= (64u << 10))
		return FTL_COMM_TCP_ALGO_DOUBLING;
	if (n == 2)
		return bytes <= FTL_COMM_TCP_STAGE ? FTL_COMM_TCP_ALGO_DOUBLING : FTL_COMM_TCP_ALGO_RING;
	if (bytes <= (2u << 20))
		return FTL_COMM_TCP_ALGO_HALVING;
	return FTL_COMM_TCP_ALGO_RING;
}

void ftl_comm_tcp_force_algo(struct ftl_comm *comm, enum ftl_comm_tcp_algo algo)
{
	((struct ftl_comm_tcp *)comm)->forced = algo;
}

ftl_err ftl_comm_tcp_allreduce(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype, ftl_reduce_op op)
{
	struct ftl_comm_tcp *t = (struct ftl_comm_tcp *)comm;
	size_t bytes = count * ftl_dtype_size(dtype);
	if (comm->world_size == 1) {
		if (sendbuf != recvbuf)
			memcpy(recvbuf, sendbuf, bytes);
		return FTL_OK;
	}
	if (t->shm != NULL)
		return ftl_comm_shm_allreduce(t->shm, sendbuf, recvbuf, count, dtype, op);
	switch (t->forced != FTL_COMM_TCP_ALGO_AUTO ? t->forced : ftl_comm_tcp_choose(comm->world_size, bytes)) {
	case FTL_COMM_TCP_ALGO_DOUBLING:
		/* Doubling sends from the staging buffer: beyond it, a forced doubling runs halving. */
		return ftl_comm_tcp_allreduce_doubling(t, sendbuf, recvbuf, count, dtype, op, bytes > FTL_COMM_TCP_STAGE);
	case FTL_COMM_TCP_ALGO_HALVING:
		return ftl_comm_tcp_allreduce_doubling(t, sendbuf, recvbuf, count, dtype, op, true);
	default:
		return ring_allreduce(t, sendbuf, recvbuf, count, dtype, op);
	}
}

/* A chain from the root around the ring, each rank forwarding as bytes land: a holder (held) in it still
 * receives and forwards, so only shared memory spares it. */
ftl_err ftl_comm_tcp_broadcast(struct ftl_comm *comm, void *buf, size_t count, ftl_dtype dtype, int root,
			       bool held)
{
	struct ftl_comm_tcp *t = (struct ftl_comm_tcp *)comm;
	int n = comm->world_size, r = comm->rank;
	if (n == 1)
		return FTL_OK;
	if (t->shm != NULL)
		return ftl_comm_shm_broadcast(t->shm, buf, count, dtype, root, held);
	struct ftl_comm_tcp_plan p = ftl_comm_tcp_plan_init(t, FTL_COMM_TCP_BROADCAST, count, dtype);
	p.hdr.root = root;
	p.n_steps = 1;
	size_t bytes = count * p.elem_size;
	struct ftl_comm_tcp_step *st = &t->steps[0];
	if (r != root) { /* receive from prev */
		st->recv = buf;
		st->recv_len = bytes;
	}
	if (ftl_comm_tcp_next(t) != root) { /* forward to next, as it lands unless we are the root */
		st->send = buf;
		st->send_len = bytes;
		st->send_gate = r == root ? -1 : 0;
	}
	return ftl_comm_tcp_run(t, &p);
}

/* The all-gather ring over blocks of `bytes`, with our own block already in place in recvbuf. */
static ftl_err gather_ring(struct ftl_comm_tcp *t, struct ftl_comm_tcp_plan *p, char *recvbuf, size_t bytes)
{
	int n = t->base.world_size, r = t->base.rank;
	p->n_steps = n - 1;
	for (int s = 0; s < n - 1; s++) {
		struct ftl_comm_tcp_step *st = &t->steps[s];
		st->send = recvbuf + (size_t)mod(r - s, n) * bytes;
		st->send_len = bytes;
		st->send_gate = s - 1;
		st->recv = recvbuf + (size_t)mod(r - s - 1, n) * bytes;
		st->recv_len = bytes;
	}
	return ftl_comm_tcp_run(t, p);
}

ftl_err ftl_comm_tcp_allgather(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype)
{
	struct ftl_comm_tcp *t = (struct ftl_comm_tcp *)comm;
	size_t bytes = count * ftl_dtype_size(dtype);
	char *own = (char *)recvbuf + (size_t)comm->rank * bytes;
	if (sendbuf != own)
		memcpy(own, sendbuf, bytes);
	if (comm->world_size == 1)
		return FTL_OK;
	if (t->shm != NULL)
		return ftl_comm_shm_allgather(t->shm, sendbuf, recvbuf, count, dtype);
	struct ftl_comm_tcp_plan p = ftl_comm_tcp_plan_init(t, FTL_COMM_TCP_ALLGATHER, count, dtype);
	return gather_ring(t, &p, recvbuf, bytes);
}

ftl_err ftl_comm_tcp_barrier(struct ftl_comm *comm)
{
	struct ftl_comm_tcp *t = (struct ftl_comm_tcp *)comm;
	if (comm->world_size == 1)
		return FTL_OK;
	if (t->shm != NULL)
		return ftl_comm_shm_barrier(t->shm);
	/* One byte per rank; the scratch segment is idle outside allreduce and big enough for any world. */
	struct ftl_comm_tcp_plan p = ftl_comm_tcp_plan_init(t, FTL_COMM_TCP_BARRIER, 1, FTL_F32);
	return gather_ring(t, &p, t->scratch, 1);
}
