/* The dynamic suspicion timeout of suspicion.h. */
#include "suspicion.h"

#include <math.h>
#include <string.h>

static void add_witness(ftl_suspicion *s, const char *name)
{
	if (s->n_witnesses < FTL_SUSPICION_MAX_WITNESSES) {
		ftl_copy_str(s->witnesses[s->n_witnesses], name, FTL_NAME_MAX);
		s->n_witnesses++;
	}
}

void ftl_suspicion_start(ftl_suspicion *s, int64_t now_us, int64_t min_us, int64_t max_us, int k,
			 const char *accuser)
{
	memset(s, 0, sizeof(*s));
	s->start_us = now_us;
	s->min_us = min_us;
	s->max_us = max_us < min_us ? min_us : max_us;
	s->k = k;
	add_witness(s, accuser);
}

bool ftl_suspicion_confirm(ftl_suspicion *s, const char *from)
{
	if (s->confirmations >= s->k)
		return false;
	for (int i = 0; i < s->n_witnesses; i++)
		if (strcmp(s->witnesses[i], from) == 0)
			return false;
	add_witness(s, from);
	s->confirmations++;
	return true;
}

int64_t ftl_suspicion_deadline(const ftl_suspicion *s)
{
	if (s->k < 1)
		return s->start_us + s->min_us;
	double frac = log((double)s->confirmations + 1.0) / log((double)s->k + 1.0);
	int64_t timeout = s->max_us - (int64_t)(frac * (double)(s->max_us - s->min_us));
	if (timeout < s->min_us)
		timeout = s->min_us;
	return s->start_us + timeout;
}
