/* The control socket server (interface and protocol in control.h): accepts local clients on a Unix
 * socket, splits what they send into lines, parses each line as a JSON object and hands it to the
 * handler, writes the handler's replies back, and fans events out to followers.
 *
 * Everything runs on the loop thread and nothing blocks:
 * - A client's input buffer never holds more than one maximal line; a longer line gets an error reply
 *   and the connection is closed once that reply is flushed.
 * - While a late reply is owed (the handler returned NULL), the client's reading pauses, so the
 *   requests it has pipelined are answered in order. The client struct outlives its connection until
 *   the reply comes, which is what makes ftl_control_reply safe after the client has gone.
 * - An event line is serialized once and shared by every follower (follower.c): each keeps a bounded
 *   backlog of references and at most one write in flight, so a follower costs a fixed few KiB however
 *   far behind it falls; one that falls FTL_CONTROL_FOLLOWER_BACKLOG events behind is dropped with a
 *   final line and counted, and closed once that line is written.
 * - A client that half-closes after its requests still gets every reply, then the connection closes.
 * - A client that pipelines requests but does not read its replies is not answered without bound: once
 *   CLIENT_MAX_QUEUED bytes of replies wait for it, its requests are neither handled nor read (so the
 *   kernel's socket buffer pushes back on it) until half of that has been written. Its memory here is
 *   then at most one input line plus CLIENT_MAX_QUEUED plus one reply, all freed when it closes.
 *
 * A client that hangs up makes the next write to it raise SIGPIPE, which by default kills the whole
 * process (libuv writes to pipes with write(2), not send(2) with MSG_NOSIGNAL). So the first accepted
 * connection blocks SIGPIPE in the thread running the loop (before anything is written to a client);
 * such writes then just fail with EPIPE. Other threads keep their own signal handling.
 *
 * The socket file is 0600 from the moment it exists (see bind_private_socket), without touching the
 * process-wide umask; a run directory created here gets mode 0700, and one that another user owns or
 * can write is refused. Closing removes the socket file
 * only if it is still the one this server bound. */
#include "control.h"
#include "control_follower.h"
#include "base/list.h"
#include "base/run_dir.h"
#include "agent_fork.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_BACKLOG 64
#define READ_CHUNK 4096
#define CLIENT_MAX_QUEUED (2u << 20)  /* replies waiting for a client before its requests stop being read */
#define SOCKET_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

typedef struct line_write {
	uv_write_t req;
	shared_line *line;
} line_write;

struct ftl_control_client {
	uv_pipe_t pipe;
	ftl_control *control;
	ftl_list_link in_control;        /* on control->clients until freed */
	char *in;                        /* bytes read that are not yet a complete line */
	size_t in_len, in_cap;           /* in_cap never exceeds FTL_CONTROL_MAX_LINE + 1 */
	bool is_stream;                  /* follows events once its reply has been sent */
	bool is_awaiting;                /* the handler owes a late reply */
	bool is_read_paused;             /* reading stopped while a late reply is owed */
	bool is_peer_done;               /* the client sent EOF: answer what it asked, then close */
	bool is_closing;                 /* closing: nothing more is read or sent */
	bool is_closed;                  /* the pipe's close callback has run */
	bool is_handling;                /* inside drain_lines, so a reply given there does not recurse */
	bool is_backed_up;               /* CLIENT_MAX_QUEUED bytes of replies wait: not reading requests */
	ftl_follower *follower;          /* its event backlog once it follows (is_stream); NULL before */
};

struct ftl_control {
	uv_loop_t *loop;
	uv_pipe_t server;
	ftl_control_handler handler;
	void *ctx;
	ftl_list clients;
	uint64_t followers_dropped; /* followers dropped for falling FTL_CONTROL_FOLLOWER_BACKLOG events behind */
	unsigned open_handles; /* server plus unclosed clients; the struct is freed at 0 once closing */
	bool is_closing;
	dev_t socket_dev; /* identity of the socket file bound, so closing never removes another's */
	ino_t socket_ino;
	char path[SOCKET_PATH_MAX];
};

static void client_continue(ftl_control_client *client);

#define client_of(link) ftl_owner_of(link, ftl_control_client, in_control)

/* ---- lifetime ---- */

static void control_maybe_free(ftl_control *c)
{
	if (c->is_closing && c->open_handles == 0)
		free(c);
}

static void client_free(ftl_control_client *client)
{
	ftl_list_unlink(&client->control->clients, &client->in_control);
	ftl_follower_free(client->follower);
	free(client->in);
	free(client);
}

