/* An agent a C test starts alone (lone_agent.h). */
#include "lone_agent.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "ports.h"

ftl_agent *ftl_test_lone_agent(const char *name, const char *run_dir)
{
	ftl_agent_config cfg;
	ftl_training_config t;
	ftl_agent_config_default(&cfg);
	snprintf(cfg.name, sizeof(cfg.name), "%s", name);
	snprintf(cfg.bind, sizeof(cfg.bind), "127.0.0.1:%d", ftl_test_free_port());
	snprintf(cfg.run_dir, sizeof(cfg.run_dir), "%s", run_dir);
	snprintf(cfg.log_level, sizeof(cfg.log_level), "warn");
	cfg.is_insecure = true;
	ftl_training_config_default(&t);
	t.min_workers = 1;
	t.settle_ms = 0;
	ftl_agent *a = ftl_agent_new(&cfg);
	if (!a)
		fail_msg("ftl_agent_new: %s", ftl_error_message());
	if (ftl_set_training(a, &t) != FTL_OK)
		fail_msg("ftl_set_training: %s", ftl_error_message());
	if (ftl_agent_start(a) != FTL_OK)
		fail_msg("ftl_agent_start: %s", ftl_error_message());
	return a;
}
