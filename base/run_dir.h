/* Where agents put their control sockets. The agent (which creates the socket) and ftlctl (which looks
 * for it) both call these, so the two can never disagree about the default place.
 *
 * The run directory is, first match wins: an explicit choice (a flag or a config value), the
 * environment variable FTL_RUN_DIR, $XDG_RUNTIME_DIR/ftl when XDG_RUNTIME_DIR is set, /tmp/ftl-<uid>.
 * An agent named NAME listens on <run dir>/NAME.sock.
 *
 * Trust: a socket in a directory another user controls can be swapped for theirs, and then ftlctl would
 * hand them whatever it sends (a new cluster key). So the agent uses only a run directory that this user
 * owns and nobody else can write, and ftlctl talks only to a socket this user owns, in a directory that
 * only this user or root can change (or a sticky one, like /tmp). */
#ifndef FTL_BASE_RUN_DIR_H
#define FTL_BASE_RUN_DIR_H

#include <stddef.h>

#include "diag.h"

#define FTL_RUN_DIR_ENV "FTL_RUN_DIR"
#define FTL_CONTROL_SOCKET_ENV "FTL_CONTROL_SOCKET"
#define FTL_NAME_ENV "FTL_NAME"
#define FTL_SOCKET_SUFFIX ".sock"

/* Writes the run directory into out. explicit_dir may be NULL or empty (then the environment and the
 * defaults decide). Returns 0, or -1 when the result does not fit in out_len bytes. */
int ftl_run_dir_resolve(const char *explicit_dir, char *out, size_t out_len);

/* Writes <run_dir>/<name>.sock into out. Returns 0, or -1 when it does not fit. */
int ftl_run_dir_socket_path(const char *run_dir, const char *name, char *out, size_t out_len);

/* FTL_OK when dir is a directory owned by this user that group and others cannot write; else an error with
 * the diagnostic saying which (the path, its owner, its mode) and what to do. */
ftl_err ftl_run_dir_check_private(const char *dir);

/* ftlctl's check before it sends anything: FTL_OK when path does not exist (nothing to trust yet), or is a
 * socket owned by this user in a directory others cannot swap it in; an error with the diagnostic
 * otherwise. */
ftl_err ftl_run_dir_check_socket(const char *path);

#endif
