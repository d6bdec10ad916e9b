/* train_softmax: data-parallel training with ftl, the program to copy.
 *
 * Every worker runs this same program; ftl finds the others (gossip), agrees on a view with ranks, and
 * keeps the job going when workers die or join. The program's side of the deal:
 *  - every worker has the same data (here it is generated from a fixed seed) and starts from the same
 *    parameters (zeros); the parameters and the optimizer state are registered with ftl, which copies
 *    rank 0's to every member after each view change, so a joiner starts where the job is;
 *  - the elastic sampler hands each rank its slice of the data epoch in info->indices, so across
 *    rescales every sample of an epoch is used exactly once;
 *  - a step computes the gradient over its slice, adds the gradients (and the loss and counts) of all
 *    ranks with one allreduce, and only then applies the update, the same on every rank (the step
 *    contract of ftl/execute.h: if the allreduce fails because a peer died, nothing was changed and
 *    ftl_execute runs the step again on the next view);
 *  - the global batch: by default FTL_BATCH per rank, so it grows with the world and the learning rate
 *    follows FTL_LR_SCALING (ftl_lr_policy, ftl/elastic.h; the rate is then registered state, "lr"). With
 *    FTL_GLOBAL_BATCH every step takes that many samples at any world size, split across the ranks, and
 *    the gradient is the mean over them (summed counts, not ranks); FTL_MAX_BATCH_PER_RANK computes a
 *    rank's share in micro-batches (gradient accumulation). With FTL_REPRODUCIBLE=1 too, each micro-shard
 *    gets its own row and the exact allreduce (FTL_ALLREDUCE_EXACT) sums the rows exactly: the digest after
 *    every step is then the same at any world size and through any kills and joins;
 *  - the gradient's allreduce names a gradient bucket (ftl/gradient.h), which FTL_COMM_COMPRESS may put on
 *    the wire as bf16; the step's statistics (loss, counts) go through a plain allreduce, exact.
 *
 * Settings come from the environment: the agent's and the job's FTL_* (ftl/agent.h, ftl/execute.h), and
 *   FTL_STEPS          steps to train (300)
 *   FTL_BATCH          samples per rank per step (32)
 *   FTL_DATA_SIZE      training samples (40000); a test split of a fifth of that is held out
 *   FTL_STEP_SLEEP_MS  extra time per step, standing in for a real model's compute (0)
 *   FTL_SAMPLE_SLEEP_US extra time per sample of the rank's share, standing in for compute that grows with
 *                      the batch (0): what a slow worker's share changes under FTL_SLOW_POLICY=rebalance
 *   FTL_LOG_INDICES=1  also log the dataset indices of every step attempt
 *   FTL_EXTRA_STATE_MB extra registered state ("ballast", touched every step) to make the state as large as
 *                      a real model's, for checkpoint and state-sync benchmarks (0)
 *   FTL_LR_SCALING     none|linear|sqrt: the rate for the world size when the global batch grows with it,
 *                      0.01 being tuned for 4 workers (none); refused with FTL_GLOBAL_BATCH
 *   FTL_LR_WARMUP_STEPS after a view change the rate moves to its new target over this many steps (10)
 *
 * Empty, malformed or out-of-range values are refused with the variable named (exit 2); these names are in
 * libftl's table of known FTL_* names, so none of them is reported as unknown.
 *
 * Output, one JSON object per line on stdout (written with jansson, so every string is escaped):
 *   after every completed step:
 *     {"worker","step","rank","world","epoch","samples","loss","accuracy","digest","t"}
 *     epoch is the view epoch; loss and accuracy are over the step's global batch of `samples`; digest is
 *     a BLAKE2b hash of the parameters and optimizer state (equal on every rank after every step);
 *     t is the wall clock in seconds.
 *   with FTL_LOG_INDICES=1, every time a step is attempted, before its allreduce:
 *     {"worker","step","data_epoch","epoch","rank","attempt","pos","indices":[...]}
 *     A step attempt may fail and run again on a new view, so these lines alone count samples twice:
 *     the samples the job used in step S are the indices of the attempts of S in the view epoch of the
 *     step line that reports S (the latest, if several do).
 *   at the end: {"worker","final":true,"steps","test_loss","test_accuracy","digest","t"}
 * SIGTERM or SIGINT, or `ftlctl leave` (a Kubernetes preStop hook): the worker leaves the cluster
 * gracefully, so the others go on at once instead of waiting to detect a failure, and exits 0 as soon as
 * its step is done or cut short. If it was rank 0 and FTL_CHECKPOINT_DIR is set, ftl_execute first
 * writes a checkpoint of the steps since the last one, so scaling the job to zero loses nothing.
 * Exit 1 when training cannot go on, 2 for a bad setting. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ftl/agent.h>
#include <ftl/execute.h>
#include <ftl/ftl.h>
#include <jansson.h>

#include "dataset.h"
#include "softmax.h"

enum { DIM = 32, CLASSES = 10 };
static const uint64_t DATA_SEED = 20240501;    /* the same on every worker: the same dataset */
static const uint64_t SAMPLER_SEED = 7;        /* the same on every worker: the same epoch orders */
static const double LEARNING_RATE = 0.01;
static const uint32_t LR_BASE_WORLD = 4;       /* LEARNING_RATE is tuned for this many workers */
static const float MOMENTUM = 0.9f;

