/* The job's shape, packed and compared (why a fixed-size table: state_shape.h). The comparison names the
 * first difference in the order a user fixes them: the backend, the global batch, the sampler, then the
 * buffers (one missing here or there, a size, the memory kind, the order). */
#include "state_shape.h"

#include <stdio.h>
#include <string.h>

/* Slot i of a packed table. */
typedef struct shape_buffer {
	char name[FTL_SHAPE_NAME_WORDS * 8];
	int64_t bytes;
	int64_t is_device;
} shape_buffer;

enum { W_BACKEND, W_N_BUFFERS, W_DATASET, W_BATCH_PER_RANK, W_SEED, W_GLOBAL_BATCH, W_MAX_PER_RANK, W_REPRO,
       W_ORDER };
/* The bits of W_REPRO: FTL_REPRODUCIBLE, and (0.4.5) FTL_SLOW_POLICY=rebalance, under which every rank must
 * compute the same shares: a worker without it (of an older ftl too, which packs 0 there) is refused. */
enum { SHAPE_REPRODUCIBLE = 1, SHAPE_REBALANCED = 2 };

void ftl_shape_pack(const ftl_state_registry *r, int64_t *words)
{
	memset(words, 0, FTL_SHAPE_WORDS * sizeof(*words));
	words[W_BACKEND] = r->backend;
	words[W_N_BUFFERS] = r->n_buffers;
	words[W_DATASET] = (int64_t)r->dataset_size;
	words[W_BATCH_PER_RANK] = r->batch_per_rank;
	words[W_SEED] = (int64_t)r->sampler_seed;
	words[W_GLOBAL_BATCH] = (int64_t)r->batch.global_batch;
	words[W_MAX_PER_RANK] = r->batch.max_batch_per_rank;
	words[W_REPRO] = (r->batch.is_reproducible ? SHAPE_REPRODUCIBLE : 0) | (r->is_rebalanced ? SHAPE_REBALANCED : 0);
	words[W_ORDER] = r->order;
	for (int i = 0; i < r->n_buffers; i++) {
		int64_t *slot = words + FTL_SHAPE_FIXED_WORDS + i * FTL_SHAPE_BUFFER_WORDS;
		memcpy(slot, r->buffers[i].name, strnlen(r->buffers[i].name, FTL_SHAPE_NAME_WORDS * 8 - 1));
		slot[FTL_SHAPE_NAME_WORDS] = (int64_t)r->buffers[i].bytes;
		slot[FTL_SHAPE_NAME_WORDS + 1] = r->buffers[i].is_device;
	}
}

static shape_buffer slot_of(const int64_t *words, int i)
{
	shape_buffer b;
	const int64_t *slot = words + FTL_SHAPE_FIXED_WORDS + i * FTL_SHAPE_BUFFER_WORDS;
	memcpy(b.name, slot, sizeof(b.name));
	b.name[sizeof(b.name) - 1] = '\0'; /* rank 0 is authenticated, but a name is read as a string here */
	b.bytes = slot[FTL_SHAPE_NAME_WORDS];
	b.is_device = slot[FTL_SHAPE_NAME_WORDS + 1];
	return b;
}

static int buffer_count(const int64_t *words)
{
	int64_t n = words[W_N_BUFFERS];
	return n < 0 ? 0 : n > FTL_MAX_BUFFERS ? FTL_MAX_BUFFERS : (int)n;
}

/* The slot of the buffer named name, or -1 when absent. */
static int find_buffer(const int64_t *words, const char *name)
{
	for (int i = 0; i < buffer_count(words); i++)
		if (strcmp(slot_of(words, i).name, name) == 0)
			return i;
	return -1;
}

static const char *memory_of(int64_t is_device) { return is_device ? "device" : "host"; }

/* The first buffer difference between mine and the job's, in `why`; false when there is none. */
static bool buffer_difference(const int64_t *mine, const int64_t *job, char *why, size_t cap)
{
	int n_mine = buffer_count(mine), n_job = buffer_count(job);
	int len = n_mine == n_job ? 0 : snprintf(why, cap, "%d buffers here, %d in the job: ", n_mine, n_job);
	char *rest = why + len;
	size_t rest_cap = cap - (size_t)len;
	for (int i = 0; i < n_mine; i++) {
		shape_buffer b = slot_of(mine, i);
		int j = find_buffer(job, b.name);
		if (j < 0) {
			snprintf(rest, rest_cap, "buffer '%s' (%lld bytes) is registered here but not in the job", b.name,
				 (long long)b.bytes);
			return true;
		}
		shape_buffer theirs = slot_of(job, j);
		if (theirs.bytes != b.bytes) {
			snprintf(rest, rest_cap, "buffer '%s' is %lld bytes here but %lld in the job", b.name,
				 (long long)b.bytes, (long long)theirs.bytes);
			return true;
		}
		if (theirs.is_device != b.is_device) {
			snprintf(rest, rest_cap, "buffer '%s' is %s memory here but %s memory in the job", b.name,
				 memory_of(b.is_device), memory_of(theirs.is_device));
			return true;
		}
	}
	for (int j = 0; j < n_job; j++) {
		shape_buffer theirs = slot_of(job, j);
		if (find_buffer(mine, theirs.name) < 0) {
			snprintf(rest, rest_cap, "the job registers buffer '%s' (%lld bytes), this worker does not",
				 theirs.name, (long long)theirs.bytes);
			return true;
		}
	}
	for (int i = 0; i < n_mine; i++) {
		shape_buffer b = slot_of(mine, i), theirs = slot_of(job, i);
		if (strcmp(b.name, theirs.name) != 0) {
			snprintf(rest, rest_cap, "the buffers are registered in another order (buffer %d is '%s' here, '%s' "
				 "in the job)", i, b.name, theirs.name);
			return true;
		}
	}
	return false;
}

