/* cuda_model: the CUDA example's two-layer perceptron, forward, backward and update as CUDA kernels.
 *
 * Straightforward kernels, one thread per output element, each looping over its reduction in a fixed
 * order: no atomics, so a step gives the same bits every time it runs (a retried step, and every rank
 * applying the same allreduced gradient, stay bit-identical). The gather of a batch's samples by index
 * happens on the device: a step uploads only its indices. Everything is queued on the default stream;
 * mlp_sync is the one wait, before the gradient goes to NCCL (which runs on its own stream). */
#include "cuda_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

enum { THREADS = 256, MAX_CLASSES = 32 };

struct mlp_device_data {
	float *x;         /* [n][dim] */
	uint8_t *y;       /* [n] */
	size_t n;
	size_t max_batch;
	uint64_t *idx;    /* [max_batch] the batch's sample indices */
	float *h;         /* [max_batch][hidden] activations after ReLU */
	float *dlogit;    /* [max_batch][classes] */
	float *dh;        /* [max_batch][hidden] */
	float *loss;      /* [max_batch] per sample */
	float *correct;   /* [max_batch] per sample, 0 or 1 */
};

static int check(cudaError_t e, const char *what, char *why, size_t why_len)
{
	if (e == cudaSuccess)
		return 0;
	snprintf(why, why_len, "%s: %s", what, cudaGetErrorString(e));
	return -1;
}

static unsigned blocks_for(size_t n)
{
	return (unsigned)((n + THREADS - 1) / THREADS);
}

extern "C" size_t mlp_param_count(mlp_shape s)
{
	return (size_t)s.hidden * s.dim + s.hidden + (size_t)s.classes * s.hidden + s.classes;
}

/* The offsets of the four tensors in a parameter (or gradient) array. */
struct layout {
	size_t w1, b1, w2, b2;
};

static layout layout_of(mlp_shape s)
{
	layout l;
	l.w1 = 0;
	l.b1 = (size_t)s.hidden * s.dim;
	l.w2 = l.b1 + s.hidden;
	l.b2 = l.w2 + (size_t)s.classes * s.hidden;
	return l;
}

/* h[s][j] = relu(b1[j] + x[idx[s]] . w1[j]) */
__global__ void hidden_forward(int batch, int dim, int hidden, const float *x, const uint64_t *idx, const float *w1,
			       const float *b1, float *h)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)batch * hidden)
		return;
	int s = (int)(i / hidden), j = (int)(i % hidden);
	const float *row = x + idx[s] * dim, *w = w1 + (size_t)j * dim;
	float z = b1[j];
	for (int d = 0; d < dim; d++)
		z += row[d] * w[d];
	h[i] = z > 0.0f ? z : 0.0f;
}

/* Per sample: logits, softmax, loss, whether the top class is right, and dloss/dlogit = p - onehot. */
__global__ void output_forward_backward(int batch, int hidden, int classes, const float *h, const float *w2,
					const float *b2, const uint8_t *y, const uint64_t *idx, float *dlogit,
					float *loss, float *correct)
{
	int s = blockIdx.x * blockDim.x + threadIdx.x;
	if (s >= batch)
		return;
	float logit[MAX_CLASSES];
	const float *hs = h + (size_t)s * hidden;
	int best = 0;
	for (int c = 0; c < classes; c++) {
		const float *w = w2 + (size_t)c * hidden;
		float z = b2[c];
		for (int j = 0; j < hidden; j++)
			z += hs[j] * w[j];
		logit[c] = z;
		if (z > logit[best])
			best = c;
	}
	float sum = 0.0f;
	for (int c = 0; c < classes; c++)
		sum += expf(logit[c] - logit[best]);
	int label = y[idx[s]];
	loss[s] = logf(sum) - (logit[label] - logit[best]);
	correct[s] = best == label ? 1.0f : 0.0f;
	for (int c = 0; c < classes; c++)
		dlogit[(size_t)s * classes + c] = expf(logit[c] - logit[best]) / sum - (c == label ? 1.0f : 0.0f);
}

/* dh[s][j] = (h[s][j] > 0) * sum_c dlogit[s][c] w2[c][j] */
__global__ void hidden_backward(int batch, int hidden, int classes, const float *h, const float *w2,
				const float *dlogit, float *dh)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)batch * hidden)
		return;
	int s = (int)(i / hidden), j = (int)(i % hidden);
	float g = 0.0f;
	if (h[i] > 0.0f)
		for (int c = 0; c < classes; c++)
			g += dlogit[(size_t)s * classes + c] * w2[(size_t)c * hidden + j];
	dh[i] = g;
}

