/* train_cuda: data-parallel training on GPUs with ftl, state in device memory, collectives over NCCL.
 *
 * The model (cuda_model.cu) is a two-layer perceptron whose forward pass, backward pass and SGD update run
 * as CUDA kernels; its parameters and momentum are device arrays registered with
 * ftl_register_buffer(..., is_device=true), so ftl syncs them between ranks with NCCL in place and copies
 * them to and from checkpoints with cudaMemcpy. Each step: upload the rank's sample indices, run the
 * kernels that sum the gradient (and the loss and hit counts) into one device buffer, wait for them, add
 * that buffer across ranks with ftl_allreduce (NCCL, in place), and only then update the parameters on
 * the device: the step contract of ftl/execute.h, so a step cut short by a lost peer changed nothing and
 * runs again on the next view. Run it with FTL_COMM=nccl (it refuses anything else), one process per GPU
 * (FTL_CUDA_DEVICE picks it); the data are the C example's (dataset.c), generated from a fixed seed.
 *
 * Settings: the agent's and the job's FTL_* (ftl/agent.h, ftl/execute.h), and FTL_STEPS (200), FTL_BATCH
 * (per rank, 256), FTL_DATA_SIZE (40000), FTL_EXTRA_STATE_MB (0: that much more device state, touched
 * every step, to make the state as large as a real model's for checkpoint and takeover benchmarks).
 *
 * Output, one JSON object per line on stdout:
 *   {"worker","event":"start","step","digest","t"} once, at this process's first step: the state it
 *     starts from (after a state sync or a checkpoint resume), so a hot spare that took over shows the
 *     digest of the checkpoint it resumed;
 *   {"worker","step","rank","world","epoch","samples","loss","accuracy","digest","step_ms","t"} after every
 *     completed step (step_ms: the step's wall time, GPU kernels and the allreduce; digest: 16 hex digits
 *     of BLAKE2b-128 over the parameters then the momentum, as bytes, the same on every rank);
 *   {"worker","final":true,"steps","test_loss","test_accuracy","digest","t"} at the end.
 * Exit 1 when training cannot go on (the reason on stderr), 2 for a bad setting. */
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ftl/agent.h>
#include <ftl/execute.h>
#include <ftl/ftl.h>
#include <ftl/settings.h>
#include <jansson.h>

#include "cuda_model.h"
#include "dataset.h"

static const mlp_shape SHAPE = {.dim = 32, .hidden = 512, .classes = 10};
static const uint64_t DATA_SEED = 20240501; /* train_softmax's data */
static const uint64_t INIT_SEED = 11;
static const uint64_t SAMPLER_SEED = 7;
static const float LEARNING_RATE = 0.02f;
static const float MOMENTUM = 0.9f;

typedef struct gpu_job {
	ftl_agent *agent;
	const char *name;
	uint64_t steps;
	uint32_t batch;
	uint64_t extra_bytes;
	dataset train, test;
	mlp_device_data *train_dev, *test_dev;
	size_t n_params;
	float *params, *velocity; /* device, registered */
	uint8_t *extra;           /* device, registered as "ballast" when extra_bytes > 0 */
	float *sums;              /* device [n_params + MLP_N_STATS]: what the allreduce adds */
	float *host_state;        /* [2 * n_params] host copy for the digest */
	bool has_started;
	float stats[MLP_N_STATS]; /* the last completed step's sums over every rank */
	ftl_step_info last;
	double step_ms;
	char why[512];            /* a CUDA failure inside a step */
} gpu_job;

