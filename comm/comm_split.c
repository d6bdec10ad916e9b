/* comm_split: a communicator over some ranks of another (ftl_comm_split, include/ftl/comm.h). The parent's
 * bootstrap addresses of the chosen ranks become the child's bootstrap, and its comm id mixes the parent's
 * with the list, so the handshake of one split never accepts a rank of another or of the parent. A refusal
 * goes to the calling thread's diag (as a failed create's does), never into the parent's diagnostic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

/* The child's comm id: the parent's, mixed with every rank of the list (FNV-1a over them, then a final
 * multiply), never the parent's own. */
static uint64_t split_id(uint64_t parent, const int *ranks, int n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ parent;
	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)(uint32_t)ranks[i]) * 0x100000001b3ull;
	h = (h ^ (uint64_t)n) * 0x9e3779b97f4a7c15ull;
	return h == parent ? h + 1 : h;
}

static ftl_err check_ranks(struct ftl_comm *comm, const int *ranks, int n, int *self)
{
	*self = -1;
	if (ranks == NULL || n < 1 || n > comm->world_size)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "split: %d ranks of a world of %d", n, comm->world_size);
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= comm->world_size)
			return ftl_comm_fail_diag(FTL_ERR_INVALID, "split: the ranks must be ranks of 0..%d (rank %d at %d)",
						  comm->world_size - 1, ranks[i], i);
		for (int j = 0; j < i; j++)
			if (ranks[j] == ranks[i])
				return ftl_comm_fail_diag(FTL_ERR_INVALID, "split: rank %d is listed twice (at %d and %d)",
							  ranks[i], j, i);
		if (ranks[i] == comm->rank)
			*self = i;
	}
	if (*self < 0)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "split: this rank (%d) is not in the list", comm->rank);
	return FTL_OK;
}

ftl_err ftl_comm_split(ftl_comm *comm, const int *ranks, int n, const struct ftl_comm_config *cfg, ftl_comm **out)
{
	if (out != NULL)
		*out = NULL;
	if (comm == NULL || out == NULL)
		return ftl_comm_fail_diag(FTL_ERR_INVALID, "ftl_comm_split: the communicator or out is NULL");
	if (comm->broken != FTL_OK || atomic_load(&comm->is_aborted))
		return ftl_comm_fail_diag(comm->broken != FTL_OK ? comm->broken : FTL_ERR_ABORTED,
					  "split: the communicator is broken or aborted: %s", comm->error.message);
	if (comm->ops->peer_addr == NULL)
		return ftl_comm_fail_diag(FTL_ERR_UNSUPPORTED, "split: the %s backend cannot split (subgroups are tcp's)",
					  ftl_comm_backend_name(comm->backend));
	ftl_err e;
	int self = -1;
	if ((e = check_ranks(comm, ranks, n, &self)) != FTL_OK)
		return e;
	char *text = malloc((size_t)n * FTL_COMM_ADDR_MAX);
	if (text == NULL)
		return ftl_comm_fail_diag(FTL_ERR_SYSTEM, "split: out of memory");
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, FTL_COMM_ADDR_MAX, "%s%s", comm->ops->peer_addr(comm, ranks[i]),
					i + 1 < n ? "\n" : "");
	struct ftl_comm_config child;
	ftl_comm_config_init(&child);
	if (cfg != NULL)
		memcpy(&child, cfg, cfg->struct_size < sizeof(child) ? cfg->struct_size : sizeof(child));
	child.struct_size = sizeof(child);
	child.backend = comm->backend;
	child.rank = self;
	child.world_size = n;
	child.bootstrap = text;
	child.bootstrap_len = len;
	child.comm_id = split_id(comm->comm_id, ranks, n);
	e = ftl_comm_new(&child, out);
	free(text);
	return e;
}