/* What the allreduce adds up after the gradient: the step's statistics, in the same float buffer. */
enum { STAT_LOSS, STAT_CORRECT, STAT_SAMPLES, N_STATS };

typedef struct settings {
	uint64_t steps;
	uint32_t batch_per_rank;
	uint64_t data_size;
	uint64_t step_sleep_ms;
	uint64_t sample_sleep_us;
	bool is_logging_indices;
	uint64_t extra_state_mb;
	ftl_lr_scaling lr_scaling;
	uint64_t lr_warmup_steps;
} settings;

/* The outcome of the step's last (successful) run, printed once ftl_execute returned. */
typedef struct step_result {
	ftl_step_info info; /* indices not kept */
	float samples;
	double loss;
	double accuracy;
} step_result;

typedef struct trainer {
	ftl_agent *agent;
	const char *name;
	settings cfg;
	dataset train, test;
	size_t n_params;
	float *params;    /* registered with ftl as "params" */
	float *velocity;  /* registered as "momentum": optimizer state is job state too */
	float *reduce;    /* [n_params + N_STATS]: gradient sum, then the statistics */
	ftl_grad_bucket *grads; /* the gradient's allreduce (compressed as FTL_COMM_COMPRESS says) */
	float *rows;      /* reproducible mode: one row like reduce per micro-shard of this rank */
	size_t rows_cap;  /* ... rows allocated */
	double lr;        /* the rate the job used last; registered as "lr" under FTL_LR_SCALING (job state) */
	ftl_lr_policy lr_policy;
	uint8_t *ballast; /* [extra_state_mb MB] registered as "ballast": stands in for a large model's state */
	step_result last;
} trainer;

/* One of the example's settings (ftl_env_int: unset gives the default; empty, garbage or out of range
 * is refused naming the variable, exit 2). */
static uint64_t env_number(const char *var, int64_t fallback, int64_t min, int64_t max)
{
	int64_t x = fallback;
	if (ftl_env_int(var, &x, min, max) != FTL_OK) {
		fprintf(stderr, "train_softmax: %s\n", ftl_error_message());
		exit(2);
	}
	return (uint64_t)x;
}

static void settings_from_env(settings *s)
{
	s->steps = env_number("FTL_STEPS", 300, 1, UINT32_MAX);
	s->batch_per_rank = (uint32_t)env_number("FTL_BATCH", 32, 1, 65536);
	s->data_size = env_number("FTL_DATA_SIZE", 40000, 100, 10000000);
	s->step_sleep_ms = env_number("FTL_STEP_SLEEP_MS", 0, 0, 60000);
	s->sample_sleep_us = env_number("FTL_SAMPLE_SLEEP_US", 0, 0, 1000000);
	s->is_logging_indices = env_number("FTL_LOG_INDICES", 0, 0, 1) == 1;
	s->extra_state_mb = env_number("FTL_EXTRA_STATE_MB", 0, 0, 65536);
	s->lr_warmup_steps = env_number("FTL_LR_WARMUP_STEPS", 10, 0, 1000000);
	const char *scaling = getenv("FTL_LR_SCALING");
	s->lr_scaling = FTL_LR_CONSTANT;
	for (int k = 0; scaling && k < FTL_LR_SCALING_MAX; k++)
		if (strcmp(scaling, ftl_lr_scaling_strs[k]) == 0)
			s->lr_scaling = (ftl_lr_scaling)k;
	if (scaling && strcmp(scaling, ftl_lr_scaling_strs[s->lr_scaling]) != 0) {
		fprintf(stderr, "train_softmax: FTL_LR_SCALING=%s: expected none, linear or sqrt\n", scaling);
		exit(2);
	}
}

