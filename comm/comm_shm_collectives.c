/* comm_shm_collectives: the collectives as rounds over the shared segment (layout and the reuse rule in
 * comm_shm.h). A buffer larger than a slot goes in slot-sized pieces, one or two rounds each.
 *
 * Allreduce, two ways:
 * - direct (up to FTL_COMM_SHM_DIRECT_MAX bytes): every rank copies its piece into its slot; after one round every
 *   rank reduces all n slots itself. One wait per piece: latency is what counts at these sizes.
 * - sliced (beyond): after the first round each rank reduces its 1/n of the piece over all n slots into
 *   the result slot; after the second, every rank copies the whole result out. Each rank reads and
 *   writes about 3 x the piece instead of n x: bandwidth is what counts at these sizes.
 * Either way the operands go in rank order (slot 0 first), so every rank gets the same bits.
 *
 * Broadcast: the root's piece in its slot, one round, the others copy it out. Allgather: every rank's
 * piece in its slot, one round, everyone copies all. Barrier: one round with no data. */
#include <string.h>

#include "comm_reduce.h"
#include "comm_shm.h"

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* dst = slot 0 op slot 1 op ... op slot n-1 over elements [lo, lo + len) of round g's slots. */
static void reduce_slots(const struct ftl_comm_shm *s, uint64_t g, char *dst, size_t lo, size_t len,
			 ftl_dtype dtype, ftl_reduce_op op)
{
	int n = s->comm->world_size;
	size_t elem = ftl_dtype_size(dtype), off = lo * elem;
	ftl_comm_reduce_fn reduce = ftl_comm_reduce_kernel(dtype, op);
	reduce(dst, ftl_comm_shm_slot(s, n, g, 0) + off, ftl_comm_shm_slot(s, n, g, 1) + off, len);
	for (int k = 2; k < n; k++)
		reduce(dst, dst, ftl_comm_shm_slot(s, n, g, k) + off, len);
	if (op == FTL_AVG)
		ftl_comm_reduce_divide(dst, len, dtype, n);
}

ftl_err ftl_comm_shm_allreduce(struct ftl_comm_shm *s, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype, ftl_reduce_op op)
{
	int n = s->comm->world_size, rank = s->comm->rank;
	size_t elem = ftl_dtype_size(dtype), per = s->slot_bytes / elem;
	bool is_direct = count * elem <= FTL_COMM_SHM_DIRECT_MAX;
	const char *src = sendbuf;
	char *dst = recvbuf;
	struct ftl_comm_shm_op o;
	ftl_comm_shm_begin(s, &o, FTL_COMM_CALL_ALLREDUCE, count, dtype, op, 0);
	for (size_t off = 0; off < count; off += per) {
		size_t len = min_size(per, count - off);
		memcpy(ftl_comm_shm_slot(s, n, s->round + 1, rank), src + off * elem, len * elem);
		ftl_err e = ftl_comm_shm_sync(s, &o);
		if (e != FTL_OK)
			return e;
		if (is_direct) {
			reduce_slots(s, s->round, dst + off * elem, 0, len, dtype, op);
			continue;
		}
		size_t base = len / (size_t)n, extra = len % (size_t)n, r = (size_t)rank;
		size_t lo = r * base + (r < extra ? r : extra), mine = base + (r < extra);
		if (mine > 0)
			reduce_slots(s, s->round, ftl_comm_shm_slot(s, n, s->round + 1, n) + lo * elem, lo, mine, dtype, op);
		if ((e = ftl_comm_shm_sync(s, &o)) != FTL_OK)
			return e;
		memcpy(dst + off * elem, ftl_comm_shm_slot(s, n, s->round, n), len * elem);
	}
	return FTL_OK;
}

ftl_err ftl_comm_shm_broadcast(struct ftl_comm_shm *s, void *buf, size_t count, ftl_dtype dtype, int root,
			       bool held)
{
	int n = s->comm->world_size;
	size_t bytes = count * ftl_dtype_size(dtype);
	char *b = buf;
	struct ftl_comm_shm_op o;
	ftl_comm_shm_begin(s, &o, FTL_COMM_CALL_BROADCAST, count, dtype, FTL_SUM, root);
	for (size_t off = 0; off < bytes; off += s->slot_bytes) {
		size_t len = min_size(s->slot_bytes, bytes - off);
		if (s->comm->rank == root)
			memcpy(ftl_comm_shm_slot(s, n, s->round + 1, root), b + off, len);
		ftl_err e = ftl_comm_shm_sync(s, &o);
		if (e != FTL_OK)
			return e;
		if (s->comm->rank != root && !held)
			memcpy(b + off, ftl_comm_shm_slot(s, n, s->round, root), len);
	}
	return FTL_OK;
}

ftl_err ftl_comm_shm_allgather(struct ftl_comm_shm *s, const void *sendbuf, void *recvbuf, size_t count,
			       ftl_dtype dtype)
{
	int n = s->comm->world_size, rank = s->comm->rank;
	size_t bytes = count * ftl_dtype_size(dtype);
	const char *src = sendbuf;
	char *dst = recvbuf;
	if (src != dst + (size_t)rank * bytes)
		memcpy(dst + (size_t)rank * bytes, src, bytes);
	struct ftl_comm_shm_op o;
	ftl_comm_shm_begin(s, &o, FTL_COMM_CALL_ALLGATHER, count, dtype, FTL_SUM, 0);
	for (size_t off = 0; off < bytes; off += s->slot_bytes) {
		size_t len = min_size(s->slot_bytes, bytes - off);
		memcpy(ftl_comm_shm_slot(s, n, s->round + 1, rank), src + off, len);
		ftl_err e = ftl_comm_shm_sync(s, &o);
		if (e != FTL_OK)
			return e;
		for (int k = 0; k < n; k++)
			if (k != rank)
				memcpy(dst + (size_t)k * bytes + off, ftl_comm_shm_slot(s, n, s->round, k), len);
	}
	return FTL_OK;
}

ftl_err ftl_comm_shm_barrier(struct ftl_comm_shm *s)
{
	struct ftl_comm_shm_op o;
	ftl_comm_shm_begin(s, &o, FTL_COMM_CALL_BARRIER, 1, FTL_F32, FTL_SUM, 0);
	return ftl_comm_shm_sync(s, &o);
}