static void client_close_cb(uv_handle_t *handle)
{
	ftl_control_client *client = handle->data;
	ftl_control *c = client->control;
	client->is_closed = true;
	c->open_handles--;
	if (!client->is_awaiting || c->is_closing)
		client_free(client);
	control_maybe_free(c);
}

static void client_close(ftl_control_client *client)
{
	client->is_closing = true;
	if (!uv_is_closing((uv_handle_t *)&client->pipe)) {
		ftl_agent_fork_untrack((uv_handle_t *)&client->pipe);
		uv_close((uv_handle_t *)&client->pipe, client_close_cb);
	}
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
	ftl_control_client *client = req->handle->data;
	free(req);
	client_close(client);
}

/* Stops reading and closes once everything queued for the client has been written. */
static void client_close_after_flush(ftl_control_client *client)
{
	uv_shutdown_t *req;
	if (client->is_closing)
		return;
	client->is_closing = true;
	uv_read_stop((uv_stream_t *)&client->pipe);
	req = malloc(sizeof *req);
	if (req == NULL || uv_shutdown(req, (uv_stream_t *)&client->pipe, shutdown_cb) != 0) {
		free(req);
		client_close(client);
	}
}

/* ---- writing ---- */

static size_t queued_bytes(ftl_control_client *client)
{
	return uv_stream_get_write_queue_size((uv_stream_t *)&client->pipe);
}

static void write_cb(uv_write_t *req, int status)
{
	line_write *w = (line_write *)req;
	ftl_control_client *client = req->handle->data;
	line_release(w->line);
	free(w);
	if (status < 0 && status != UV_ECANCELED) {
		client_close(client); /* the client hung up mid-reply */
		return;
	}
	if (client->is_backed_up && !client->is_closing && queued_bytes(client) <= CLIENT_MAX_QUEUED / 2) {
		client->is_backed_up = false; /* it reads again: answer what it sent, then read on */
		if (!client->is_handling)
			client_continue(client);
	}
}

static void client_send_line(ftl_control_client *client, shared_line *line)
{
	line_write *w;
	uv_buf_t buf;
	if (client->is_closing)
		return;
	w = malloc(sizeof *w);
	if (w == NULL) {
		client_close(client);
		return;
	}
	w->line = line;
	line->refs++;
	buf = uv_buf_init(line->data, (unsigned)line->len);
	if (uv_write(&w->req, (uv_stream_t *)&client->pipe, &buf, 1, write_cb) != 0) {
		line_release(line);
		free(w);
		client_close(client);
	}
}

static void client_send_json(ftl_control_client *client, const json_t *value)
{
	shared_line *line = line_from_json(value);
	if (line == NULL) {
		client_close(client); /* out of memory, or a handler reply jansson cannot encode */
		return;
	}
	client_send_line(client, line);
	line_release(line);
}

json_t *ftl_control_ok(void) { return json_pack("{s:b}", "ok", 1); }

json_t *ftl_control_refusal(const char *why) { return json_pack("{s:b, s:s}", "ok", 0, "error", why); }

static void client_send_error(ftl_control_client *client, const char *message)
{
	json_t *reply = ftl_control_refusal(message);
	if (reply == NULL) {
		client_close(client);
		return;
	}
	client_send_json(client, reply);
	json_decref(reply);
}

/* ---- reading ---- */

static bool is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

static void handle_line(ftl_control_client *client, const char *line, size_t len)
{
	ftl_control *c = client->control;
	json_error_t parse_error;
	json_t *request, *reply;
	bool is_stream = false;
	char message[256];

	if (is_blank(line, len))
		return;
	/* Duplicate keys are refused: {"cmd":"status","cmd":"leave"} must not mean whichever came last. */
	request = json_loadb(line, len, JSON_REJECT_DUPLICATES, &parse_error);
	if (request == NULL) {
		snprintf(message, sizeof message,
			 "malformed JSON request (%s, at column %d); send one JSON object per line, "
			 "like {\"cmd\":\"status\"}",
			 parse_error.text, parse_error.column);
		client_send_error(client, message);
		return;
	}
	if (!json_is_object(request)) {
		client_send_error(client, "a request must be a JSON object, like {\"cmd\":\"status\"}");
		json_decref(request);
		return;
	}
	client->is_awaiting = true;
	reply = c->handler(c->ctx, client, request, &is_stream);
	json_decref(request);
	if (is_stream && !client->follower) {
		client->follower = ftl_follower_new();
		if (!client->follower) {
			json_decref(reply);
			client->is_awaiting = false;
			client_close(client);
			return;
		}
		client->is_stream = true;
	}
	if (reply != NULL) {
		client->is_awaiting = false;
		client_send_json(client, reply);
		json_decref(reply);
	}
}

