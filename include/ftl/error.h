/* ftl_err, the code every fallible call of the library returns, and the calling thread's last error. The
 * convention (what returns what, where the message goes, the exceptions) is written at the top of ftl.h.
 * A header of its own so that agent.h and settings.h can return ftl_err without the whole API. */
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
			      * the job's (the message names the difference); it has left the cluster */
	FTL_ERR_MAX
} ftl_err;

extern FTL_API const char *const ftl_err_strs[FTL_ERR_MAX];

/* A short, stable message for an error code: "peer lost", "aborted", "timed out", ... */
FTL_API const char *ftl_strerror(ftl_err err);

/* The calling thread's last error: its code (FTL_OK when none yet) and its message ("" when none). The message
 * stays valid until the next failing call on this thread. */
FTL_API ftl_err ftl_error_code(void);
FTL_API const char *ftl_error_message(void);

#ifdef __cplusplus
}
#endif

#endif
