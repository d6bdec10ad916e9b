/* Fixed-bucket histograms (see histogram.h for why fixed). Counts are kept per bucket and summed when
 * read, so an observation touches one counter. */
#include "histogram.h"

#include <assert.h>
#include <string.h>

void ftl_histogram_create(ftl_histogram *h, const double *bounds, int n_bounds)
{
	assert(n_bounds >= 0 && n_bounds <= FTL_HISTOGRAM_MAX_BUCKETS);
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->n_bounds = n_bounds;
}

void ftl_histogram_observe(ftl_histogram *h, double value)
{
	int i = 0;
	while (i < h->n_bounds && value > h->bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += value;
}

uint64_t ftl_histogram_cumulative(const ftl_histogram *h, int i)
{
	uint64_t total = 0;
	for (int b = 0; b <= i && b <= h->n_bounds; b++)
		total += h->counts[b];
	return total;
}
