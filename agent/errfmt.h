/* Two small helpers every settings reader and checker here needs: format a message into the caller's
 * error buffer and return -1 (so `return ftl_errf(err, len, "...")` reads as one failure), and read a
 * whole number from the environment within bounds, naming the variable when it is wrong. */
#ifndef FTL_AGENT_ERRFMT_H
#define FTL_AGENT_ERRFMT_H

#include <stddef.h>
#include <stdint.h>

int ftl_errf(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Leaves *dst alone when var is unset; -1 with a message for a value that is not a number in range. */
int ftl_env_int(const char *var, int64_t *dst, int64_t min, int64_t max, char *err, size_t len);

#endif
