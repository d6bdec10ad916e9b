/* The recorder of watch.h. FTL_SIM_TRACE=<member name> prints every event about that member. */
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ftl_watch_init(ftl_watch *w, ftl_sim *sim, int subject, ftl_swim_event_type type)
{
	w->capacity = ftl_sim_capacity(sim) > 4096 ? ftl_sim_capacity(sim) : 4096;
	w->seen_at = malloc((size_t)w->capacity * sizeof(*w->seen_at));
	w->may_die = calloc((size_t)w->capacity, sizeof(*w->may_die));
	w->false_deaths = w->false_lefts = 0;
	w->trace = getenv("FTL_SIM_TRACE"); /* read once: the callback runs for every event */
	ftl_watch_reset(w, subject, type);
	ftl_sim_on_event(sim, ftl_watch_cb, w);
}

void ftl_watch_free(ftl_watch *w)
{
	free(w->seen_at);
	free(w->may_die);
}

void ftl_watch_reset(ftl_watch *w, int subject, ftl_swim_event_type type)
{
	w->subject = subject;
	w->type = type;
	w->subject_deaths = w->subject_lefts = 0;
	memset(w->subject_deaths_by, 0, sizeof(w->subject_deaths_by));
	for (int i = 0; i < w->capacity; i++)
		w->seen_at[i] = -1;
}

void ftl_watch_cb(void *ctx, ftl_sim *sim, int observer, const ftl_swim_event *ev)
{
	ftl_watch *w = ctx;
	if (w->trace && strcmp(w->trace, ev->name) == 0)
		fprintf(stderr, "trace %.4f %s: %s %s inc=%llu %s\n", (double)ev->at_us / 1e6, ftl_sim_name(sim, observer),
			ftl_swim_event_type_strs[ev->type], ev->name, (unsigned long long)ev->incarnation,
			ftl_death_reason_strs[ev->reason]);
	int subject = atoi(ev->name + 1); /* simulator names are "n<index>" */
	if (subject < 0 || subject >= w->capacity || observer >= w->capacity)
		return;
	if (subject == w->subject && ev->type == w->type && w->seen_at[observer] < 0)
		w->seen_at[observer] = ev->at_us;
	if (subject == w->subject) {
		w->subject_deaths += ev->type == FTL_EVENT_DEAD;
		if (ev->type == FTL_EVENT_DEAD)
			w->subject_deaths_by[ev->reason]++;
		w->subject_lefts += ev->type == FTL_EVENT_LEFT;
	}
	if ((ev->type == FTL_EVENT_DEAD || ev->type == FTL_EVENT_LEFT) && !w->may_die[subject]) {
		fprintf(stderr, "watch: %s reported %s %s at %.3f s\n", ftl_sim_name(sim, observer),
			ev->name, ftl_swim_event_type_strs[ev->type], (double)ev->at_us / 1e6);
		if (ev->type == FTL_EVENT_DEAD)
			w->false_deaths++;
		else
			w->false_lefts++;
	}
}

int ftl_watch_count(const ftl_watch *w, ftl_sim *sim)
{
	int n = 0;
	for (int i = 0; i < ftl_sim_size(sim); i++)
		n += i != w->subject && ftl_sim_is_running(sim, i) && w->seen_at[i] >= 0;
	return n;
}

int64_t ftl_watch_last(const ftl_watch *w, ftl_sim *sim)
{
	int64_t t = -1;
	for (int i = 0; i < ftl_sim_size(sim); i++)
		if (i != w->subject && ftl_sim_is_running(sim, i) && w->seen_at[i] > t)
			t = w->seen_at[i];
	return t;
}