/* Prints one JSON object as a line on stdout and frees it (jansson escapes every string). */
static void print_line(json_t *line)
{
	if (line) {
		json_dumpf(line, stdout, JSON_COMPACT);
		json_decref(line);
	}
	putchar('\n');
	fflush(stdout);
}

static double wall_clock_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* 16 hex digits of a BLAKE2b hash of the parameters and the optimizer state. */
static void state_digest(const trainer *t, char hex[17])
{
	unsigned char hash[crypto_generichash_BYTES_MIN];
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, sizeof(hash));
	crypto_generichash_update(&st, (const unsigned char *)t->params, t->n_params * sizeof(float));
	crypto_generichash_update(&st, (const unsigned char *)t->velocity, t->n_params * sizeof(float));
	crypto_generichash_final(&st, hash, sizeof(hash));
	sodium_bin2hex(hex, 17, hash, 8);
}

static void print_indices(const trainer *t, const ftl_step_info *info)
{
	json_t *indices = json_array();
	for (size_t k = 0; k < info->n_indices; k++)
		json_array_append_new(indices, json_integer((json_int_t)info->indices[k]));
	print_line(json_pack("{s:s, s:I, s:I, s:I, s:i, s:i, s:I, s:o}", "worker", t->name, "step",
			     (json_int_t)info->step, "data_epoch", (json_int_t)info->data_epoch, "epoch",
			     (json_int_t)info->view_epoch, "rank", info->rank, "attempt", info->attempt, "pos",
			     (json_int_t)info->sample_pos, "indices", indices));
}

/* The gradient sum and the statistics of indices[0, n) into row (np + N_STATS floats), from zero. */
static void compute_row(const trainer *t, const uint64_t *indices, size_t n, float *row)
{
	size_t np = t->n_params;
	memset(row, 0, (np + N_STATS) * sizeof(float));
	softmax_sums sums = {0};
	softmax_accumulate(t->params, &t->train, indices, n, row, &sums);
	row[np + STAT_LOSS] = (float)sums.loss;
	row[np + STAT_CORRECT] = (float)sums.correct;
	row[np + STAT_SAMPLES] = (float)n;
}

/* This rank's micro-batches: info->micro_batch indices each (the last may be shorter), or one. */
static size_t micro_batches(const ftl_step_info *info)
{
	if (!info->micro_batch)
		return info->n_indices ? 1 : 0;
	return (info->n_indices + info->micro_batch - 1) / info->micro_batch;
}

static size_t micro_batch_len(const ftl_step_info *info, size_t k)
{
	if (!info->micro_batch)
		return info->n_indices;
	size_t start = k * info->micro_batch;
	return info->n_indices - start < info->micro_batch ? info->n_indices - start : info->micro_batch;
}

/* The usual sum: every micro-batch's gradient accumulated into one buffer (a model too large for the
 * whole share at once would run forward and backward per micro-batch the same way), one gradient allreduce
 * and one of the statistics (kept exact: the sample count divides the gradient). */
static ftl_err sum_gradients(trainer *t, const ftl_step_info *info)
{
	size_t np = t->n_params, rows = micro_batches(info);
	float *row = t->reduce;
	memset(row, 0, (np + N_STATS) * sizeof(float));
	for (size_t k = 0; k < rows; k++) {
		softmax_sums sums = {0};
		softmax_accumulate(t->params, &t->train, info->indices + k * info->micro_batch,
				   micro_batch_len(info, k), row, &sums);
		row[np + STAT_LOSS] += (float)sums.loss;
		row[np + STAT_CORRECT] += (float)sums.correct;
	}
	row[np + STAT_SAMPLES] = (float)info->n_indices;
	ftl_allreduce_opts gradient;
	ftl_allreduce_opts_init(&gradient);
	gradient.bucket = t->grads;
	ftl_err err = ftl_allreduce(t->agent, row, row, np, FTL_F32, FTL_SUM, &gradient, NULL);
	return err ? err : ftl_allreduce(t->agent, row + np, row + np, N_STATS, FTL_F32, FTL_SUM, NULL, NULL);
}