/* A dense layer's gradient sums over the batch: gw[o][k] = sum_s delta[s][o] in_s[k], gb[o] = sum_s delta[s][o],
 * where in_s is row idx[s] of input (idx given) or row s. One thread per weight, bias threads last. */
__global__ void layer_gradient(int batch, int outs, int ins, const float *delta, const float *input,
			       const uint64_t *idx, float *gw, float *gb)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)outs * (ins + 1))
		return;
	bool is_bias = i >= (size_t)outs * ins;
	int o = is_bias ? (int)(i - (size_t)outs * ins) : (int)(i / ins), k = is_bias ? 0 : (int)(i % ins);
	float g = 0.0f;
	for (int s = 0; s < batch; s++) {
		float d = delta[(size_t)s * outs + o];
		g += is_bias ? d : d * input[(idx ? idx[s] : (uint64_t)s) * ins + k];
	}
	if (is_bias)
		gb[o] = g;
	else
		gw[i] = g;
}

/* The batch's loss and correct sums (in double, in sample order) and its size, after the gradient. */
__global__ void batch_stats(int batch, const float *loss, const float *correct, float *stats)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	double l = 0.0, c = 0.0;
	for (int s = 0; s < batch; s++) {
		l += loss[s];
		c += correct[s];
	}
	stats[MLP_STAT_LOSS] = (float)l;
	stats[MLP_STAT_CORRECT] = (float)c;
	stats[MLP_STAT_SAMPLES] = (float)batch;
}

__global__ void sgd_momentum(size_t count, float *params, float *velocity, const float *grad, float inv_samples,
			     float lr, float momentum)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= count)
		return;
	float v = momentum * velocity[i] + grad[i] * inv_samples;
	velocity[i] = v;
	params[i] -= lr * v;
}

__global__ void touch_byte(uint8_t *bytes, size_t at)
{
	bytes[at] += 1;
}

extern "C" int mlp_init_params(mlp_shape s, uint64_t seed, float *params, char *why, size_t why_len)
{
	size_t n = mlp_param_count(s);
	layout l = layout_of(s);
	float *host = (float *)calloc(n, sizeof(float));
	if (host == NULL) {
		snprintf(why, why_len, "out of memory for %zu parameters", n);
		return -1;
	}
	uint64_t x = seed;
	for (size_t i = 0; i < n; i++) {
		bool is_w1 = i < l.b1, is_w2 = i >= l.w2 && i < l.b2;
		if (!is_w1 && !is_w2)
			continue; /* biases start at zero */
		x += 0x9e3779b97f4a7c15ull; /* splitmix64: uniform in [-1, 1) scaled by 1/sqrt(fan-in) */
		uint64_t z = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		double u = (double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
		host[i] = (float)(u / sqrt((double)(is_w1 ? s.dim : s.hidden)));
	}
	int rc = check(cudaMemcpy(params, host, n * sizeof(float), cudaMemcpyHostToDevice), "upload the initial parameters",
		       why, why_len);
	free(host);
	return rc;
}

extern "C" void mlp_device_data_free(mlp_device_data *dd)
{
	if (dd == NULL)
		return;
	void *bufs[] = {dd->x, dd->y, dd->idx, dd->h, dd->dlogit, dd->dh, dd->loss, dd->correct};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		cudaFree(bufs[i]);
	free(dd);
}

extern "C" mlp_device_data *mlp_device_data_new(mlp_shape s, const dataset *d, size_t max_batch, char *why,
						size_t why_len)
{
	if (s.classes > MAX_CLASSES || d->dim != s.dim) {
		snprintf(why, why_len, "model of %d classes on %d features: at most %d classes, and the data's %d features",
			 s.classes, s.dim, MAX_CLASSES, d->dim);
		return NULL;
	}
	mlp_device_data *dd = (mlp_device_data *)calloc(1, sizeof(*dd));
	if (dd == NULL) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	dd->n = d->n;
	dd->max_batch = max_batch;
	size_t xb = d->n * (size_t)d->dim * sizeof(float);
	size_t hb = max_batch * s.hidden * sizeof(float);
	struct {
		void **ptr;
		size_t bytes;
	} allocs[] = {
		{(void **)&dd->x, xb}, {(void **)&dd->y, d->n}, {(void **)&dd->idx, max_batch * sizeof(uint64_t)},
		{(void **)&dd->h, hb}, {(void **)&dd->dh, hb}, {(void **)&dd->dlogit, max_batch * s.classes * sizeof(float)},
		{(void **)&dd->loss, max_batch * sizeof(float)}, {(void **)&dd->correct, max_batch * sizeof(float)},
	};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof(allocs) / sizeof(allocs[0]); i++)
		rc = check(cudaMalloc(allocs[i].ptr, allocs[i].bytes), "cudaMalloc (the data and the step's scratch)", why,
			   why_len);
	if (rc == 0)
		rc = check(cudaMemcpy(dd->x, d->features, xb, cudaMemcpyHostToDevice), "upload the features", why, why_len);
	if (rc == 0)
		rc = check(cudaMemcpy(dd->y, d->labels, d->n, cudaMemcpyHostToDevice), "upload the labels", why, why_len);
	if (rc != 0) {
		mlp_device_data_free(dd);
		return NULL;
	}
	return dd;
}

