/* A failure kept for other threads: the code and message of an error that outlives the call that saw it.
 * The diag (diag.h) is per thread and replaced by the next failure; three errors must stay readable from
 * elsewhere until something replaces them on purpose: a broken communicator's (ftl_comm_error: the abort
 * that broke it may come from another thread, and every later call repeats it), the agent's last failed
 * step or collective (ftl_last_error), and the checkpoint writer's last failed write (read by status). They
 * are one type, so they move to and from the diag the same way.
 *
 * Not synchronised: its owner writes and reads it under its own lock. */
#ifndef FTL_BASE_KEPT_ERROR_H
#define FTL_BASE_KEPT_ERROR_H

#include <stdarg.h>

#include "base/diag.h"

typedef struct ftl_kept_error {
	ftl_err code;                  /* FTL_OK: nothing kept */
	char message[FTL_DIAG_MSG_MAX];
} ftl_kept_error;

/* Keeps code and the formatted message (arguments may point into k->message); returns code. */
ftl_err ftl_kept_error_set(ftl_kept_error *k, ftl_err code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
ftl_err ftl_kept_error_vset(ftl_kept_error *k, ftl_err code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* Keeps the calling thread's diag; returns its code. */
ftl_err ftl_kept_error_from_diag(ftl_kept_error *k);
/* Puts the kept error in the calling thread's diag; returns its code. */
ftl_err ftl_kept_error_to_diag(const ftl_kept_error *k);
/* Forgets it. */
void ftl_kept_error_clear(ftl_kept_error *k);

#endif
