/* The calling thread's last error (Tarantool's diagnostics area): a code and a formatted message that say
 * what happened and what to do. A fallible function returns an ftl_err (or NULL when it makes something)
 * and leaves the why here, so `return ftl_diag_set(FTL_ERR_INVALID, "FTL_SEEDS=%s: ...", v);` reads as one
 * failure, and the caller that reports it reads ftl_diag_message() (ftl_error_message() in the public API).
 *
 * Per thread, so the agent's loop thread and the training thread never overwrite each other's reason. A
 * success does not clear it: read it only after a call said it failed. Setting it keeps errno. */
#ifndef FTL_BASE_DIAG_H
#define FTL_BASE_DIAG_H

#include "ftl/error.h"

/* Longest message kept, terminator included; longer ones are cut. */
#define FTL_DIAG_MSG_MAX 1024

/* Records code and the message, returns code. The arguments may include ftl_diag_message() itself. */
ftl_err ftl_diag_set(ftl_err code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a refused setting: also records the FTL_* variable it is about (read back with
 * ftl_error_setting), so that a binding tells which setting failed without reading the message.
 * ftl_diag_set forgets the setting; ftl_diag_prefix keeps it. */
ftl_err ftl_diag_set_setting(const char *setting, ftl_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Puts context in front of the recorded message ("checkpoint /ck/step-9: " + message), keeps the code and
 * returns it: for a caller that adds where a callee's failure happened. */
ftl_err ftl_diag_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Names the FTL_* setting the recorded error is about (as ftl_diag_set_setting would have), keeps the rest
 * and returns the code: for a caller that learns it from context ("FTL_PROFILE=" + a callee's refusal). */
ftl_err ftl_diag_about(const char *setting);
/* The recorded code (FTL_OK when nothing was recorded on this thread) and message ("" then). */
ftl_err ftl_diag_code(void);
const char *ftl_diag_message(void);
/* Forgets the recorded error: for a caller that handled it. */
void ftl_diag_clear(void);

#endif
