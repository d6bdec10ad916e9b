/* Which agent ftlctl talks to: turns --socket / --name / --run-dir and the environment into one
 * control socket path, or says clearly why there is none (see ftlctl --help for the order). */
#ifndef FTL_CTL_SOCKET_CHOICE_H
#define FTL_CTL_SOCKET_CHOICE_H

#include <stddef.h>

typedef struct ctl_target {
	const char *socket;  /* --socket, or NULL */
	const char *name;    /* --name (the agent's), or NULL */
	const char *run_dir; /* --run-dir, or NULL */
} ctl_target;

/* Writes the socket path into out. Returns CTL_EXIT_OK, or another ctl_exit after printing why. */
int ctl_choose_socket(const ctl_target *target, char *out, size_t out_len);

#endif