extern "C" int mlp_accumulate(mlp_shape s, const float *params, mlp_device_data *dd, const uint64_t *indices, size_t n,
			      float *out, char *why, size_t why_len)
{
	if (n > dd->max_batch) {
		snprintf(why, why_len, "a batch of %zu samples: at most %zu", n, dd->max_batch);
		return -1;
	}
	if (n == 0) /* a rank with no samples this step adds nothing */
		return check(cudaMemset(out, 0, (mlp_param_count(s) + MLP_N_STATS) * sizeof(float)), "cudaMemset", why,
			     why_len);
	for (size_t k = 0; k < n; k++) {
		if (indices[k] >= dd->n) {
			snprintf(why, why_len, "sample index %llu is outside the %zu samples", (unsigned long long)indices[k], dd->n);
			return -1;
		}
	}
	if (check(cudaMemcpy(dd->idx, indices, n * sizeof(uint64_t), cudaMemcpyHostToDevice), "upload the indices", why,
		  why_len) != 0)
		return -1;
	layout l = layout_of(s);
	int b = (int)n;
	size_t hn = n * (size_t)s.hidden;
	hidden_forward<<<blocks_for(hn), THREADS>>>(b, s.dim, s.hidden, dd->x, dd->idx, params + l.w1, params + l.b1, dd->h);
	output_forward_backward<<<blocks_for(n), THREADS>>>(b, s.hidden, s.classes, dd->h, params + l.w2, params + l.b2,
							    dd->y, dd->idx, dd->dlogit, dd->loss, dd->correct);
	hidden_backward<<<blocks_for(hn), THREADS>>>(b, s.hidden, s.classes, dd->h, params + l.w2, dd->dlogit, dd->dh);
	layer_gradient<<<blocks_for((size_t)s.classes * (s.hidden + 1)), THREADS>>>(b, s.classes, s.hidden, dd->dlogit, dd->h,
										   NULL, out + l.w2, out + l.b2);
	layer_gradient<<<blocks_for((size_t)s.hidden * (s.dim + 1)), THREADS>>>(b, s.hidden, s.dim, dd->dh, dd->x, dd->idx,
									       out + l.w1, out + l.b1);
	batch_stats<<<1, 1>>>(b, dd->loss, dd->correct, out + mlp_param_count(s));
	return check(cudaGetLastError(), "a kernel launch of the step", why, why_len);
}

extern "C" int mlp_sgd_update(float *params, float *velocity, const float *grad, size_t count, float samples, float lr,
			      float momentum, char *why, size_t why_len)
{
	sgd_momentum<<<blocks_for(count), THREADS>>>(count, params, velocity, grad, 1.0f / samples, lr, momentum);
	return check(cudaGetLastError(), "the update kernel's launch", why, why_len);
}

extern "C" int mlp_touch(uint8_t *bytes, size_t at, char *why, size_t why_len)
{
	touch_byte<<<1, 1>>>(bytes, at);
	return check(cudaGetLastError(), "the extra state's kernel launch", why, why_len);
}

extern "C" int mlp_sync(char *why, size_t why_len)
{
	return check(cudaDeviceSynchronize(), "the step's kernels", why, why_len);
}

extern "C" void *mlp_device_alloc(size_t bytes, char *why, size_t why_len)
{
	void *p = NULL;
	if (check(cudaMalloc(&p, bytes), "cudaMalloc", why, why_len) != 0)
		return NULL;
	if (check(cudaMemset(p, 0, bytes), "cudaMemset", why, why_len) != 0) {
		cudaFree(p);
		return NULL;
	}
	return p;
}

extern "C" void mlp_device_free(void *p)
{
	cudaFree(p);
}

extern "C" int mlp_copy_to_host(void *dst, const void *device_src, size_t bytes, char *why, size_t why_len)
{
	return check(cudaMemcpy(dst, device_src, bytes, cudaMemcpyDeviceToHost), "copy from the device", why, why_len);
}
