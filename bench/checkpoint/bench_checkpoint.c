/* Checkpoint cost (issue 6), per state size, on the disk of the given directory:
 *  - write throughput: the writer thread's checkpoint (hash, write, fsync, rename, fsync dir) against a
 *    plain sequential write + fsync of the same bytes in the same directory, alternated, median of rounds;
 *  - the training step's stall: what ftl_checkpoint_after_step costs the training thread (the staging
 *    copy) against the write it hands off (target: under 10% of it); the first checkpoint of a run is
 *    reported apart (the writer faults its staging buffer in during the steps before it);
 *  - a step's slowdown while the writer runs: a fixed compute loop timed with the writer idle and busy.
 * Usage: bench_checkpoint [dir (default /tmp)] [size_mb ...] (default 100 1024). One JSON line per figure.
 * Files are deleted as it goes. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "base/log.h"

#define ROUNDS 3
#define CHUNK (4u << 20)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double median3(const double v[ROUNDS])
{
	double a = v[0], b = v[1], c = v[2];
	return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

/* The baseline: what `dd conv=fsync` does, into the same directory. Seconds, or -1. */
static double plain_write(const char *dir, const uint8_t *data, size_t len)
{
	char path[FTL_CKPT_PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/plain.bin", dir);
	double start = now_s();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	for (size_t off = 0; off < len; off += CHUNK) {
		size_t n = len - off < CHUNK ? len - off : CHUNK;
		if (write(fd, data + off, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
	}
	int rc = fsync(fd) | close(fd);
	double took = now_s() - start;
	unlink(path);
	return rc == 0 ? took : -1;
}

static volatile float sink;

/* A stand-in for a step's compute: in-cache float work of a fixed size. Seconds. */
static double compute_step(void)
{
	static float v[4096];
	double start = now_s();
	for (int r = 0; r < 3000; r++)
		for (int i = 0; i < 4096; i++)
			v[i] = v[i] * 0.999f + (float)i * 1e-6f;
	sink = v[4095];
	return now_s() - start;
}

/* Pseudo-random bytes: nothing on the way may compress them. */
static void fill(uint8_t *p, size_t len)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

typedef struct bench_job {
	ftl_training_config cfg;
	ftl_state_registry r;
	ftl_checkpoints c;
	char last_error[512];
	uint8_t *state;
	size_t bytes;
} bench_job;

static ftl_logger bench_log; /* warn and up: the figures, not the writer's info lines */

static int job_init(bench_job *j, const char *dir, size_t bytes)
{
	memset(j, 0, sizeof(*j));
	j->bytes = bytes;
	j->state = malloc(bytes);
	if (!j->state)
		return -1;
	fill(j->state, bytes);
	ftl_training_config_default(&j->cfg);
	snprintf(j->cfg.checkpoint_dir, sizeof(j->cfg.checkpoint_dir), "%s", dir);
	j->cfg.checkpoint_every = 2; /* as in training: a step that is not due first, which reserves */
	j->cfg.checkpoint_keep = 1;
	j->cfg.checkpoint_wait = true;
	j->r.buffers[0] = (ftl_buffer_reg){.name = "state", .ptr = j->state, .bytes = bytes};
	j->r.n_buffers = 1;
	if (ftl_checkpoint_setup(&j->c, &j->cfg, &bench_log) != FTL_OK) {
		fprintf(stderr, "bench_checkpoint: %s\n", ftl_diag_message());
		return -1;
	}
	return 0;
}

/* One checkpoint through the training-thread path; its stall and its write time (seconds). */
static int checkpoint_once(bench_job *j, double *stall, double *write_s)
{
	j->r.step++;
	ftl_checkpoint_after_step(&j->c, &j->r, 1, 1); /* not due: the writer gets its staging buffer ready */
	ftl_ckpt_writer_flush(j->c.writer);
	j->r.step++;
	double start = now_s();
	ftl_checkpoint_after_step(&j->c, &j->r, 1, 1);
	*stall = now_s() - start;
	ftl_ckpt_writer_flush(j->c.writer);
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(j->c.writer, &s);
	*write_s = (double)s.last_write_us / 1e6;
	return s.state == FTL_CKPT_WRITER_IDLE && s.last_step == j->r.step ? 0 : -1;
}

/* Mean compute-step time with the writer idle, then while one checkpoint is being written. */
static void slowdown(bench_job *j, double *idle, double *busy)
{
	double sum = 0;
	for (int i = 0; i < 10; i++)
		sum += compute_step();
	*idle = sum / 10;
	j->r.step += 2;
	ftl_checkpoint_after_step(&j->c, &j->r, 1, 1);
	int n = 0;
	sum = 0;
	for (ftl_ckpt_writer_stats s = {.state = FTL_CKPT_WRITER_WRITING}; s.state == FTL_CKPT_WRITER_WRITING;
	     ftl_ckpt_writer_get_stats(j->c.writer, &s)) {
		sum += compute_step();
		n++;
	}
	*busy = n ? sum / n : *idle;
}

static int bench_size(const char *dir, size_t mb)
{
	bench_job j;
	size_t bytes = mb << 20;
	if (job_init(&j, dir, bytes) != 0)
		return -1;
	double plain[ROUNDS], writer[ROUNDS], stall[ROUNDS], first_stall = 0, w;
	for (int r = 0; r < ROUNDS; r++) {
		if ((plain[r] = plain_write(dir, j.state, bytes)) < 0 || checkpoint_once(&j, &stall[r], &writer[r]) != 0) {
			fprintf(stderr, "bench_checkpoint: a write into %s failed (see the log above)\n", dir);
			return -1;
		}
		if (r == 0) { /* the very first: measured apart (is the buffer the writer reserved really ready?) */
			first_stall = stall[0];
			if (checkpoint_once(&j, &stall[0], &w) != 0)
				return -1;
		}
	}
	double idle, busy;
	slowdown(&j, &idle, &busy);
	double mb_total = (double)bytes / 1e6;
	printf("{\"bench\":\"checkpoint\",\"figure\":\"write_throughput\",\"size_mb\":%zu,\"plain_write_fsync_mb_s\":%.0f,"
	       "\"checkpoint_mb_s\":%.0f,\"ratio\":%.2f,\"rounds\":%d}\n",
	       mb, mb_total / median3(plain), mb_total / median3(writer), median3(plain) / median3(writer), ROUNDS);
	printf("{\"bench\":\"checkpoint\",\"figure\":\"step_stall\",\"size_mb\":%zu,\"stall_ms\":%.1f,\"write_ms\":%.1f,"
	       "\"stall_fraction\":%.3f,\"first_stall_ms\":%.1f}\n",
	       mb, median3(stall) * 1e3, median3(writer) * 1e3, median3(stall) / median3(writer), first_stall * 1e3);
	printf("{\"bench\":\"checkpoint\",\"figure\":\"step_slowdown_while_writing\",\"size_mb\":%zu,\"idle_step_ms\":%.2f,"
	       "\"busy_step_ms\":%.2f,\"slowdown\":%.2f}\n",
	       mb, idle * 1e3, busy * 1e3, busy / idle);
	fflush(stdout);
	ftl_checkpoint_teardown(&j.c);
	ftl_ckpt_retain(dir, j.r.job_id, 0);
	free(j.state);
	return 0;
}

int main(int argc, char **argv)
{
	const char *parent = argc > 1 ? argv[1] : "/tmp";
	char dir[FTL_CKPT_DIR_MAX];
	snprintf(dir, sizeof(dir), "%s/ftl-bench-ckpt-XXXXXX", parent);
	if (!mkdtemp(dir)) {
		perror("bench_checkpoint: mkdtemp");
		return 1;
	}
	ftl_logger_init(&bench_log, "warn", "bench", NULL, NULL);
	int rc = 0;
	if (argc > 2) {
		for (int i = 2; i < argc && rc == 0; i++)
			rc = bench_size(dir, (size_t)atol(argv[i]));
	} else {
		rc = bench_size(dir, 100) || bench_size(dir, 1024);
	}
	ftl_ckpt_remove_temps(dir);
	rmdir(dir);
	return rc ? 1 : 0;
}