/* Answers every complete line in the input buffer, in order, stopping while a late reply is owed. */
static void drain_lines(ftl_control_client *client)
{
	size_t start = 0;
	client->is_handling = true;
	while (!client->is_awaiting && !client->is_closing && !client->is_stream && start < client->in_len) {
		char *newline = memchr(client->in + start, '\n', client->in_len - start);
		size_t len;
		if (newline == NULL)
			break;
		if (queued_bytes(client) > CLIENT_MAX_QUEUED) {
			client->is_backed_up = true; /* write_cb resumes once half has been written */
			break;
		}
		len = (size_t)(newline - (client->in + start));
		handle_line(client, client->in + start, len);
		start += len + 1;
	}
	client->is_handling = false;
	if (client->is_stream) {
		client->in_len = 0; /* a follower's further input is ignored */
		return;
	}
	if (start > 0) {
		memmove(client->in, client->in + start, client->in_len - start);
		client->in_len -= start;
	}
	if (client->in_len > FTL_CONTROL_MAX_LINE && !client->is_awaiting && !client->is_closing &&
	    !client->is_backed_up) {
		char message[160];
		snprintf(message, sizeof message,
			 "request line longer than %d bytes; closing the connection", FTL_CONTROL_MAX_LINE);
		client_send_error(client, message);
		client_close_after_flush(client);
	}
}

static void alloc_cb(uv_handle_t *handle, size_t suggested_size, uv_buf_t *buf)
{
	ftl_control_client *client = handle->data;
	const size_t max_cap = FTL_CONTROL_MAX_LINE + 1;
	if (client->in_cap - client->in_len < READ_CHUNK && client->in_cap < max_cap) {
		size_t cap = client->in_cap * 2 > client->in_len + READ_CHUNK ? client->in_cap * 2
									       : client->in_len + READ_CHUNK;
		char *grown;
		if (cap > max_cap)
			cap = max_cap;
		grown = realloc(client->in, cap);
		if (grown != NULL) {
			client->in = grown;
			client->in_cap = cap;
		}
	}
	/* A zero-length buffer (no memory) makes libuv report UV_ENOBUFS, which closes the client. */
	*buf = uv_buf_init(client->in + client->in_len, (unsigned)(client->in_cap - client->in_len));
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	ftl_control_client *client = stream->data;
	if (nread == UV_EOF) {
		client->is_peer_done = true;
		if (client->in_len > 0 && client->in_len < client->in_cap && !client->is_stream)
			client->in[client->in_len++] = '\n'; /* a last request without its newline */
	} else if (nread < 0) {
		client_close(client);
		return;
	} else {
		client->in_len += (size_t)nread;
	}
	client_continue(client);
}

/* Answers what can be answered now, then reads on, pauses for a late reply, or closes. */
static void client_continue(ftl_control_client *client)
{
	drain_lines(client);
	if (client->is_closing)
		return;
	if (client->is_awaiting || client->is_backed_up) {
		uv_read_stop((uv_stream_t *)&client->pipe);
		client->is_read_paused = true;
	} else if (client->is_peer_done) {
		client_close_after_flush(client);
	} else if (client->is_read_paused) {
		client->is_read_paused = false;
		if (uv_read_start((uv_stream_t *)&client->pipe, alloc_cb, read_cb) != 0)
			client_close(client);
	}
}

/* ---- accepting ---- */

/* Once per thread: after this, a write to a client that hung up fails with EPIPE instead of killing. */
static void block_sigpipe_in_this_thread(void)
{
	static _Thread_local bool is_blocked;
	sigset_t sigpipe;
	if (is_blocked)
		return;
	sigemptyset(&sigpipe);
	sigaddset(&sigpipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigpipe, NULL);
	is_blocked = true;
}

static void connection_cb(uv_stream_t *server, int status)
{
	ftl_control *c = server->data;
	ftl_control_client *client;
	if (status < 0 || c->is_closing)
		return;
	block_sigpipe_in_this_thread();
	client = calloc(1, sizeof *client);
	if (client == NULL)
		return;
	client->control = c;
	uv_pipe_init(c->loop, &client->pipe, 0);
	client->pipe.data = client;
	ftl_list_push_front(&c->clients, &client->in_control);
	c->open_handles++;
	if (uv_accept(server, (uv_stream_t *)&client->pipe) != 0 ||
	    uv_read_start((uv_stream_t *)&client->pipe, alloc_cb, read_cb) != 0)
		client_close(client);
	else
		ftl_agent_fork_track((uv_handle_t *)&client->pipe);
}

