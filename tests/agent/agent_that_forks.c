/* agent_that_forks: an agent whose process forks after the start, as a training process forks its
 * DataLoader workers: the child sleeps on, holding whatever descriptors it inherited, and outlives a
 * kill -9 of this process. test_agent.py's fork scenario checks that the peers still declare this
 * process dead as fast as any other (its UDP port refuses: the child closed its copies at birth).
 * Settings from the FTL_* environment like ftl-agent; prints "forked child pid=N" for the test to reap. */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ftl/agent.h"

int main(void)
{
	ftl_agent_config cfg;
	ftl_agent_config_default(&cfg);
	if (ftl_agent_config_from_env(&cfg) != FTL_OK) {
		fprintf(stderr, "agent_that_forks: %s\n", ftl_error_message());
		return 2;
	}
	ftl_agent *a = ftl_agent_new(&cfg);
	if (a == NULL || ftl_agent_start(a) != FTL_OK) {
		fprintf(stderr, "agent_that_forks: %s\n", ftl_error_message());
		return 1;
	}
	pid_t pid = fork();
	if (pid == 0) { /* the worker: no exec, no agent; ends with the test (or its own alarm) */
		alarm(300);
		for (;;)
			pause();
	}
	printf("forked child pid=%d\n", (int)pid);
	fflush(stdout);
	for (;;) { /* until kill -9 */
		struct timespec second = {1, 0};
		nanosleep(&second, NULL);
	}
}