/* The first difference of settings (backend, global batch, sampler) in `why`; false when there is none. */
static bool setting_difference(const int64_t *mine, const int64_t *job, char *why, size_t cap)
{
	if (mine[W_BACKEND] != job[W_BACKEND]) {
		int64_t m = mine[W_BACKEND], j = job[W_BACKEND];
		bool is_known = m >= 0 && m < FTL_COMM_BACKEND_MAX && j >= 0 && j < FTL_COMM_BACKEND_MAX;
		snprintf(why, cap, "FTL_COMM=%s here but %s in the job", is_known ? ftl_comm_backend_strs[m] : "?",
			 is_known ? ftl_comm_backend_strs[j] : "?");
		return true;
	}
	if ((mine[W_REPRO] ^ job[W_REPRO]) & SHAPE_REBALANCED) {
		snprintf(why, cap, "FTL_SLOW_POLICY=rebalance %s (every worker must deal the global batch the same way; "
			 "the policy needs ftl 0.4.5 or later)", mine[W_REPRO] & SHAPE_REBALANCED ? "here but not in the job"
												: "in the job but not here");
		return true;
	}
	if (memcmp(mine + W_GLOBAL_BATCH, job + W_GLOBAL_BATCH, 3 * sizeof(*mine)) != 0) {
		snprintf(why, cap, "FTL_GLOBAL_BATCH=%lld FTL_MAX_BATCH_PER_RANK=%lld FTL_REPRODUCIBLE=%lld here but %lld, "
			 "%lld, %lld in the job (every worker must cut its steps the same way)",
			 (long long)mine[W_GLOBAL_BATCH], (long long)mine[W_MAX_PER_RANK],
			 (long long)(mine[W_REPRO] & SHAPE_REPRODUCIBLE), (long long)job[W_GLOBAL_BATCH],
			 (long long)job[W_MAX_PER_RANK], (long long)(job[W_REPRO] & SHAPE_REPRODUCIBLE));
		return true;
	}
	static const struct { int word; const char *what; } sampler[] = {
		{W_DATASET, "data set size"}, {W_BATCH_PER_RANK, "batch per rank"}, {W_SEED, "seed"},
	};
	if (mine[W_ORDER] != job[W_ORDER]) {
		int64_t m = mine[W_ORDER], j = job[W_ORDER];
		bool is_known = m >= 0 && m < FTL_SAMPLER_ORDER_MAX && j >= 0 && j < FTL_SAMPLER_ORDER_MAX;
		snprintf(why, cap, "the sampler's order is %s here but %s in the job (ftl_set_sampler_order)",
			 is_known ? ftl_sampler_order_strs[m] : "?", is_known ? ftl_sampler_order_strs[j] : "?");
		return true;
	}
	for (size_t i = 0; i < sizeof(sampler) / sizeof(sampler[0]); i++) {
		int w = sampler[i].word;
		if (mine[w] != job[w]) {
			snprintf(why, cap, "the sampler's %s is %lld here but %lld in the job (ftl_set_sampler)",
				 sampler[i].what, (long long)mine[w], (long long)job[w]);
			return true;
		}
	}
	return false;
}

ftl_err ftl_shape_check(const ftl_state_registry *r, const int64_t *rank0)
{
	int64_t mine[FTL_SHAPE_WORDS];
	char why[512];
	ftl_shape_pack(r, mine);
	if (memcmp(mine, rank0, sizeof(mine)) == 0)
		return FTL_OK;
	if (!setting_difference(mine, rank0, why, sizeof(why)) && !buffer_difference(mine, rank0, why, sizeof(why)))
		snprintf(why, sizeof(why), "the registered buffers differ from the job's (two share a name?)");
	return ftl_diag_set(FTL_ERR_REFUSED, "ftl: refused by the job: %s; every worker of a job must register the same "
			    "state with the same settings: start this one with the job's program and settings", why);
}
