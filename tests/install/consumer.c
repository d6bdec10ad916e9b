/* A C program built against the installed libftl through pkg-config (shared and --static) and through
 * CMake's find_package(ftl): the public API only. Built by test_install.sh. */
#include <ftl/ftl.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
	if (strcmp(ftl_version(), FTL_VERSION_STRING) != 0 || FTL_VERSION_NUM < 100)
		return 1;
	ftl_training_config t;
	ftl_training_config_default(&t);
	if (t.max_retries <= 0 || ftl_dtype_size(FTL_BF16) != 2 || strcmp(ftl_strerror(FTL_ERR_PEER_LOST), "peer lost"))
		return 1;
	printf("c consumer: libftl %s, tcp backend %s\n", ftl_version(),
	       ftl_comm_backend_is_available(FTL_COMM_TCP) ? "available" : "missing");
	return 0;
}
