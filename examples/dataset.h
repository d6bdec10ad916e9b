/* A synthetic classification dataset that every worker generates identically from a seed, so a
 * data-parallel job needs no shared storage: only dataset indices travel (through the sampler). */
#ifndef FTL_EXAMPLE_DATASET_H
#define FTL_EXAMPLE_DATASET_H

#include <stddef.h>
#include <stdint.h>

typedef struct dataset {
	size_t n;          /* samples */
	int dim;           /* features per sample */
	int classes;
	float *features;   /* [n][dim], row-major */
	uint8_t *labels;   /* [n], 0..classes-1 */
} dataset;

/* Fills train (n_train samples) and test (n_test) from one seeded stream: `classes` overlapping Gaussian
 * clusters in `dim` dimensions, features on unequal scales, and a fraction of labels replaced at random.
 * -1 when out of memory. */
int dataset_generate(dataset *train, dataset *test, size_t n_train, size_t n_test, int dim, int classes,
		     uint64_t seed);
void dataset_free(dataset *d);

#endif
