/* The tests' plain socket client (see line_client.h). */
#include "line_client.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void line_client_open(line_client *client, const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval timeout = {.tv_sec = LINE_CLIENT_TIMEOUT_S};
	client->len = 0;
	client->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(client->fd >= 0);
	setsockopt(client->fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
	setsockopt(client->fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
	if (connect(client->fd, (struct sockaddr *)&addr, sizeof addr) != 0)
		fail_msg("cannot connect to %s: %s", path, strerror(errno));
}

void line_client_send(line_client *client, const char *text)
{
	size_t len = strlen(text);
	while (len > 0) {
		ssize_t n = send(client->fd, text, len, MSG_NOSIGNAL);
		if (n < 0)
			fail_msg("send to the control socket failed: %s", strerror(errno));
		text += n;
		len -= (size_t)n;
	}
}

json_t *line_client_read_json(line_client *client)
{
	char *newline;
	json_error_t error;
	json_t *value;
	while ((newline = memchr(client->buf, '\n', client->len)) == NULL) {
		ssize_t n;
		if (client->len == sizeof client->buf)
			client->len = sizeof client->buf / 2; /* skim a long line: keep reading to its end */
		n = recv(client->fd, client->buf + client->len, sizeof client->buf - client->len, 0);
		if (n == 0)
			fail_msg("the server closed the connection before a full line");
		if (n < 0)
			fail_msg("no line from the server within %d s: %s", LINE_CLIENT_TIMEOUT_S, strerror(errno));
		client->len += (size_t)n;
	}
	value = json_loadb(client->buf, (size_t)(newline - client->buf), 0, &error);
	client->len -= (size_t)(newline + 1 - client->buf);
	memmove(client->buf, newline + 1, client->len);
	if (value == NULL)
		value = json_pack("{s:s}", "unparsed", error.text);
	return value;
}

void line_client_expect_closed(line_client *client)
{
	char scratch[4096];
	for (;;) {
		ssize_t n = recv(client->fd, scratch, sizeof scratch, 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return;
		if (n < 0)
			fail_msg("the server did not close the connection within %d s: %s", LINE_CLIENT_TIMEOUT_S,
				 strerror(errno));
	}
}

void line_client_close(line_client *client)
{
	if (client->fd >= 0)
		close(client->fd);
	client->fd = -1;
}
