/* A loopback port for an agent a C test starts in its own process. Why not bind(0) and close: that port is
 * from the kernel's ephemeral range, which any connect() on the machine may take as its source port before
 * the agent binds it (tests run side by side under ctest -j), and a UDP-only probe says nothing of TCP. So,
 * as tests/agent/cluster.py does: a port below the ephemeral range, free for both UDP and TCP when
 * probed, never one this process handed out before. */
#ifndef FTL_TESTS_PORTS_H
#define FTL_TESTS_PORTS_H

/* The port, or exits 3 when none is found in 200 tries. */
int ftl_test_free_port(void);

#endif
