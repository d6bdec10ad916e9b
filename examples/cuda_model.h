/* cuda_model: the CUDA example's model, a two-layer perceptron (dim -> hidden, ReLU -> classes, softmax
 * cross-entropy) whose forward pass, backward pass and SGD update run as CUDA kernels (cuda_model.cu) on
 * parameters that live in device memory. Plain C functions over flat device float arrays, so that the
 * parameters and the optimizer state are one device buffer each, registered with ftl as device state. */
#ifndef FTL_EXAMPLE_CUDA_MODEL_H
#define FTL_EXAMPLE_CUDA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlp_shape {
	int dim;
	int hidden;
	int classes;
} mlp_shape;

/* What an accumulation adds after the gradient, in the same device float buffer. */
enum { MLP_STAT_LOSS, MLP_STAT_CORRECT, MLP_STAT_SAMPLES, MLP_N_STATS };

/* A dataset copied to the device, and the scratch a batch of up to max_batch samples needs. */
typedef struct mlp_device_data mlp_device_data;

/* W1 [hidden][dim], b1 [hidden], W2 [classes][hidden], b2 [classes]. */
size_t mlp_param_count(mlp_shape s);

/* The same initial parameters on every worker: W scaled by 1/sqrt(fan-in) from a seeded stream, b zero.
 * Writes to the device array params. 0, or -1 with why. */
int mlp_init_params(mlp_shape s, uint64_t seed, float *params, char *why, size_t why_len);

/* NULL with why when the device is out of memory or unusable. */
mlp_device_data *mlp_device_data_new(mlp_shape s, const dataset *d, size_t max_batch, char *why, size_t why_len);
void mlp_device_data_free(mlp_device_data *dd);

/* Sums over the samples at indices (n <= max_batch) into the device array out[param_count + MLP_N_STATS]
 * (overwritten): the gradient of the loss, then the loss, the correct count and n. Queued on the default
 * stream; mlp_sync waits for it. 0, or -1 with why. */
int mlp_accumulate(mlp_shape s, const float *params, mlp_device_data *dd, const uint64_t *indices, size_t n,
		   float *out, char *why, size_t why_len);

/* velocity = momentum * velocity + grad / samples; params -= lr * velocity. Device arrays. */
int mlp_sgd_update(float *params, float *velocity, const float *grad, size_t count, float samples, float lr,
		   float momentum, char *why, size_t why_len);

/* Adds one to byte at of the device array bytes: the change a step makes to extra (ballast) state. */
int mlp_touch(uint8_t *bytes, size_t at, char *why, size_t why_len);

/* Waits for the kernels queued so far (before their results travel or are read). 0, or -1 with why. */
int mlp_sync(char *why, size_t why_len);

/* Device memory: NULL with why. */
void *mlp_device_alloc(size_t bytes, char *why, size_t why_len);
void mlp_device_free(void *p);
int mlp_copy_to_host(void *dst, const void *device_src, size_t bytes, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
