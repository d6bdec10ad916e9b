/* Small helpers every settings reader and checker here needs: format a message into the caller's error
 * buffer and return -1 (so `return ftl_errf(err, len, "...")` reads as one failure), and read a whole
 * number or a string from the environment within bounds, naming the variable when it is wrong. A
 * variable that is set but empty is refused by both readers: unset it to get the default. */
#ifndef FTL_AGENT_ERRFMT_H
#define FTL_AGENT_ERRFMT_H

#include <stddef.h>
#include <stdint.h>

#include "ftl/settings.h" /* ftl_env_int */

int ftl_errf(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Copies var into dst (cap bytes) when set; leaves dst alone when unset; -1 when empty or too long. */
int ftl_env_str(const char *var, char *dst, size_t cap, char *err, size_t len);

#endif
