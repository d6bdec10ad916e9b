/* Picks the control socket (see socket_choice.h). When nothing names the agent, the run directory is
 * searched; exactly one *.sock there is taken, none or several is an error that lists what it found. */
#include "socket_choice.h"

#include "ctl_exit.h"
#include "base/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LISTED 16

static int is_set(const char *s)
{
	return s != NULL && s[0] != '\0';
}

static int too_long(const char *what)
{
	fprintf(stderr, "ftlctl: the control socket path built from %s is too long\n", what);
	return CTL_EXIT_USAGE;
}

static int has_socket_suffix(const char *name)
{
	size_t len = strlen(name), suffix = strlen(FTL_SOCKET_SUFFIX);
	return len > suffix && strcmp(name + len - suffix, FTL_SOCKET_SUFFIX) == 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Fills found[] (sorted, caller frees) with up to MAX_LISTED socket names in run_dir; returns how many
 * there are in all, or -1 when the directory cannot be read (errno set). */
static int list_sockets(const char *run_dir, char *found[MAX_LISTED])
{
	DIR *dir = opendir(run_dir);
	struct dirent *entry;
	int count = 0;
	if (dir == NULL)
		return -1;
	while ((entry = readdir(dir)) != NULL) {
		if (!has_socket_suffix(entry->d_name))
			continue;
		if (count < MAX_LISTED && (found[count] = strdup(entry->d_name)) == NULL) {
			for (int i = 0; i < count; i++)
				free(found[i]);
			closedir(dir);
			errno = ENOMEM;
			return -1;
		}
		count++;
	}
	closedir(dir);
	qsort(found, count < MAX_LISTED ? (size_t)count : MAX_LISTED, sizeof *found, compare_names);
	return count;
}

static int search_run_dir(const char *run_dir, char *out, size_t out_len)
{
	char *found[MAX_LISTED] = {0};
	int count = list_sockets(run_dir, found), rc = CTL_EXIT_OK;
	int listed = count < MAX_LISTED ? count : MAX_LISTED;

	if (count < 0) {
		int err = errno;
		if (err == EACCES || err == EPERM) {
			fprintf(stderr, "ftlctl: permission denied reading the run directory %s; run ftlctl as the "
					"agent's user, or name the socket with --socket PATH\n",
				run_dir);
			return CTL_EXIT_DENIED;
		}
		fprintf(stderr, "ftlctl: no agent is running: the run directory %s %s;\n"
				"  start one with ftl-agent, or point ftlctl at it with --socket PATH, --name NAME, "
				"--run-dir DIR or FTL_RUN_DIR\n",
			run_dir, err == ENOENT ? "does not exist" : strerror(err));
		return CTL_EXIT_NO_AGENT;
	}
	if (count == 0) {
		fprintf(stderr, "ftlctl: no agent is running: no *%s in the run directory %s;\n"
				"  start one with ftl-agent, or point ftlctl at it with --socket PATH, --run-dir DIR or "
				"FTL_RUN_DIR\n",
			FTL_SOCKET_SUFFIX, run_dir);
		return CTL_EXIT_NO_AGENT;
	}
	if (count == 1) {
		if (snprintf(out, out_len, "%s/%s", run_dir, found[0]) >= (int)out_len)
			rc = too_long(run_dir);
	} else {
		fprintf(stderr, "ftlctl: %d agents have sockets in %s:", count, run_dir);
		for (int i = 0; i < listed; i++)
			fprintf(stderr, " %s", found[i]);
		fprintf(stderr, "%s\n  choose one with --name NAME (or FTL_NAME) or --socket PATH\n",
			count > listed ? " ..." : "");
		rc = CTL_EXIT_USAGE;
	}
	for (int i = 0; i < listed; i++)
		free(found[i]);
	return rc;
}

int ctl_choose_socket(const ctl_target *target, char *out, size_t out_len)
{
	const char *env_socket = getenv(FTL_CONTROL_SOCKET_ENV);
	const char *name = is_set(target->name) ? target->name : getenv(FTL_NAME_ENV);
	char run_dir[4096];

	if (is_set(target->socket) || is_set(env_socket)) {
		const char *path = is_set(target->socket) ? target->socket : env_socket;
		if (snprintf(out, out_len, "%s", path) >= (int)out_len)
			return too_long("--socket / " FTL_CONTROL_SOCKET_ENV);
		return CTL_EXIT_OK;
	}
	if (ftl_run_dir_resolve(target->run_dir, run_dir, sizeof run_dir) != 0)
		return too_long("the run directory");
	if (is_set(name)) {
		if (ftl_run_dir_socket_path(run_dir, name, out, out_len) != 0)
			return too_long("the run directory and --name");
		return CTL_EXIT_OK;
	}
	return search_run_dir(run_dir, out, out_len);
}
