/* The client end of the control socket (see ctl_conn.h). The agent's replies are trusted no more than
 * any input: a line longer than CTL_MAX_REPLY, or one that is not a JSON object, is an error. */
#include "ctl_conn.h"

#include "ctl_exit.h"
#include "base/run_dir.h"

#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CTL_MAX_REPLY (64u << 20)
#define CTL_CONNECT_TIMEOUT_S 10

static const char start_hint[] =
	"start one with ftl-agent, or point ftlctl at it with --socket PATH, --name NAME or FTL_RUN_DIR";

/* "user alice" or "uid 1000": who owns path, for the permission message. */
static void describe_owner(const char *path, char *out, size_t out_len)
{
	struct stat st;
	struct passwd *pw;
	if (stat(path, &st) != 0) {
		snprintf(out, out_len, "the agent's user");
		return;
	}
	pw = getpwuid(st.st_uid);
	if (pw != NULL)
		snprintf(out, out_len, "user %s", pw->pw_name);
	else
		snprintf(out, out_len, "uid %u", (unsigned)st.st_uid);
}

static int connect_failed(const char *path, int err)
{
	char owner[128];
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		fprintf(stderr, "ftlctl: no agent is running: there is no control socket at %s;\n  %s\n", path,
			start_hint);
		return CTL_EXIT_NO_AGENT;
	case ECONNREFUSED:
		fprintf(stderr,
			"ftlctl: no agent is running: nothing listens on %s (left over from an agent that exited?);\n"
			"  %s\n",
			path, start_hint);
		return CTL_EXIT_NO_AGENT;
	case EACCES:
	case EPERM:
		describe_owner(path, owner, sizeof owner);
		fprintf(stderr,
			"ftlctl: permission denied opening the control socket %s: it is private to %s (mode 0600);\n"
			"  run ftlctl as that user\n",
			path, owner);
		return CTL_EXIT_DENIED;
	case EAGAIN:
		fprintf(stderr, "ftlctl: the agent at %s did not accept the connection within %d s; it may be "
				"overloaded or stuck\n",
			path, CTL_CONNECT_TIMEOUT_S);
		return CTL_EXIT_FAILED;
	default:
		fprintf(stderr, "ftlctl: cannot connect to the control socket %s: %s\n", path, strerror(err));
		return CTL_EXIT_FAILED;
	}
}

int ctl_conn_open(ctl_conn *conn, const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval timeout = {.tv_sec = CTL_CONNECT_TIMEOUT_S};
	int err;

	*conn = (ctl_conn){.fd = -1, .path = path};
	if (strlen(path) >= sizeof addr.sun_path) {
		fprintf(stderr, "ftlctl: the socket path %s is too long for a Unix socket (at most %zu bytes)\n",
			path, sizeof addr.sun_path - 1);
		return CTL_EXIT_USAGE;
	}
	if (ftl_run_dir_check_socket(path) != FTL_OK) {
		fprintf(stderr, "ftlctl: %s\n", ftl_diag_message()); /* nothing was sent */
		return CTL_EXIT_DENIED;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn->fd < 0) {
		fprintf(stderr, "ftlctl: cannot create a socket: %s\n", strerror(errno));
		return CTL_EXIT_FAILED;
	}
	/* A Unix connect waits only while the listener's backlog is full; the send timeout bounds that. */
	setsockopt(conn->fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
	if (connect(conn->fd, (struct sockaddr *)&addr, sizeof addr) == 0)
		return CTL_EXIT_OK;
	err = errno;
	ctl_conn_close(conn);
	return connect_failed(path, err);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads more bytes into conn->buf before deadline (-1: none). Returns 1 with bytes, 0 at end of
 * stream, or an exit code (negated) after printing why. */
static int read_more(ctl_conn *conn, long long deadline, int timeout_ms)
{
	struct pollfd pfd = {.fd = conn->fd, .events = POLLIN};
	ssize_t n;
	for (;;) {
		int wait = deadline < 0 ? -1 : (int)(deadline - now_ms());
		int rc;
		if (deadline >= 0 && wait <= 0) {
			fprintf(stderr, "ftlctl: the agent at %s did not answer within %d s; it may be busy or stuck\n",
				conn->path, timeout_ms / 1000);
			return -CTL_EXIT_FAILED;
		}
		rc = poll(&pfd, 1, wait);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			fprintf(stderr, "ftlctl: waiting for the agent failed: %s\n", strerror(errno));
			return -CTL_EXIT_FAILED;
		}
		if (rc > 0)
			break;
	}
	if (conn->cap - conn->len < 4096) {
		size_t cap = conn->cap ? conn->cap * 2 : 16384;
		char *grown = realloc(conn->buf, cap);
		if (grown == NULL) {
			fprintf(stderr, "ftlctl: out of memory reading the agent's reply\n");
			return -CTL_EXIT_FAILED;
		}
		conn->buf = grown;
		conn->cap = cap;
	}
	n = read(conn->fd, conn->buf + conn->len, conn->cap - conn->len);
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 1;
		fprintf(stderr, "ftlctl: reading from the agent at %s failed: %s\n", conn->path, strerror(errno));
		return -CTL_EXIT_FAILED;
	}
	if (n == 0)
		return 0;
	conn->len += (size_t)n;
	return 1;
}

