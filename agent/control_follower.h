/* The event backlog of one `events` follower of the control socket (control.c), bounded whatever the
 * follower does.
 *
 * Why: a follower that stops reading used to be written to with one uv_write per event, each with its own
 * request and buffer list, until 4 MiB of lines waited for it: 50 such followers took an agent to
 * 274-364 MiB, and since the memory was thousands of small blocks the allocator kept it after they closed.
 * Now a follower holds references to shared lines (control_line.h) in a ring of fixed size, and at most
 * one write (of up to FTL_FOLLOWER_WRITE_LINES lines) is in flight: a follower costs this struct (about
 * 9 KiB) plus its share of lines that other followers mostly share too.
 *
 * One that falls FTL_CONTROL_FOLLOWER_BACKLOG events behind is dropped: the events not yet handed to a
 * write are let go and replaced by one final line, {"ok":false,"dropped":true,"error":"..."}; the caller
 * closes the connection once that line is written (ftl_follower_is_drained) and counts the drop. A
 * dropped follower that never reads again holds only its write in flight and that line. */
#ifndef FTL_AGENT_CONTROL_FOLLOWER_H
#define FTL_AGENT_CONTROL_FOLLOWER_H

#include <stdbool.h>

#include <uv.h>

#include "base/diag.h"
#include "control_line.h"

#define FTL_CONTROL_FOLLOWER_BACKLOG 1024 /* events waiting for one follower before it is dropped */
#define FTL_FOLLOWER_WRITE_LINES 64        /* lines in one write */

typedef struct ftl_follower ftl_follower;

typedef enum ftl_follower_push {
	FTL_FOLLOWER_QUEUED,  /* the line waits for its write */
	FTL_FOLLOWER_DROPPED, /* the backlog was full: dropped now, its final line queued instead */
	FTL_FOLLOWER_IGNORED, /* dropped before: nothing more is queued */
	FTL_FOLLOWER_FAILED,  /* out of memory for the final line: close it at once */
} ftl_follower_push;

/* NULL when out of memory. */
ftl_follower *ftl_follower_new(void);
/* Releases every line it still holds; NULL is fine. Only once its write, if any, has called back. */
void ftl_follower_free(ftl_follower *f);
/* Queues a reference to line (or drops the follower, see above). */
ftl_follower_push ftl_follower_add(ftl_follower *f, shared_line *line);
/* Starts a write of the waiting lines to stream, unless one is in flight or none wait; cb must call
 * ftl_follower_write_done. FTL_OK, or FTL_ERR_SYSTEM with libuv's reason in the diag (close the connection). */
ftl_err ftl_follower_write(ftl_follower *f, uv_stream_t *stream, uv_write_cb cb);
/* The write in flight has called back (whatever its status): its lines are released. */
void ftl_follower_write_done(ftl_follower *f);
/* Dropped, and everything up to its final line has been written. */
bool ftl_follower_is_drained(const ftl_follower *f);

#endif
