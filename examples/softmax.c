/* Softmax regression: logits = W x + b, p = softmax(logits), loss = -log p[label], and the gradient
 * d loss / d logits = p - onehot(label). Computed in double per sample for a stable log-sum-exp; the
 * parameters and the gradient that travels through the allreduce are float. */
#include "softmax.h"

#include <math.h>

enum { MAX_CLASSES = 256 };

/* Class probabilities of one sample into p; returns -log p[label]. Sets *predicted to the argmax. */
static double forward(const float *params, const dataset *d, size_t i, double *p, int *predicted)
{
	const float *x = d->features + i * (size_t)d->dim;
	const float *bias = params + (size_t)d->classes * d->dim;
	double max_logit = -INFINITY;
	for (int c = 0; c < d->classes; c++) {
		const float *w = params + (size_t)c * d->dim;
		double z = bias[c];
		for (int k = 0; k < d->dim; k++)
			z += (double)w[k] * x[k];
		p[c] = z;
		if (z > max_logit) {
			max_logit = z;
			*predicted = c;
		}
	}
	double total = 0;
	for (int c = 0; c < d->classes; c++)
		total += p[c] = exp(p[c] - max_logit);
	for (int c = 0; c < d->classes; c++)
		p[c] /= total;
	return -log(p[d->labels[i]] > 1e-300 ? p[d->labels[i]] : 1e-300);
}

void softmax_accumulate(const float *params, const dataset *d, const uint64_t *indices, size_t n,
			float *grad_sum, softmax_sums *sums)
{
	double p[MAX_CLASSES];
	float *grad_bias = grad_sum + (size_t)d->classes * d->dim;
	for (size_t s = 0; s < n; s++) {
		size_t i = (size_t)indices[s];
		int predicted = 0;
		sums->loss += forward(params, d, i, p, &predicted);
		sums->correct += predicted == d->labels[i];
		const float *x = d->features + i * (size_t)d->dim;
		for (int c = 0; c < d->classes; c++) {
			float g = (float)(p[c] - (c == d->labels[i]));
			float *grad_w = grad_sum + (size_t)c * d->dim;
			for (int k = 0; k < d->dim; k++)
				grad_w[k] += g * x[k];
			grad_bias[c] += g;
		}
	}
}

void softmax_evaluate(const float *params, const dataset *d, double *mean_loss, double *accuracy)
{
	double p[MAX_CLASSES], loss = 0;
	size_t correct = 0;
	for (size_t i = 0; i < d->n; i++) {
		int predicted = 0;
		loss += forward(params, d, i, p, &predicted);
		correct += predicted == d->labels[i];
	}
	*mean_loss = d->n ? loss / d->n : 0;
	*accuracy = d->n ? (double)correct / d->n : 0;
}

void sgd_momentum_update(float *params, float *velocity, const float *grad, size_t count, float lr,
			 float momentum)
{
	for (size_t k = 0; k < count; k++) {
		velocity[k] = momentum * velocity[k] + grad[k];
		params[k] -= lr * velocity[k];
	}
}
