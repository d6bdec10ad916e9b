/* ftl_allreduce_exact: the exact sum of micro-shard rows (ftl/elastic.h, comm/comm_exact.c) on the current
 * view's data communicator, with the integers in a scratch buffer the training keeps between steps (a large
 * model's gradient would otherwise cost a fresh allocation, and its page faults, every step). */
#include "agent/agent_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "training.h"

ftl_err ftl_allreduce_exact(ftl_agent *a, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
			    float *out)
{
	ftl_training *t = ftl_training_of(a);
	if (!t)
		return FTL_ERR_SYSTEM;
	char *err = t->exec.last_error;
	size_t err_len = sizeof(t->exec.last_error);
	if (!t->comm) {
		snprintf(err, err_len, "ftl_allreduce_exact: no communicator (call collectives inside ftl_execute)");
		return FTL_ERR_INVALID;
	}
	size_t need = ftl_comm_allreduce_exact_scratch(count);
	if (t->exact_scratch_bytes < need) {
		void *scratch = realloc(t->exact_scratch, need ? need : 1);
		if (!scratch) {
			snprintf(err, err_len, "ftl_allreduce_exact: out of memory for %zu bytes", need);
			return FTL_ERR_SYSTEM;
		}
		t->exact_scratch = scratch;
		t->exact_scratch_bytes = need;
	}
	ftl_err e = ftl_comm_allreduce_exact(t->comm, rows, n_rows, count, total_rows, out, t->exact_scratch);
	if (e != FTL_OK)
		snprintf(err, err_len, "%s", ftl_comm_error(t->comm));
	return e;
}