/* ---- starting ---- */

/* mkdir -p of path's parent; directories created here get mode 0700. The parent itself must then be
 * this user's and closed to others (run_dir.h says why). */
static ftl_err make_parent_dir(const char *path)
{
	char dir[SOCKET_PATH_MAX];
	char *slash;
	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return FTL_OK;
	*slash = '\0';
	for (char *p = dir + 1; ; p++) {
		bool is_end = *p == '\0';
		if (*p != '/' && !is_end)
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			return ftl_diag_set(FTL_ERR_SYSTEM, "cannot create the run directory %s: %s", dir,
					    strerror(errno));
		if (is_end)
			break;
		*p = '/';
	}
	return ftl_run_dir_check_private(dir);
}

/* Leaves path free for bind: removes a socket file nobody listens on; refuses if an agent answers. */
static ftl_err clear_stale_socket(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, rc, connect_errno;

	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return FTL_OK;
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot inspect %s: %s", path, strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return ftl_diag_set(FTL_ERR_INVALID,
				    "%s exists and is not a socket; remove it or choose another run directory", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot create a socket to probe %s: %s", path,
				    strerror(errno));
	memcpy(addr.sun_path, path, strlen(path) + 1);
	rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
	connect_errno = errno;
	close(fd);
	if (rc == 0 || connect_errno == EAGAIN || connect_errno == EINPROGRESS)
		return ftl_diag_set(FTL_ERR_INVALID,
				    "another agent is listening on %s; stop it, or give this agent another name or run "
				    "directory",
				    path);
	if (connect_errno == ECONNREFUSED) {
		if (unlink(path) != 0 && errno != ENOENT)
			return ftl_diag_set(FTL_ERR_SYSTEM, "cannot remove the stale socket %s: %s", path,
					    strerror(errno));
		return FTL_OK;
	}
	if (connect_errno == ENOENT)
		return FTL_OK;
	return ftl_diag_set(FTL_ERR_SYSTEM, "cannot check whether an agent is listening on %s: %s", path,
			    strerror(connect_errno));
}

static void server_close_cb(uv_handle_t *handle)
{
	ftl_control *c = handle->data;
	c->open_handles--;
	control_maybe_free(c);
}

/* Removes the socket file unless it is no longer ours (deleted, and another agent bound the path). */
static void unlink_own_socket(const ftl_control *c)
{
	struct stat st;
	if (lstat(c->path, &st) == 0 && st.st_dev == c->socket_dev && st.st_ino == c->socket_ino)
		unlink(c->path);
}

/* Undoes a half-done start; c is freed by the loop once the server handle has closed. */
static ftl_control *abandon_start(ftl_control *c)
{
	unlink_own_socket(c);
	c->is_closing = true;
	ftl_agent_fork_untrack((uv_handle_t *)&c->server);
	uv_close((uv_handle_t *)&c->server, server_close_cb);
	return NULL;
}

/* Binds a socket at c->path that is private from its first moment: on Linux the socket's own mode
 * before bind becomes the file's mode, and the chmod after bind covers other systems (nothing is
 * accepted before listen anyway). The socket is bound here rather than by uv_pipe_bind because libuv
 * unlinks a path it bound when the handle closes, even if the file there is no longer ours. The socket
 * goes into *fd; FTL_ERR_SYSTEM (nothing left open) when the OS refuses. */
static ftl_err bind_private_socket(ftl_control *c, int *fd)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct stat st;
	ftl_err err;
	*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot create the control socket: %s", strerror(errno));
	memcpy(addr.sun_path, c->path, strlen(c->path) + 1);
	(void)fchmod(*fd, 0600);
	if (bind(*fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		err = ftl_diag_set(FTL_ERR_SYSTEM, "cannot bind the control socket %s: %s", c->path, strerror(errno));
		close(*fd);
		return err;
	}
	if (chmod(c->path, 0600) != 0 || lstat(c->path, &st) != 0) {
		err = ftl_diag_set(FTL_ERR_SYSTEM, "cannot make the control socket %s private (chmod 0600): %s",
				   c->path, strerror(errno));
		unlink(c->path);
		close(*fd);
		return err;
	}
	c->socket_dev = st.st_dev;
	c->socket_ino = st.st_ino;
	return FTL_OK;
}

