/* A Prometheus-style histogram with fixed buckets, small enough to live under a lock and be copied whole
 * into a metrics snapshot. Why fixed buckets: an observation is O(buckets) with no allocation (it runs in
 * the training thread between collectives), and every worker reports the same bounds, so Prometheus can
 * add their buckets up across the job. */
#ifndef FTL_BASE_HISTOGRAM_H
#define FTL_BASE_HISTOGRAM_H

#include <stdint.h>

#define FTL_HISTOGRAM_MAX_BUCKETS 16

typedef struct ftl_histogram {
	const double *bounds;                           /* upper bounds, ascending; +Inf is implicit */
	int n_bounds;
	uint64_t counts[FTL_HISTOGRAM_MAX_BUCKETS + 1]; /* per bucket (not cumulative); [n_bounds] is above the last */
	uint64_t count;
	double sum;
} ftl_histogram;

/* bounds must outlive the histogram (a static table) and hold at most FTL_HISTOGRAM_MAX_BUCKETS values. */
void ftl_histogram_create(ftl_histogram *h, const double *bounds, int n_bounds);
void ftl_histogram_observe(ftl_histogram *h, double value);
/* Observations <= bounds[i]; i == n_bounds gives all of them (the +Inf bucket). */
uint64_t ftl_histogram_cumulative(const ftl_histogram *h, int i);

#endif
