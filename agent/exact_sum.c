/* ftl_allreduce_exact: the exact sum of micro-shard rows (ftl/elastic.h, comm/comm_exact.c) on the current
 * view's communicator, with the integers in a scratch buffer the agent keeps between steps (a large model's
 * gradient would otherwise cost a fresh allocation, and its page faults, every step). */
#include "agent_internal.h"

#include <stdio.h>
#include <stdlib.h>

ftl_err ftl_allreduce_exact(ftl_agent *a, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
			    float *out)
{
	ftl_training *t = &a->train;
	if (!t->comm) {
		snprintf(t->last_error, sizeof(t->last_error),
			 "ftl_allreduce_exact: no communicator (call collectives inside ftl_execute)");
		return FTL_ERR_INVALID;
	}
	ftl_batch_runtime *r = &t->batch;
	size_t need = ftl_comm_allreduce_exact_scratch(count);
	if (r->scratch_bytes < need) {
		void *scratch = realloc(r->scratch, need ? need : 1);
		if (!scratch) {
			snprintf(t->last_error, sizeof(t->last_error), "ftl_allreduce_exact: out of memory for %zu bytes", need);
			return FTL_ERR_SYSTEM;
		}
		r->scratch = scratch;
		r->scratch_bytes = need;
	}
	ftl_err e = ftl_comm_allreduce_exact(t->comm, rows, n_rows, count, total_rows, out, r->scratch);
	if (e != FTL_OK)
		snprintf(t->last_error, sizeof(t->last_error), "%s", ftl_comm_error(t->comm));
	return e;
}
