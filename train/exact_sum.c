/* ftl_allreduce_exact: the exact sum of micro-shard rows (ftl/elastic.h, comm/comm_exact.c) on the current
 * view's data communicator, with the integers in a scratch buffer the training keeps between steps (a large
 * model's gradient would otherwise cost a fresh allocation, and its page faults, every step). */
#include "ftl/elastic.h"

#include <stdio.h>
#include <stdlib.h>

#include "agent/agent_training.h"
#include "training.h"


ftl_err ftl_allreduce_exact(ftl_agent *a, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
			    float *out)
{
	ftl_training *t = ftl_training_of(a);
	if (!t)
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_allreduce_exact: out of memory");
	if (!t->comm)
		return ftl_training_fail(t, FTL_ERR_INVALID, "ftl_allreduce_exact: no communicator (call collectives inside ftl_execute)");
	size_t need = ftl_comm_allreduce_exact_scratch(count);
	if (t->exact_scratch_bytes < need) {
		void *scratch = realloc(t->exact_scratch, need ? need : 1);
		if (!scratch)
			return ftl_training_fail(t, FTL_ERR_SYSTEM, "ftl_allreduce_exact: out of memory for %zu bytes", need);
		t->exact_scratch = scratch;
		t->exact_scratch_bytes = need;
	}
	ftl_err e = ftl_comm_allreduce_exact(t->comm, rows, n_rows, count, total_rows, out, t->exact_scratch);
	return e == FTL_OK ? e : ftl_training_fail(t, e, "%s", ftl_comm_error(t->comm));
}
