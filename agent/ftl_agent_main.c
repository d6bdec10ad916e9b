/* ftl-agent: a standalone membership agent (like `serf agent`), for sidecars, tests and benchmarks.
 * Configured from the FTL_* environment (see include/ftl/agent.h). SIGTERM or SIGINT: graceful leave,
 * then exit 0; `ftlctl leave` does the same. Exit 2 for a bad setting, with a message naming it; exit 1 when
 * it cannot start, or stops by itself (its name is held by a live member elsewhere), with the reason. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ftl/agent.h"

static const char usage[] =
	"usage: ftl-agent            (all settings come from the environment)\n"
	"  FTL_NAME FTL_BIND FTL_ADVERTISE FTL_SEEDS FTL_CLUSTER FTL_GOSSIP_KEY | FTL_GOSSIP_KEY_FILE | FTL_INSECURE=1\n"
	"  FTL_PROFILE (train, lan, local) FTL_RUN_DIR FTL_LOG_LEVEL and FTL_*_MS timing overrides\n"
	"  SIGTERM or `ftlctl leave` leaves the cluster gracefully and exits.\n";

int main(int argc, char **argv)
{
	if (argc > 1) {
		fputs(usage, strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ? stdout : stderr);
		return strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ? 0 : 2;
	}
	ftl_agent_config cfg;
	ftl_agent_config_default(&cfg);
	if (ftl_agent_config_from_env(&cfg) != 0) {
		fprintf(stderr, "ftl-agent: %s\n", ftl_error_message());
		return 2;
	}
	ftl_agent *a = ftl_agent_new(&cfg);
	if (!a) {
		fprintf(stderr, "ftl-agent: %s\n", ftl_error_message());
		return 2;
	}
	/* Signals are taken here, by sigtimedwait, never by the loop thread (it inherits the mask). */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (ftl_agent_start(a) != 0) {
		fprintf(stderr, "ftl-agent: %s\n", ftl_error_message());
		ftl_agent_delete(a);
		return 1;
	}
	struct timespec tick = {0, 100 * 1000 * 1000};
	for (;;) {
		int sig = sigtimedwait(&set, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT) {
			ftl_agent_leave(a, 5000);
			break;
		}
		if (ftl_agent_has_left(a))
			break;
		if (ftl_agent_error(a)) { /* it stopped by itself: its name is taken */
			fprintf(stderr, "ftl-agent: %s\n", ftl_error_message());
			ftl_agent_delete(a);
			return 1;
		}
	}
	ftl_agent_stop(a);
	ftl_agent_delete(a);
	return 0;
}
