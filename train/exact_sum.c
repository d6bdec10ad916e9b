/* ftl_allreduce_exact: the exact sum of micro-shard rows (ftl/elastic.h, comm/comm_exact.c) on the current
 * view's data communicator, with the integers in a scratch buffer the training keeps between steps (a large
 * model's gradient would otherwise cost a fresh allocation, and its page faults, every step). */
#include "agent/agent_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "training.h"

/* The agent keeps the reason for ftl_last_error, the calling thread's diag holds it too. */
static ftl_err failed(ftl_training *t, ftl_err e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ftl_err failed(ftl_training *t, ftl_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->exec.last_error, sizeof(t->exec.last_error), fmt, ap);
	va_end(ap);
	return ftl_diag_set(e, "%s", t->exec.last_error);
}

ftl_err ftl_allreduce_exact(ftl_agent *a, const float *rows, size_t n_rows, size_t count, uint64_t total_rows,
			    float *out)
{
	ftl_training *t = ftl_training_of(a);
	if (!t)
		return ftl_diag_set(FTL_ERR_SYSTEM, "ftl_allreduce_exact: out of memory");
	if (!t->comm)
		return failed(t, FTL_ERR_INVALID, "ftl_allreduce_exact: no communicator (call collectives inside ftl_execute)");
	size_t need = ftl_comm_allreduce_exact_scratch(count);
	if (t->exact_scratch_bytes < need) {
		void *scratch = realloc(t->exact_scratch, need ? need : 1);
		if (!scratch)
			return failed(t, FTL_ERR_SYSTEM, "ftl_allreduce_exact: out of memory for %zu bytes", need);
		t->exact_scratch = scratch;
		t->exact_scratch_bytes = need;
	}
	ftl_err e = ftl_comm_allreduce_exact(t->comm, rows, n_rows, count, total_rows, out, t->exact_scratch);
	return e == FTL_OK ? e : failed(t, e, "%s", ftl_comm_error(t->comm));
}