/* Reproducible mode: each micro-shard's gradient in its own row, computed whole here, and the rows of every
 * rank summed exactly: the same bits whichever ranks computed which shards. */
static ftl_err sum_gradients_exactly(trainer *t, const ftl_step_info *info)
{
	size_t width = t->n_params + N_STATS, rows = micro_batches(info);
	if (rows > t->rows_cap) {
		float *more = realloc(t->rows, rows * width * sizeof(float));
		if (!more)
			return FTL_ERR_SYSTEM;
		t->rows = more;
		t->rows_cap = rows;
	}
	for (size_t k = 0; k < rows; k++)
		compute_row(t, info->indices + k * info->micro_batch, micro_batch_len(info, k), t->rows + k * width);
	ftl_allreduce_opts exact;
	ftl_allreduce_opts_init(&exact);
	exact.kind = FTL_ALLREDUCE_EXACT;
	exact.n_rows = rows;
	exact.total_rows = info->total_micro;
	return ftl_allreduce(t->agent, t->rows, t->reduce, width, FTL_F32, FTL_SUM, &exact, NULL);
}

/* One training step (ftl_step_fn). Registered state changes only after the allreduce succeeded. */
static ftl_err train_step(void *ctx, const ftl_step_info *info)
{
	trainer *t = ctx;
	size_t np = t->n_params;
	if (t->cfg.is_logging_indices)
		print_indices(t, info); /* before the allreduce: a rank that dies in it has still logged */
	if (t->cfg.step_sleep_ms || t->cfg.sample_sleep_us)
		sleep_us(t->cfg.step_sleep_ms * 1000 + t->cfg.sample_sleep_us * info->n_indices);
	ftl_err err = info->total_micro ? sum_gradients_exactly(t, info) : sum_gradients(t, info);
	if (err)
		return err; /* nothing changed: ftl_execute may run this step again on a new view */
	t->lr = ftl_lr_policy_step(&t->lr_policy, t->lr, info);

	/* Every rank now holds the same sums, so every rank makes the same update. */
	float samples = t->reduce[np + STAT_SAMPLES];
	if (samples > 0) {
		for (size_t k = 0; k < np; k++)
			t->reduce[k] /= samples;
		sgd_momentum_update(t->params, t->velocity, t->reduce, np, (float)t->lr, MOMENTUM);
	}
	if (t->ballast) /* the same change on every rank, so it is job state like the rest */
		t->ballast[(info->step * 4099) % (t->cfg.extra_state_mb << 20)] += 1;
	t->last = (step_result){
		.info = *info,
		.samples = samples,
		.loss = samples > 0 ? t->reduce[np + STAT_LOSS] / samples : 0,
		.accuracy = samples > 0 ? t->reduce[np + STAT_CORRECT] / samples : 0,
	};
	t->last.info.indices = NULL;
	return FTL_OK;
}

/* The job's last step (ftl_step_fn): wait until every rank has finished training. A worker that leaves
 * aborts the collectives its view is still running, so without this one that finished its last step
 * first could abort that step on a slower rank, which would then run it again without it. Changes no
 * state, so running it again after a failure is harmless. */
static ftl_err finish_step(void *ctx, const ftl_step_info *info)
{
	trainer *t = ctx;
	return ftl_barrier(t->agent);
}

static void print_step(const trainer *t)
{
	const step_result *r = &t->last;
	char digest[17];
	state_digest(t, digest);
	print_line(json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:f, s:f, s:s, s:f}", "worker", t->name, "step",
			     (json_int_t)r->info.step, "rank", r->info.rank, "world", r->info.world_size, "epoch",
			     (json_int_t)r->info.view_epoch, "samples", (json_int_t)r->samples, "loss", r->loss,
			     "accuracy", r->accuracy, "digest", digest, "t", wall_clock_s()));
}

