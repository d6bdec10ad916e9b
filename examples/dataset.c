/* The example's data: Gaussian clusters that overlap (so the best possible accuracy is well below 100%),
 * features on scales that differ by up to ~10x (so plain gradient descent has to work for it), and label
 * noise. Everything comes from one xoshiro256** stream seeded by splitmix64: the same seed gives the same
 * bytes on every worker. */
#include "dataset.h"

#include <math.h>
#include <stdlib.h>

enum { MAX_DIM = 1024 };
static const double CENTER_SPREAD = 0.45; /* std-dev of the cluster centres; the noise has std-dev 1 */
static const double LABEL_NOISE = 0.05;   /* fraction of labels replaced by a uniformly random class */
static const double SCALE_SPREAD = 0.8;   /* log-normal spread of the per-feature scales */

typedef struct rng {
	uint64_t s[4];
} rng;

static uint64_t splitmix64_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64_next(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna). */
static uint64_t rng_next(rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in (0, 1]: never 0, so log() below is finite. */
static double rng_uniform(rng *r)
{
	return ((rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

/* Standard normal (Box-Muller; the second value is dropped to keep the stream simple). */
static double rng_normal(rng *r)
{
	double u = rng_uniform(r), v = rng_uniform(r);
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static int rng_below(rng *r, int n)
{
	return (int)(rng_uniform(r) * n) % n;
}

static int dataset_alloc(dataset *d, size_t n, int dim, int classes)
{
	d->n = n;
	d->dim = dim;
	d->classes = classes;
	d->features = malloc(n * (size_t)dim * sizeof(*d->features));
	d->labels = malloc(n ? n : 1);
	return d->features && d->labels ? 0 : -1;
}

typedef struct generator {
	rng r;
	int dim, classes;
	double *centers; /* [classes][dim] */
	double scales[MAX_DIM];
} generator;

static void draw_samples(generator *g, dataset *d)
{
	for (size_t i = 0; i < d->n; i++) {
		int label = rng_below(&g->r, g->classes);
		const double *center = g->centers + (size_t)label * g->dim;
		float *x = d->features + i * (size_t)g->dim;
		for (int k = 0; k < g->dim; k++)
			x[k] = (float)(g->scales[k] * (center[k] + rng_normal(&g->r)));
		if (rng_uniform(&g->r) < LABEL_NOISE)
			label = rng_below(&g->r, g->classes);
		d->labels[i] = (uint8_t)label;
	}
}

int dataset_generate(dataset *train, dataset *test, size_t n_train, size_t n_test, int dim, int classes,
		     uint64_t seed)
{
	if (dim < 1 || dim > MAX_DIM || classes < 2 || classes > 256)
		return -1;
	generator g = {.dim = dim, .classes = classes};
	rng_seed(&g.r, seed);
	g.centers = malloc((size_t)classes * dim * sizeof(*g.centers));
	if (!g.centers || dataset_alloc(train, n_train, dim, classes) || dataset_alloc(test, n_test, dim, classes)) {
		free(g.centers);
		return -1;
	}
	for (int k = 0; k < classes * dim; k++)
		g.centers[k] = CENTER_SPREAD * rng_normal(&g.r);
	for (int k = 0; k < dim; k++)
		g.scales[k] = exp(SCALE_SPREAD * rng_normal(&g.r));
	draw_samples(&g, train);
	draw_samples(&g, test);
	free(g.centers);
	return 0;
}

void dataset_free(dataset *d)
{
	free(d->features);
	free(d->labels);
	d->features = NULL;
	d->labels = NULL;
}
