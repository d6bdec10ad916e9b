/* comm_p2p: the point-to-point batch and the all-to-all built on it, as the public calls see them
 * (include/ftl/comm.h). Checks every op, answers an empty batch itself, and hands the rest to the backend's
 * p2p op in the order of the blocking calls (behind any outstanding request). The all-to-all is backend
 * agnostic: one batch of a send and a receive per other rank, and a copy of this rank's own block. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"

static ftl_err check_ops(struct ftl_comm *comm, const ftl_p2p_op *ops, int n_ops)
{
	if (n_ops < 0 || (n_ops > 0 && ops == NULL))
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "p2p: %d ops at %p", n_ops, (const void *)ops);
	for (int i = 0; i < n_ops; i++) {
		const ftl_p2p_op *o = &ops[i];
		const char *what = o->is_recv ? "recv" : "send";
		size_t bytes = 0;
		ftl_err err = ftl_comm_check_call(comm, what, o->dtype, o->count, 1, &bytes);
		if (err != FTL_OK)
			return err;
		if (o->peer < 0 || o->peer >= comm->world_size || o->peer == comm->rank)
			return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s (op %d): peer %d is not another rank of "
					     "0..%d (this is rank %d)", what, i, o->peer, comm->world_size - 1, comm->rank);
		if (o->count > 0 && o->buf == NULL)
			return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s (op %d): NULL buffer with count %zu", what, i,
					     o->count);
	}
	return FTL_OK;
}

ftl_err ftl_comm_p2p(ftl_comm *comm, const ftl_p2p_op *ops, int n_ops)
{
	if (comm == NULL)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "ftl_comm_p2p: the communicator is NULL");
	size_t unused = 0;
	ftl_err err = ftl_comm_check_call(comm, "p2p", FTL_U8, 0, 1, &unused);
	if (err == FTL_OK)
		err = check_ops(comm, ops, n_ops);
	if (err != FTL_OK || n_ops == 0)
		return err;
	if (comm->ops->p2p == NULL)
		return ftl_comm_fail(comm, FTL_ERR_UNSUPPORTED, false, "p2p: the %s backend has no point-to-point",
				     ftl_comm_backend_name(comm->backend));
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_P2P, .p2p_ops = ops, .count = (size_t)n_ops};
	return ftl_comm_async_call(comm, &call);
}

/* The element offset of each block (n + 1 entries: the last is the total), or -1 when they overflow. */
static int offsets(const size_t *counts, size_t count, int n, size_t *at)
{
	at[0] = 0;
	for (int q = 0; q < n; q++) {
		size_t c = counts != NULL ? counts[q] : count;
		if (c > SIZE_MAX - at[q])
			return -1;
		at[q + 1] = at[q] + c;
	}
	return 0;
}

ftl_err ftl_comm_alltoall(ftl_comm *comm, const void *sendbuf, const size_t *send_counts, void *recvbuf,
			  const size_t *recv_counts, size_t count, ftl_dtype dtype)
{
	if (comm == NULL)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "ftl_comm_alltoall: the communicator is NULL");
	size_t elem = 0;
	ftl_err err = ftl_comm_check_call(comm, "alltoall", dtype, 1, 1, &elem);
	if (err != FTL_OK)
		return err;
	int n = comm->world_size, r = comm->rank;
	size_t *at = malloc(2 * ((size_t)n + 1) * sizeof(*at));
	ftl_p2p_op *ops = malloc(2 * (size_t)n * sizeof(*ops));
	if (at == NULL || ops == NULL) {
		free(at);
		free(ops);
		return ftl_comm_fail(comm, FTL_ERR_SYSTEM, false, "alltoall: out of memory for %d ranks", n);
	}
	size_t *send_at = at, *recv_at = at + n + 1;
	if (offsets(send_counts, count, n, send_at) != 0 || offsets(recv_counts, count, n, recv_at) != 0 ||
	    send_at[n] > SIZE_MAX / elem || recv_at[n] > SIZE_MAX / elem)
		err = ftl_comm_fail(comm, FTL_ERR_INVALID, false, "alltoall: the counts overflow size_t");
	else if ((send_at[n] > 0 && sendbuf == NULL) || (recv_at[n] > 0 && recvbuf == NULL))
		err = ftl_comm_fail(comm, FTL_ERR_INVALID, false, "alltoall: a NULL buffer with elements to move");
	else if (ftl_comm_overlaps(sendbuf, send_at[n] * elem, recvbuf, recv_at[n] * elem))
		err = ftl_comm_fail(comm, FTL_ERR_INVALID, false, "alltoall: sendbuf and recvbuf overlap");
	else if (send_at[r + 1] - send_at[r] != recv_at[r + 1] - recv_at[r])
		err = ftl_comm_fail(comm, FTL_ERR_INVALID, false, "alltoall: this rank sends itself %zu elements and "
				    "receives %zu", send_at[r + 1] - send_at[r], recv_at[r + 1] - recv_at[r]);
	int n_ops = 0;
	/* Peers in the order r+1, r+2, ...: each rank starts with a different one, so no rank is everyone's first. */
	for (int k = 1; k < n && err == FTL_OK; k++) {
		int q = (r + k) % n;
		ops[n_ops++] = (ftl_p2p_op){.is_recv = 0, .peer = q, .buf = (char *)sendbuf + send_at[q] * elem,
					    .count = send_at[q + 1] - send_at[q], .dtype = dtype};
		int p = (r + n - k) % n;
		ops[n_ops++] = (ftl_p2p_op){.is_recv = 1, .peer = p, .buf = (char *)recvbuf + recv_at[p] * elem,
					    .count = recv_at[p + 1] - recv_at[p], .dtype = dtype};
	}
	if (err == FTL_OK)
		err = ftl_comm_p2p(comm, ops, n_ops);
	if (err == FTL_OK && recv_at[r + 1] > recv_at[r])
		memcpy((char *)recvbuf + recv_at[r] * elem, (const char *)sendbuf + send_at[r] * elem,
		       (recv_at[r + 1] - recv_at[r]) * elem);
	free(at);
	free(ops);
	return err;
}
