/* `ftlctl top`: one frame of the live view, from two status replies taken elapsed_s apart (the step rate
 * is the difference). Pure: ftlctl.c does the polling and the redrawing in place. */
#ifndef FTL_CTL_TOP_H
#define FTL_CTL_TOP_H

#include <jansson.h>
#include <stdio.h>

/* The frame: who and where, the view, steps and their rate, the last recovery, the member counts, a blank
 * line, the member table. before may be NULL (no rate yet). */
void ctl_top_render(FILE *out, const json_t *now, const json_t *before, double elapsed_s);

#endif
