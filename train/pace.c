/* The slow-rank verdict (pace.h): leads from the exchanged windows, the suspect and its run of windows. */
#include "pace.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of the n values of v except v[skip] (skip -1: all of them); scratch holds n values. */
static double median_except(const double *v, uint32_t n, int skip, double *scratch)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if ((int)i != skip)
			scratch[k++] = v[i];
	if (k == 0)
		return 0.0;
	qsort(scratch, k, sizeof *scratch, by_value);
	return k % 2 ? scratch[k / 2] : (scratch[k / 2 - 1] + scratch[k / 2]) / 2.0;
}

static bool is_usable(const ftl_pace_window *w, uint64_t view_epoch)
{
	return w->view_epoch == view_epoch && w->steps * 2 >= FTL_PACE_WINDOW_STEPS && w->steps > 0;
}

/* The rank over the share this window, or -1. */
static int find_suspect(const ftl_pace_row *rows, uint32_t n, double *step, double *scratch)
{
	for (uint32_t i = 0; i < n; i++)
		step[i] = rows[i].step_ms;
	double share = FTL_PACE_SLOW_SHARE * median_except(step, n, -1, scratch);
	int best = -1;
	for (uint32_t i = 0; i < n; i++)
		if (rows[i].lead_ms >= share && rows[i].lead_ms > 0 && (best < 0 || rows[i].lead_ms > rows[best].lead_ms))
			best = (int)i;
	return best;
}

ftl_err ftl_pace_add(ftl_pace *p, uint64_t view_epoch, const ftl_pace_window *windows, uint32_t n)
{
	ftl_pace_row *rows = calloc(n + 1, sizeof *rows);
	double *comm = calloc(2 * (size_t)n + 2, sizeof *comm), *scratch = comm + n + 1;
	if (rows == NULL || comm == NULL) {
		free(rows);
		free(comm);
		return ftl_diag_set(FTL_ERR_SYSTEM, "pace: out of memory for the windows of %u ranks", n);
	}
	bool is_whole = n >= 2;
	for (uint32_t i = 0; i < n; i++) {
		const ftl_pace_window *w = &windows[i];
		if (!is_usable(w, view_epoch)) {
			is_whole = false;
			continue;
		}
		rows[i].step_ms = (double)w->step_us / 1000.0 / (double)w->steps;
		rows[i].comm_ms = (double)w->comm_us / 1000.0 / (double)w->steps;
		comm[i] = rows[i].comm_ms;
	}
	int suspect = -1;
	if (is_whole) {
		for (uint32_t i = 0; i < n; i++)
			rows[i].lead_ms = median_except(comm, n, (int)i, scratch) - rows[i].comm_ms;
		suspect = find_suspect(rows, n, comm, scratch);
	} else {
		memset(rows, 0, n * sizeof *rows);
	}
	bool is_same = suspect >= 0 && suspect == p->suspect && view_epoch == p->view_epoch;
	p->suspect_windows = suspect < 0 ? 0 : is_same ? p->suspect_windows + 1 : 1;
	p->suspect = suspect;
	p->slow = p->suspect_windows >= FTL_PACE_SLOW_WINDOWS ? suspect : -1;
	free(p->rows);
	p->rows = rows;
	p->n = n;
	p->view_epoch = view_epoch;
	p->exchanges++;
	free(comm);
	return FTL_OK;
}

void ftl_pace_init(ftl_pace *p)
{
	memset(p, 0, sizeof *p);
	p->suspect = p->slow = -1;
}

void ftl_pace_free(ftl_pace *p)
{
	free(p->rows);
	ftl_pace_init(p);
}
