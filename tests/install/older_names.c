/* A program written against the names before 0.4.5 (ftl_settings_free, ftl_comm_create and _destroy,
 * ftl_checkpoint_reader_open and _close): it still builds, with the compiler naming the new calls, links
 * against the installed libftl.so and gets the same answers. Built by test_install.sh. */
#include <ftl/ftl.h>

#include <stdio.h>

int main(void)
{
	ftl_settings *s = ftl_settings_new();
	if (s == NULL || ftl_settings_set(s, "min_workers", "2") != FTL_OK)
		return 1;
	ftl_settings_free(s);
	ftl_checkpoint_reader *r = NULL;
	if (ftl_checkpoint_reader_open("/nonexistent/ftl-checkpoint", &r) == FTL_OK || r != NULL)
		return 1;
	ftl_checkpoint_reader_close(NULL);
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	ftl_comm *comm = NULL;
	if (ftl_comm_create(&cfg, &comm) == FTL_OK || comm != NULL) /* no bootstrap: refused, as by ftl_comm_new */
		return 1;
	ftl_comm_destroy(NULL);
	printf("older names: the calls before 0.4.5 still link and answer\n");
	return 0;
}
