/* The one definition of the default run directory and socket name (see run_dir.h). */
#include "run_dir.h"

#include <stdio.h>
#include <stdlib.h>
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
