/* ftlctl's side of the control socket: connect (telling "no agent" from "not allowed"), send one
 * request line, read one reply line within a deadline. Blocking I/O with poll timeouts: ftlctl does
 * one thing at a time. Every function prints what went wrong on stderr and returns an ctl_exit code. */
#ifndef FTL_CTL_CONN_H
#define FTL_CTL_CONN_H

#include <jansson.h>
#include <stddef.h>

#define CTL_REPLY_TIMEOUT_MS 10000
#define CTL_LEAVE_TIMEOUT_MS 30000
#define CTL_WAIT_FOREVER (-1)

typedef struct ctl_conn {
	int fd;
	const char *path;
	char *buf;       /* bytes received after the last complete line */
	size_t len, cap;
} ctl_conn;

int ctl_conn_open(ctl_conn *conn, const char *path);
/* Sends request and reads its reply into *reply (the caller frees it); an ok:false reply is still
 * CTL_EXIT_OK here, the caller decides. */
int ctl_conn_call(ctl_conn *conn, const json_t *request, int timeout_ms, json_t **reply);
/* Reads the next line as a JSON object (events). *msg is NULL at a clean end of stream. */
int ctl_conn_read(ctl_conn *conn, int timeout_ms, json_t **msg);
void ctl_conn_close(ctl_conn *conn);

#endif
