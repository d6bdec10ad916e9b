/* A plain blocking socket client for the control tests: what any program (socat, a script) would do,
 * with a receive timeout so a missing reply fails the test instead of hanging it. */
#ifndef FTL_TESTS_LINE_CLIENT_H
#define FTL_TESTS_LINE_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#define LINE_CLIENT_TIMEOUT_S 5

typedef struct line_client {
	int fd;
	char buf[1 << 16];
	size_t len;
} line_client;

/* Connects to path; fails the test if it cannot. */
void line_client_open(line_client *client, const char *path);
void line_client_send(line_client *client, const char *text);
/* Reads one line and parses it as JSON (the caller frees it); fails the test on timeout or EOF.
 * Lines longer than the buffer are skimmed: only their first bytes are kept (and not parsed). */
json_t *line_client_read_json(line_client *client);
/* Reads until the server closes the connection (EOF or reset); fails the test on timeout. */
void line_client_expect_closed(line_client *client);
void line_client_close(line_client *client);

#endif
