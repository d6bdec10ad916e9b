/* ftl_err, the code every fallible call of the library returns, and the calling thread's last error; a
 * header of its own so that every other header can return ftl_err without the rest of the API.
 *
 * Errors, one convention across the library (and its internals):
 * - A fallible call returns ftl_err (FTL_OK is 0, so `if (err)` reads as failure) or, when it makes
 *   something, a pointer that is NULL on failure. Pure predicates and counters return int or bool and say
 *   so where they are declared.
 * - The reason goes to the calling thread's diagnostics area: ftl_error_code() and ftl_error_message() read
 *   it, e.g. "FTL_SEEDS=x: expected host:port[,host:port...]". It names the setting, the peer or the file
 *   and the fix. A later failure on the same thread replaces it; a success leaves it alone, so read it
 *   right after the call that failed. Internally, `return ftl_diag_set(FTL_ERR_INVALID, "...")` (base/diag.h)
 *   records the reason and returns the code in one statement.
 * - Exceptions, for errors that are sticky and seen from other threads: a broken communicator keeps its
 *   reason (ftl_comm_error), since the abort that broke it may come from another thread and every later
 *   call repeats it; the agent keeps the reason of the last failed ftl_execute or collective
 *   (ftl_last_error), since the view change that caused it is seen on the agent's own thread. ftl_execute
 *   and the agent's collectives (ftl_allreduce, ...) also leave it in the calling thread's diagnostics
 *   area; the ftl_comm_* collectives keep it in ftl_comm_error only. Inside the library these, and the
 *   checkpoint writer's last failure, are one kept {code, message} type (base/kept_error.h).
 * - Pure decoders (wire formats, checkpoint headers) return -1 and leave a static reason in the diag; the
 *   caller that counts drops or names the file decides what to say. */
#ifndef FTL_ERROR_H
#define FTL_ERROR_H

#include "ftl/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong. FTL_OK is zero so `if (err)` reads naturally. */
typedef enum ftl_err {
	FTL_OK = 0,
	FTL_ERR_INVALID,     /* bad argument or mismatched collectives; nothing was sent for a bad argument */
	FTL_ERR_PEER_LOST,   /* a peer died, reset its connection or left the collective: rebuild the comm */
	FTL_ERR_ABORTED,     /* ftl_comm_abort() was called on this communicator */
	FTL_ERR_TIMEOUT,     /* the call did not finish before its deadline (a stopped or partitioned peer) */
	FTL_ERR_SYSTEM,      /* the operating system refused something: sockets, memory, threads */
	FTL_ERR_BACKEND,     /* the backend library (CUDA, NCCL) reported an error of its own */
	FTL_ERR_UNSUPPORTED, /* not built in, or not offered by this backend or by the library found at run time */
	FTL_ERR_REFUSED,     /* the job refused this worker: its registered state or job-wide settings differ from
			      * the job's (the message names the difference), or a live member at another address
			      * holds its name (ftl_agent_error); it has left the cluster */
	FTL_ERR_STATE_LOST,  /* the job's trained state is gone: it has done steps, no worker of this view holds
			      * them and there is no checkpoint to resume (the workers that held them left or
			      * died); this worker does not start the job again from step 0, it has left the
			      * cluster */
	FTL_ERR_MAX
} ftl_err;

extern FTL_API const char *const ftl_err_strs[FTL_ERR_MAX];

/* A short, stable message for an error code: "peer lost", "aborted", "timed out", ... */
FTL_API const char *ftl_strerror(ftl_err err);

/* The calling thread's last error: its code (FTL_OK when none yet) and its message ("" when none). The message
 * stays valid until the next failing call on this thread. */
FTL_API ftl_err ftl_error_code(void);
FTL_API const char *ftl_error_message(void);
/* The FTL_* setting the calling thread's last error refused ("FTL_PROBE_TIMEOUT_MS"), or "" when that error is
 * not about one setting: what a binding shows as the setting at fault, without reading the message. */
FTL_API const char *ftl_error_setting(void);

#ifdef __cplusplus
}
#endif

#endif
