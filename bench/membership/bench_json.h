/* One JSON line per figure, as every ftl benchmark prints them. */
#ifndef FTL_BENCH_JSON_H
#define FTL_BENCH_JSON_H

#include <stdio.h>

#define BENCH_FIGURE(bench, fmt, ...) printf("{\"bench\":\"%s\"," fmt "}\n", bench, __VA_ARGS__)

#endif