static double now_s(int clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t setting(const char *var, int64_t fallback, int64_t min, int64_t max)
{
	int64_t x = fallback;
	if (ftl_env_int(var, &x, min, max) != FTL_OK) {
		fprintf(stderr, "train_cuda: %s\n", ftl_error_message());
		exit(2);
	}
	return (uint64_t)x;
}

static void emit(json_t *line)
{
	json_dumpf(line, stdout, JSON_COMPACT);
	json_decref(line);
	fputc('\n', stdout);
	fflush(stdout);
}

/* 16 hex digits of BLAKE2b-128 over the parameters then the momentum (copied from the device). */
static int digest(gpu_job *j, char hex[17])
{
	size_t bytes = j->n_params * sizeof(float);
	if (mlp_copy_to_host(j->host_state, j->params, bytes, j->why, sizeof(j->why)) != 0 ||
	    mlp_copy_to_host(j->host_state + j->n_params, j->velocity, bytes, j->why, sizeof(j->why)) != 0)
		return -1;
	unsigned char hash[crypto_generichash_BYTES_MIN];
	crypto_generichash(hash, sizeof(hash), (const unsigned char *)j->host_state, 2 * bytes, NULL, 0);
	sodium_bin2hex(hex, 17, hash, 8);
	return 0;
}

static ftl_err cuda_failed(gpu_job *j)
{
	fprintf(stderr, "train_cuda: %s: CUDA: %s\n", j->name, j->why);
	return FTL_ERR_BACKEND; /* not a peer error: ftl_execute returns it */
}

/* One training step (ftl_step_fn): the registered device state changes only after the allreduce. */
static ftl_err train_step(void *ctx, const ftl_step_info *info)
{
	gpu_job *j = ctx;
	char hex[17];
	if (!j->has_started) {
		if (digest(j, hex) != 0)
			return cuda_failed(j);
		emit(json_pack("{s:s, s:s, s:I, s:s, s:f}", "worker", j->name, "event", "start", "step",
			       (json_int_t)info->step, "digest", hex, "t", now_s(CLOCK_REALTIME)));
		j->has_started = true;
	}
	double t0 = now_s(CLOCK_MONOTONIC);
	if (mlp_accumulate(SHAPE, j->params, j->train_dev, info->indices, info->n_indices, j->sums, j->why,
			   sizeof(j->why)) != 0 ||
	    mlp_sync(j->why, sizeof(j->why)) != 0) /* NCCL runs on its own stream: the sums must be done */
		return cuda_failed(j);
	ftl_err e = ftl_allreduce(j->agent, j->sums, j->sums, j->n_params + MLP_N_STATS, FTL_F32, FTL_SUM, NULL, NULL);
	if (e != FTL_OK)
		return e; /* nothing changed: ftl_execute may run this step again on a new view */
	if (mlp_copy_to_host(j->stats, j->sums + j->n_params, sizeof(j->stats), j->why, sizeof(j->why)) != 0)
		return cuda_failed(j);
	float samples = j->stats[MLP_STAT_SAMPLES];
	if ((samples > 0 && mlp_sgd_update(j->params, j->velocity, j->sums, j->n_params, samples, LEARNING_RATE,
					   MOMENTUM, j->why, sizeof(j->why)) != 0) ||
	    (j->extra && mlp_touch(j->extra, (info->step * 4099) % j->extra_bytes, j->why, sizeof(j->why)) != 0) ||
	    mlp_sync(j->why, sizeof(j->why)) != 0)
		return cuda_failed(j);
	j->step_ms = (now_s(CLOCK_MONOTONIC) - t0) * 1e3;
	j->last = *info;
	return FTL_OK;
}

static void print_step(gpu_job *j)
{
	char hex[17] = "";
	float n = j->stats[MLP_STAT_SAMPLES];
	if (digest(j, hex) != 0)
		cuda_failed(j);
	emit(json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:f, s:f, s:s, s:f, s:f}", "worker", j->name, "step",
		       (json_int_t)j->last.step, "rank", j->last.rank, "world", j->last.world_size, "epoch",
		       (json_int_t)j->last.view_epoch, "samples", (json_int_t)n, "loss",
		       n > 0 ? j->stats[MLP_STAT_LOSS] / n : 0.0, "accuracy", n > 0 ? j->stats[MLP_STAT_CORRECT] / n : 0.0,
		       "digest", hex, "step_ms", j->step_ms, "t", now_s(CLOCK_REALTIME)));
}

/* Loss and accuracy over the held-out split, batch by batch on the device (the gradient is discarded). */
static int evaluate(gpu_job *j, double *loss, double *accuracy)
{
	uint64_t *idx = malloc(sizeof(uint64_t) * j->batch);
	double sums[MLP_N_STATS] = {0};
	int rc = idx ? 0 : -1;
	for (size_t at = 0; rc == 0 && at < j->test.n; at += j->batch) {
		size_t n = j->test.n - at < j->batch ? j->test.n - at : j->batch;
		for (size_t k = 0; k < n; k++)
			idx[k] = at + k;
		float part[MLP_N_STATS];
		rc = mlp_accumulate(SHAPE, j->params, j->test_dev, idx, n, j->sums, j->why, sizeof(j->why));
		if (rc == 0)
			rc = mlp_copy_to_host(part, j->sums + j->n_params, sizeof(part), j->why, sizeof(j->why));
		for (int s = 0; rc == 0 && s < MLP_N_STATS; s++)
			sums[s] += part[s];
	}
	free(idx);
	*loss = sums[MLP_STAT_SAMPLES] > 0 ? sums[MLP_STAT_LOSS] / sums[MLP_STAT_SAMPLES] : 0;
	*accuracy = sums[MLP_STAT_SAMPLES] > 0 ? sums[MLP_STAT_CORRECT] / sums[MLP_STAT_SAMPLES] : 0;
	return rc;
}

static void print_final(gpu_job *j, uint64_t steps)
{
	double loss = 0, accuracy = 0;
	char hex[17] = "";
	if (evaluate(j, &loss, &accuracy) != 0 || digest(j, hex) != 0)
		cuda_failed(j);
	emit(json_pack("{s:s, s:b, s:I, s:f, s:f, s:s, s:f}", "worker", j->name, "final", 1, "steps", (json_int_t)steps,
		       "test_loss", loss, "test_accuracy", accuracy, "digest", hex, "t", now_s(CLOCK_REALTIME)));
}

