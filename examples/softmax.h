/* Softmax regression (multinomial logistic regression): the model of the example, as plain functions
 * over flat float arrays so that the parameters can be registered with ftl as one buffer. */
#ifndef FTL_EXAMPLE_SOFTMAX_H
#define FTL_EXAMPLE_SOFTMAX_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"

/* Parameters: weights [classes][dim] followed by biases [classes]. */
static inline size_t softmax_param_count(int dim, int classes)
{
	return (size_t)classes * ((size_t)dim + 1);
}

/* Sums over the samples: the gradient of the cross-entropy loss (added to grad_sum), the loss, and how
 * many were classified correctly. Sums, not means, so that ranks can add them up with one allreduce. */
typedef struct softmax_sums {
	double loss;
	uint64_t correct;
} softmax_sums;

void softmax_accumulate(const float *params, const dataset *d, const uint64_t *indices, size_t n,
			float *grad_sum, softmax_sums *sums);

/* Mean loss and accuracy over a whole dataset (no gradient). */
void softmax_evaluate(const float *params, const dataset *d, double *mean_loss, double *accuracy);

/* SGD with momentum: velocity = momentum * velocity + grad; params -= lr * velocity. */
void sgd_momentum_update(float *params, float *velocity, const float *grad, size_t count, float lr,
			 float momentum);

#endif