static void print_final(const trainer *t, uint64_t steps)
{
	double loss, accuracy;
	char digest[17];
	softmax_evaluate(t->params, &t->test, &loss, &accuracy);
	state_digest(t, digest);
	print_line(json_pack("{s:s, s:b, s:I, s:f, s:f, s:s, s:f}", "worker", t->name, "final", 1, "steps",
			     (json_int_t)steps, "test_loss", loss, "test_accuracy", accuracy, "digest", digest, "t",
			     wall_clock_s()));
}

static int trainer_init(trainer *t)
{
	settings_from_env(&t->cfg);
	if (dataset_generate(&t->train, &t->test, t->cfg.data_size, t->cfg.data_size / 5, DIM, CLASSES,
			     DATA_SEED) != 0)
		return -1;
	t->n_params = softmax_param_count(DIM, CLASSES);
	t->params = calloc(t->n_params, sizeof(float));
	t->velocity = calloc(t->n_params, sizeof(float));
	t->reduce = calloc(t->n_params + N_STATS, sizeof(float));
	t->lr = LEARNING_RATE;
	ftl_lr_policy_init(&t->lr_policy, t->cfg.lr_scaling, LEARNING_RATE, LR_BASE_WORLD, t->cfg.lr_warmup_steps);
	if (t->cfg.extra_state_mb && !(t->ballast = calloc(t->cfg.extra_state_mb, 1u << 20))) {
		fprintf(stderr, "train_softmax: FTL_EXTRA_STATE_MB=%llu: cannot allocate %llu MiB of extra state "
				"(out of memory); choose a smaller value or unset it\n",
			(unsigned long long)t->cfg.extra_state_mb, (unsigned long long)t->cfg.extra_state_mb);
		exit(2);
	}
	return t->params && t->velocity && t->reduce ? 0 : -1;
}

/* Makes the agent and tells it about the job: its settings, its state, its data. */
static ftl_agent *agent_for(trainer *t, ftl_agent_config *cfg)
{
	ftl_training_config training;
	ftl_agent_config_default(cfg);
	ftl_training_config_default(&training);
	if (ftl_agent_config_from_env(cfg) != FTL_OK || ftl_training_config_from_env(&training) != FTL_OK) {
		fprintf(stderr, "train_softmax: %s\n", ftl_error_message());
		exit(2);
	}
	if (training.batch.global_batch && t->cfg.lr_scaling != FTL_LR_CONSTANT) {
		fprintf(stderr, "train_softmax: FTL_LR_SCALING=%s with FTL_GLOBAL_BATCH: a fixed global batch keeps its "
				"learning rate at any world size; unset FTL_LR_SCALING\n", ftl_lr_scaling_strs[t->cfg.lr_scaling]);
		exit(2);
	}
	ftl_agent *a = ftl_agent_new(cfg);
	if (!a) {
		fprintf(stderr, "train_softmax: %s\n", ftl_error_message());
		exit(2);
	}
	if (ftl_set_training(a, &training) != FTL_OK) {
		fprintf(stderr, "train_softmax: %s\n", ftl_error_message());
		exit(2);
	}
	if (ftl_register_buffer(a, "params", t->params, t->n_params * sizeof(float), false) != 0 ||
	    ftl_register_buffer(a, "momentum", t->velocity, t->n_params * sizeof(float), false) != 0 ||
	    /* the rate moves only under a scaling policy: then it is job state (a joiner ramps from it) */
	    (t->cfg.lr_scaling != FTL_LR_CONSTANT && ftl_register_buffer(a, "lr", &t->lr, sizeof(t->lr), false) != 0) ||
	    (t->ballast && ftl_register_buffer(a, "ballast", t->ballast, t->cfg.extra_state_mb << 20, false) != 0) ||
	    ftl_set_sampler(a, t->train.n, t->cfg.batch_per_rank, SAMPLER_SEED) != 0 ||
	    !(t->grads = ftl_grad_bucket_new(a, FTL_COMPRESS_DEFAULT))) {
		fprintf(stderr, "train_softmax: registering the state, the sampler or the gradient bucket failed: %s\n",
			ftl_error_message());
		exit(2);
	}
	return a;
}

