// A C++ program built against the *installed* libftl: the headers compile as C++ (extern "C" guards),
// the library links, and a one-rank communicator reduces. Built by test_install.sh, not by CMake.
#include <ftl/ftl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main()
{
	if (std::strcmp(ftl_version(), FTL_VERSION_STRING) != 0) {
		std::fprintf(stderr, "header %s but library %s\n", FTL_VERSION_STRING, ftl_version());
		return 1;
	}
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	const char *addrs[] = {"127.0.0.1:0"};
	char boot[64];
	size_t len = ftl_comm_tcp_bootstrap(boot, sizeof(boot), addrs, 1);
	cfg.bootstrap = boot;
	cfg.bootstrap_len = len;
	cfg.world_size = 1;
	ftl_comm *comm = nullptr;
	if (ftl_comm_new(&cfg, &comm) != FTL_OK) {
		std::fprintf(stderr, "create: %s\n", ftl_error_message());
		return 1;
	}
	double x[3] = {1.5, -2.0, 4.0};
	ftl_err e = ftl_comm_allreduce(comm, x, x, 3, FTL_F64, FTL_SUM, NULL, NULL);
	ftl_comm_delete(comm);
	if (e != FTL_OK || x[0] != 1.5 || x[2] != 4.0) {
		std::fprintf(stderr, "allreduce: %s\n", ftl_strerror(e));
		return 1;
	}
	ftl_agent_config acfg;
	ftl_agent_config_default(&acfg);
	setenv("FTL_PROBE_INTERVAL_MS", "ten", 1);
	const char *err = "";
	if (ftl_agent_config_from_env(&acfg) == FTL_OK ||
	    !std::strstr(err = ftl_error_message(), "FTL_PROBE_INTERVAL_MS")) {
		std::fprintf(stderr, "a bad FTL_PROBE_INTERVAL_MS was not refused by name: %s\n", err);
		return 1;
	}
	std::printf("c++ consumer: libftl %s, allreduce ok, config error: %s\n", ftl_version(), err);
	return 0;
}