ftl_control *ftl_control_start(uv_loop_t *loop, const char *path, ftl_control_handler handler, void *ctx)
{
	ftl_control *c;
	int fd, rc;

	if (strlen(path) >= SOCKET_PATH_MAX) {
		ftl_diag_set(FTL_ERR_INVALID,
			     "control socket path %s is too long (%zu bytes; a Unix socket path holds at most %zu); "
			     "choose a shorter run directory",
			     path, strlen(path), SOCKET_PATH_MAX - 1);
		return NULL;
	}
	if (make_parent_dir(path) != FTL_OK || clear_stale_socket(path) != FTL_OK)
		return NULL;
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		ftl_diag_set(FTL_ERR_SYSTEM, "out of memory starting the control socket");
		return NULL;
	}
	c->loop = loop;
	c->handler = handler;
	c->ctx = ctx;
	snprintf(c->path, sizeof c->path, "%s", path);
	uv_pipe_init(loop, &c->server, 0);
	c->server.data = c;
	c->open_handles = 1;

	if (bind_private_socket(c, &fd) != FTL_OK)
		return abandon_start(c);
	rc = uv_pipe_open(&c->server, fd);
	if (rc != 0) {
		close(fd);
		ftl_diag_set(FTL_ERR_SYSTEM, "cannot use the control socket %s: %s", path, uv_strerror(rc));
		return abandon_start(c);
	}
	rc = uv_listen((uv_stream_t *)&c->server, LISTEN_BACKLOG, connection_cb);
	if (rc != 0) {
		ftl_diag_set(FTL_ERR_SYSTEM, "cannot listen on the control socket %s: %s", path, uv_strerror(rc));
		return abandon_start(c);
	}
	ftl_agent_fork_track((uv_handle_t *)&c->server);
	return c;
}

/* ---- replies, events, closing ---- */

void ftl_control_reply(ftl_control *c, ftl_control_client *client, json_t *reply)
{
	(void)c;
	if (!client->is_awaiting) {
		json_decref(reply); /* no reply is owed: the handler already answered */
		return;
	}
	client->is_awaiting = false;
	if (client->is_closed) {
		json_decref(reply);
		client_free(client);
		return;
	}
	client_send_json(client, reply);
	json_decref(reply);
	if (!client->is_handling)
		client_continue(client);
}

/* A follower's write finished, or was cancelled by a close: write on, or close a dropped one. */
static void follower_write_cb(uv_write_t *req, int status)
{
	ftl_control_client *client = req->handle->data;
	ftl_follower_write_done(client->follower);
	if (status < 0) {
		if (status != UV_ECANCELED)
			client_close(client); /* it hung up */
		return;
	}
	if (ftl_follower_is_drained(client->follower))
		client_close_after_flush(client); /* dropped, and its final line is written */
	else if (ftl_follower_write(client->follower, (uv_stream_t *)&client->pipe, follower_write_cb) != FTL_OK)
		client_close(client);
}

void ftl_control_publish(ftl_control *c, const json_t *event)
{
	shared_line *line;
	if (c->clients.first == NULL)
		return;
	line = line_from_json(event);
	if (line == NULL)
		return;
	for (ftl_list_link *l = c->clients.first; l != NULL; l = l->next) {
		ftl_control_client *client = client_of(l);
		if (!client->is_stream || client->is_closing)
			continue;
		ftl_follower_push push = ftl_follower_add(client->follower, line);
		c->followers_dropped += push == FTL_FOLLOWER_DROPPED;
		if (push == FTL_FOLLOWER_FAILED ||
		    ftl_follower_write(client->follower, (uv_stream_t *)&client->pipe, follower_write_cb) != FTL_OK)
			client_close(client);
	}
	line_release(line);
}

uint64_t ftl_control_followers_dropped(const ftl_control *c) { return c ? c->followers_dropped : 0; }

void ftl_control_close(ftl_control *c)
{
	ftl_list_link *l, *next;
	if (c == NULL || c->is_closing)
		return;
	c->is_closing = true;
	unlink_own_socket(c);
	ftl_agent_fork_untrack((uv_handle_t *)&c->server);
	uv_close((uv_handle_t *)&c->server, server_close_cb);
	for (l = c->clients.first; l != NULL; l = next) {
		ftl_control_client *client = client_of(l);
		next = l->next;
		if (client->is_closed)
			client_free(client); /* gone already, kept only for a late reply that will not come */
		else
			client_close(client);
	}
}