/* SIGTERM and SIGINT are blocked in every thread (the agent's threads inherit the mask) and taken by one
 * watcher thread, which makes the agent leave. SIGUSR2, blocked the same way, is how main stops the watcher
 * at the end (pthread_kill; no cancellation, which leaves the thread's stack poisoned under ASan). Not polled between steps: a training thread blocked in
 * ftl_execute (waiting for a view when the others already left, as in a scale to zero) would not see the
 * signal; the leave wakes it, and ftl_execute returns "left" once no step is half way. */
typedef struct stop_watcher {
	sigset_t signals;
	ftl_agent *agent;
	const char *name;
	pthread_t thread;
} stop_watcher;

static void *watch_stop_signals(void *arg)
{
	stop_watcher *w = arg;
	int sig;
	if (sigwait(&w->signals, &sig) == 0 && sig != SIGUSR2) {
		fprintf(stderr, "train_softmax: %s: %s: leaving the job\n", w->name, sig == SIGTERM ? "SIGTERM" : "SIGINT");
		ftl_agent_leave(w->agent, 5000);
	}
	return NULL;
}

static void block_stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Trains until the job has done cfg.steps steps. Returns the exit status: 0 when done, or when this worker
 * left (a stop signal, `ftlctl leave`, or a spare promoted once the job's workers had left at its end:
 * FTL_ERR_STATE_LOST), 1 when training cannot go on (the job refused this worker: it
 * left, but not by choice). */
static int train(trainer *t)
{
	ftl_job_status job = {.struct_size = sizeof job};
	for (ftl_get_job_status(t->agent, &job); job.step < t->cfg.steps; ftl_get_job_status(t->agent, &job)) {
		ftl_err e = ftl_execute(t->agent, train_step, t);
		if (e != FTL_OK) {
			if (e != FTL_ERR_REFUSED && ftl_agent_has_left(t->agent)) {
				fprintf(stderr, "train_softmax: %s: left the job after step %llu%s%s\n", t->name,
					(unsigned long long)job.step, e == FTL_ERR_STATE_LOST ? ": " : "",
					e == FTL_ERR_STATE_LOST ? ftl_last_error(t->agent) : "");
				return 0;
			}
			fprintf(stderr, "train_softmax: %s: %s\n", t->name, ftl_last_error(t->agent));
			return 1;
		}
		print_step(t);
	}
	uint64_t steps_done = job.step;
	if (ftl_execute(t->agent, finish_step, t) != FTL_OK)
		fprintf(stderr, "train_softmax: %s: finishing: %s\n", t->name, ftl_last_error(t->agent));
	print_final(t, steps_done);
	ftl_agent_leave(t->agent, 5000);
	return 0;
}

static void trainer_free(trainer *t)
{
	ftl_agent_delete(t->agent); /* stops it first */
	ftl_grad_bucket_delete(t->grads);
	dataset_free(&t->train);
	dataset_free(&t->test);
	free(t->params);
	free(t->velocity);
	free(t->reduce);
	free(t->rows);
	free(t->ballast);
}

int main(void)
{
	trainer t = {0};
	ftl_agent_config cfg;
	if (sodium_init() < 0 || trainer_init(&t) != 0) {
		fprintf(stderr, "train_softmax: out of memory\n");
		trainer_free(&t);
		return 1;
	}
	t.agent = agent_for(&t, &cfg);
	t.name = cfg.name;
	stop_watcher watcher = {.agent = t.agent, .name = t.name};
	block_stop_signals(&watcher.signals);
	int status = 1;
	if (ftl_agent_start(t.agent) != FTL_OK) {
		fprintf(stderr, "train_softmax: %s\n", ftl_error_message());
	} else if (pthread_create(&watcher.thread, NULL, watch_stop_signals, &watcher) != 0) {
		fprintf(stderr, "train_softmax: cannot start the signal watcher thread\n");
	} else {
		status = train(&t);
		pthread_kill(watcher.thread, SIGUSR2); /* done, or already gone after a stop signal: harmless */
		pthread_join(watcher.thread, NULL);
	}
	trainer_free(&t);
	return status;
}