/* The data on the host and the device, the device state, its initial values. 0, or -1 with j->why. */
static int job_init(gpu_job *j)
{
	j->steps = setting("FTL_STEPS", 200, 1, UINT32_MAX);
	j->batch = (uint32_t)setting("FTL_BATCH", 256, 1, 65536);
	uint64_t data_size = setting("FTL_DATA_SIZE", 40000, 100, 10000000);
	j->extra_bytes = setting("FTL_EXTRA_STATE_MB", 0, 0, 1 << 20) << 20;
	j->n_params = mlp_param_count(SHAPE);
	if (dataset_generate(&j->train, &j->test, data_size, data_size / 5, SHAPE.dim, SHAPE.classes, DATA_SEED) != 0 ||
	    !(j->host_state = malloc(2 * j->n_params * sizeof(float)))) {
		snprintf(j->why, sizeof(j->why), "out of host memory");
		return -1;
	}
	size_t state_bytes = j->n_params * sizeof(float);
	if (!(j->train_dev = mlp_device_data_new(SHAPE, &j->train, j->batch, j->why, sizeof(j->why))) ||
	    !(j->test_dev = mlp_device_data_new(SHAPE, &j->test, j->batch, j->why, sizeof(j->why))) ||
	    !(j->params = mlp_device_alloc(state_bytes, j->why, sizeof(j->why))) ||
	    !(j->velocity = mlp_device_alloc(state_bytes, j->why, sizeof(j->why))) ||
	    !(j->sums = mlp_device_alloc(state_bytes + MLP_N_STATS * sizeof(float), j->why, sizeof(j->why))) ||
	    (j->extra_bytes && !(j->extra = mlp_device_alloc(j->extra_bytes, j->why, sizeof(j->why)))))
		return -1;
	return mlp_init_params(SHAPE, INIT_SEED, j->params, j->why, sizeof(j->why));
}

static void job_free(gpu_job *j)
{
	ftl_agent_delete(j->agent);
	mlp_device_data_free(j->train_dev);
	mlp_device_data_free(j->test_dev);
	mlp_device_free(j->params);
	mlp_device_free(j->velocity);
	mlp_device_free(j->sums);
	mlp_device_free(j->extra);
	free(j->host_state);
	dataset_free(&j->train);
	dataset_free(&j->test);
}

/* The agent, told about the job's device state and data. Exits 2 on a bad setting. */
static void make_agent(gpu_job *j)
{
	if (!(j->agent = ftl_agent_new_from_env())) {
		fprintf(stderr, "train_cuda: %s\n", ftl_error_message());
		exit(2);
	}
	size_t state_bytes = j->n_params * sizeof(float);
	if (ftl_register_buffer(j->agent, "params", j->params, state_bytes, true) != 0 ||
	    ftl_register_buffer(j->agent, "momentum", j->velocity, state_bytes, true) != 0 ||
	    (j->extra && ftl_register_buffer(j->agent, "ballast", j->extra, j->extra_bytes, true) != 0) ||
	    ftl_set_sampler(j->agent, j->train.n, j->batch, SAMPLER_SEED) != 0) {
		fprintf(stderr, "train_cuda: registering the device state or the sampler failed: %s\n",
			ftl_error_message());
		exit(2);
	}
}

/* Steps until the job has done j->steps; 0 when done, 1 when training cannot go on. */
static int train(gpu_job *j)
{
	ftl_job_status job = {.struct_size = sizeof job};
	for (ftl_get_job_status(j->agent, &job); job.step < j->steps; ftl_get_job_status(j->agent, &job)) {
		if (ftl_execute(j->agent, train_step, j) != FTL_OK) {
			fprintf(stderr, "train_cuda: %s: %s\n", j->name, ftl_last_error(j->agent));
			return 1;
		}
		print_step(j);
	}
	print_final(j, job.step);
	ftl_agent_leave(j->agent, 5000);
	return 0;
}

int main(void)
{
	gpu_job j = {.name = getenv("FTL_NAME") ? getenv("FTL_NAME") : "worker"};
	const char *comm = getenv("FTL_COMM");
	if (comm == NULL || strcmp(comm, "nccl") != 0) {
		fprintf(stderr, "train_cuda: FTL_COMM is '%s': this example keeps its state on the GPU, so set "
				"FTL_COMM=nccl\n", comm ? comm : "(unset)");
		return 2;
	}
	if (sodium_init() < 0 || job_init(&j) != 0) {
		fprintf(stderr, "train_cuda: %s\n", j.why[0] ? j.why : "libsodium failed to start");
		job_free(&j);
		return 1;
	}
	make_agent(&j);
	int status = 1;
	if (ftl_agent_start(j.agent) != FTL_OK)
		fprintf(stderr, "train_cuda: %s\n", ftl_error_message());
	else
		status = train(&j);
	job_free(&j);
	return status;
}
