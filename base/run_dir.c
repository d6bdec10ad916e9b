/* The one definition of the default run directory and socket name, and of the checks that decide
 * whether a run directory or a socket in it can be trusted (see run_dir.h). */
#include "run_dir.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fits(int written, size_t out_len)
{
	return written >= 0 && (size_t)written < out_len ? 0 : -1;
}

static int is_set(const char *s)
{
	return s != NULL && s[0] != '\0';
}

int ftl_run_dir_resolve(const char *explicit_dir, char *out, size_t out_len)
{
	const char *env_dir = getenv(FTL_RUN_DIR_ENV);
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (is_set(explicit_dir))
		return fits(snprintf(out, out_len, "%s", explicit_dir), out_len);
	if (is_set(env_dir))
		return fits(snprintf(out, out_len, "%s", env_dir), out_len);
	if (is_set(xdg))
		return fits(snprintf(out, out_len, "%s/ftl", xdg), out_len);
	return fits(snprintf(out, out_len, "/tmp/ftl-%u", (unsigned)getuid()), out_len);
}

int ftl_run_dir_socket_path(const char *run_dir, const char *name, char *out, size_t out_len)
{
	return fits(snprintf(out, out_len, "%s/%s%s", run_dir, name, FTL_SOCKET_SUFFIX), out_len);
}

/* "uid 65534 (nobody)" */
static void describe_uid(uid_t uid, char *out, size_t len)
{
	struct passwd *pw = getpwuid(uid);
	if (pw)
		snprintf(out, len, "uid %u (%s)", (unsigned)uid, pw->pw_name);
	else
		snprintf(out, len, "uid %u", (unsigned)uid);
}

static ftl_err untrusted(const char *what, const char *path, const struct stat *st, const char *why,
			 const char *remedy)
{
	char owner[96], me[96];
	describe_uid(st->st_uid, owner, sizeof(owner));
	describe_uid(geteuid(), me, sizeof(me));
	return ftl_diag_set(FTL_ERR_INVALID,
			    "%s %s is not safe to use: %s (owner %s, mode %04o; this user is %s), so another user "
			    "could put a socket of their own there; %s",
			    what, path, why, owner, (unsigned)(st->st_mode & 07777), me, remedy);
}

static const char run_dir_remedy[] =
	"remove it (or have its owner remove it), or set FTL_RUN_DIR to a directory of your own with mode 0700";

ftl_err ftl_run_dir_check_private(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot inspect the run directory %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ftl_diag_set(FTL_ERR_INVALID, "%s is not a directory; choose another run directory", dir);
	if (st.st_uid != geteuid())
		return untrusted("the run directory", dir, &st, "another user owns it", run_dir_remedy);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return untrusted("the run directory", dir, &st, "group or others can write it",
				 "chmod 700 it, or set FTL_RUN_DIR to a directory of your own with mode 0700");
	return FTL_OK;
}

ftl_err ftl_run_dir_check_socket(const char *path)
{
	struct stat st;
	char dir[4096];
	if (lstat(path, &st) != 0)
		return 0; /* connect says there is no agent */
	if (!S_ISSOCK(st.st_mode))
		return ftl_diag_set(FTL_ERR_INVALID, "%s is not a socket; point ftlctl at an agent's control socket",
				    path);
	if (st.st_uid != geteuid())
		return untrusted("the control socket", path, &st, "another user owns it",
				 "ftlctl talks only to its own user's agents: run ftlctl as that user");
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) != 0)
		return 0;
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return untrusted("the socket's directory", dir, &st, "another user owns it", run_dir_remedy);
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return untrusted("the socket's directory", dir, &st, "group or others can write it (and it is not sticky)",
				 run_dir_remedy);
	return FTL_OK;
}
