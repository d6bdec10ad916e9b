/* The public names libftl had before it spoke one lifecycle vocabulary (0.4.5: _new and _delete for every
 * object the library allocates, as agent, gradient bucket and subgroup already did), kept exported so a
 * program built against an older header still links and runs; each is the new call under its old name.
 * The headers mark them deprecated, so new code that uses one is told the name to use. */
#include "ftl/checkpoint.h"
#include "ftl/comm.h"
#include "ftl/settings.h"

void ftl_settings_free(ftl_settings *s)
{
	ftl_settings_delete(s);
}

ftl_err ftl_comm_create(const struct ftl_comm_config *cfg, ftl_comm **out)
{
	return ftl_comm_new(cfg, out);
}

void ftl_comm_destroy(ftl_comm *comm)
{
	ftl_comm_delete(comm);
}

ftl_err ftl_checkpoint_reader_open(const char *path, ftl_checkpoint_reader **out)
{
	return ftl_checkpoint_reader_new(path, out);
}

void ftl_checkpoint_reader_close(ftl_checkpoint_reader *r)
{
	ftl_checkpoint_reader_delete(r);
}