static char *find_newline(const ctl_conn *conn, size_t from)
{
	return conn->len > from ? memchr(conn->buf + from, '\n', conn->len - from) : NULL;
}

int ctl_conn_read(ctl_conn *conn, int timeout_ms, json_t **msg)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	size_t scanned = 0;
	char *newline;
	json_error_t parse_error;

	*msg = NULL;
	while ((newline = find_newline(conn, scanned)) == NULL) {
		int rc;
		scanned = conn->len;
		if (conn->len > CTL_MAX_REPLY) {
			fprintf(stderr, "ftlctl: the agent's reply is longer than %u bytes; giving up\n", CTL_MAX_REPLY);
			return CTL_EXIT_FAILED;
		}
		rc = read_more(conn, deadline, timeout_ms);
		if (rc < 0)
			return -rc;
		if (rc == 0)
			return CTL_EXIT_OK; /* end of stream; *msg stays NULL */
	}
	size_t line_len = (size_t)(newline - conn->buf);
	*msg = json_loadb(conn->buf, line_len, 0, &parse_error);
	memmove(conn->buf, newline + 1, conn->len - line_len - 1);
	conn->len -= line_len + 1;
	if (*msg == NULL || !json_is_object(*msg)) {
		fprintf(stderr, "ftlctl: the agent sent something that is not a JSON object (%s); is %s an ftl "
				"agent of the same version?\n",
			*msg == NULL ? parse_error.text : "another JSON type", conn->path);
		json_decref(*msg);
		*msg = NULL;
		return CTL_EXIT_FAILED;
	}
	return CTL_EXIT_OK;
}

static int send_all(ctl_conn *conn, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = send(conn->fd, data, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "ftlctl: sending to the agent at %s failed: %s\n", conn->path,
				errno == EAGAIN ? "timed out" : strerror(errno));
			return CTL_EXIT_FAILED;
		}
		data += n;
		len -= (size_t)n;
	}
	return CTL_EXIT_OK;
}

int ctl_conn_call(ctl_conn *conn, const json_t *request, int timeout_ms, json_t **reply)
{
	char *text = json_dumps(request, JSON_COMPACT);
	int rc;
	*reply = NULL;
	if (text == NULL) {
		fprintf(stderr, "ftlctl: out of memory building the request\n");
		return CTL_EXIT_FAILED;
	}
	rc = send_all(conn, text, strlen(text));
	if (rc == CTL_EXIT_OK)
		rc = send_all(conn, "\n", 1);
	free(text);
	if (rc != CTL_EXIT_OK)
		return rc;
	rc = ctl_conn_read(conn, timeout_ms, reply);
	if (rc == CTL_EXIT_OK && *reply == NULL) {
		fprintf(stderr, "ftlctl: the agent at %s closed the connection without answering; it may have "
				"exited (check its log)\n",
			conn->path);
		return CTL_EXIT_FAILED;
	}
	return rc;
}

void ctl_conn_close(ctl_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
	free(conn->buf);
	conn->buf = NULL;
	conn->len = conn->cap = 0;
}
