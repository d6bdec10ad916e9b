/* bench_comm: what the ftl and MPI allreduce benchmarks share, so their figures compare: the sizes, the
 * iteration counts, and the JSON line (nccl-tests convention: algbw = bytes / time,
 * busbw = algbw * 2(n-1)/n). */
#ifndef FTL_BENCH_COMM_H
#define FTL_BENCH_COMM_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* 1 KiB ... 128 MiB, by powers of four up to 64 MiB. */
static const size_t bench_comm_sizes[] = {
	1u << 10, 4u << 10, 16u << 10, 64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 128u << 20,
};
#define BENCH_COMM_N_SIZES (sizeof(bench_comm_sizes) / sizeof(bench_comm_sizes[0]))
#define BENCH_COMM_WARMUP 2

/* How many of the sizes are at most max_bytes (a decimal string; NULL: all of them); 0 when it is not a
 * number or smaller than the first size. */
static inline size_t bench_comm_n_sizes(const char *max_bytes)
{
	if (max_bytes == NULL)
		return BENCH_COMM_N_SIZES;
	char *end;
	unsigned long long max = strtoull(max_bytes, &end, 10);
	if (end == max_bytes || *end != '\0')
		return 0;
	size_t n = 0;
	while (n < BENCH_COMM_N_SIZES && bench_comm_sizes[n] <= max)
		n++;
	return n;
}

/* Timed iterations for a size: about 512 MiB moved in all, at least 3, at most 500. */
static inline int bench_comm_iters(size_t bytes)
{
	size_t n = (512u << 20) / bytes;
	return n < 3 ? 3 : n > 500 ? 500 : (int)n;
}

static inline void bench_comm_print(const char *impl, int ranks, size_t bytes, int iters, double seconds)
{
	double t = seconds / iters;
	double algbw = (double)bytes / t / 1e9;
	double busbw = algbw * 2.0 * (ranks - 1) / ranks;
	printf("{\"bench\":\"allreduce\",\"impl\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"dtype\":\"f32\",\"op\":\"sum\","
	       "\"iters\":%d,\"time_us\":%.1f,\"algbw_GBps\":%.3f,\"busbw_GBps\":%.3f}\n",
	       impl, ranks, bytes, iters, t * 1e6, algbw, busbw);
	fflush(stdout);
}

#endif
