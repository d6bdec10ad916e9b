/* test_comm_tcp_spin: the policy that says how long the tcp engine spins before it sleeps in poll(), as a
 * pure function of what its spins achieved: spin while it catches the data, shorten it while the peers are
 * late, stop when another task wants the CPU, and look again now and then; start short when the
 * communicator's ranks on this host outnumber the cores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comm/comm_tcp.h"

static void test_a_new_communicator_spins_the_longest(void **state)
{
	(void)state;
	struct ftl_comm_tcp_spin s;
	ftl_comm_tcp_spin_init(&s, 2, 2);
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), FTL_COMM_TCP_SPIN_MAX_NS);
}

static void test_more_ranks_on_this_host_than_cores_start_at_the_minimum(void **state)
{
	(void)state;
	struct ftl_comm_tcp_spin s;
	ftl_comm_tcp_spin_init(&s, 4, 2);
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), FTL_COMM_TCP_SPIN_MIN_NS);
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CAUGHT); /* a yield that ran the peer brought the data */
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), 2 * FTL_COMM_TCP_SPIN_MIN_NS);
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CROWDED);
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), 0);
}

static void test_late_peers_shorten_the_spin_down_to_the_minimum(void **state)
{
	(void)state;
	struct ftl_comm_tcp_spin s;
	ftl_comm_tcp_spin_init(&s, 2, 2);
	int64_t last = ftl_comm_tcp_spin_budget(&s);
	for (int i = 0; i < 64; i++) {
		ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_EXPIRED);
		int64_t b = ftl_comm_tcp_spin_budget(&s);
		assert_true(b <= last);
		assert_true(b >= FTL_COMM_TCP_SPIN_MIN_NS);
		last = b;
	}
	assert_int_equal(last, FTL_COMM_TCP_SPIN_MIN_NS); /* a late peer never stops the spinning */
}

static void test_catches_grow_the_spin_back_to_the_maximum(void **state)
{
	(void)state;
	struct ftl_comm_tcp_spin s;
	ftl_comm_tcp_spin_init(&s, 2, 2);
	for (int i = 0; i < 64; i++)
		ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_EXPIRED);
	int n = 0;
	while (ftl_comm_tcp_spin_budget(&s) < FTL_COMM_TCP_SPIN_MAX_NS && n < 64) {
		ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CAUGHT);
		n++;
	}
	assert_true(n <= 5); /* doubling: min to max in a handful of catches */
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CAUGHT);
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), FTL_COMM_TCP_SPIN_MAX_NS);
}

static void test_a_crowded_cpu_stops_spinning_but_probes_every_so_often(void **state)
{
	(void)state;
	struct ftl_comm_tcp_spin s;
	ftl_comm_tcp_spin_init(&s, 2, 2);
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CROWDED);
	for (int round = 0; round < 3; round++) { /* still crowded at every probe */
		for (int i = 1; i < FTL_COMM_TCP_SPIN_PROBE; i++)
			assert_int_equal(ftl_comm_tcp_spin_budget(&s), 0);
		assert_int_equal(ftl_comm_tcp_spin_budget(&s), FTL_COMM_TCP_SPIN_MIN_NS);
		ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CROWDED);
	}
}

static void test_a_probe_that_finds_the_cpu_free_resumes_spinning(void **state)
{
	(void)state;
	struct ftl_comm_tcp_spin s;
	ftl_comm_tcp_spin_init(&s, 2, 2);
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CROWDED);
	for (int i = 1; i < FTL_COMM_TCP_SPIN_PROBE; i++)
		ftl_comm_tcp_spin_budget(&s);
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), FTL_COMM_TCP_SPIN_MIN_NS);
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CAUGHT);
	for (int i = 0; i < FTL_COMM_TCP_SPIN_PROBE; i++) /* every wait spins again, not only the probes */
		assert_int_equal(ftl_comm_tcp_spin_budget(&s), FTL_COMM_TCP_SPIN_MIN_NS);
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CAUGHT);
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), 2 * FTL_COMM_TCP_SPIN_MIN_NS);
	/* A probe that expires (the peer was late, nobody took the CPU) resumes spinning as well. */
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_CROWDED);
	for (int i = 1; i < FTL_COMM_TCP_SPIN_PROBE; i++)
		ftl_comm_tcp_spin_budget(&s);
	ftl_comm_tcp_spin_budget(&s);
	ftl_comm_tcp_spin_record(&s, FTL_COMM_TCP_SPIN_EXPIRED);
	assert_int_equal(ftl_comm_tcp_spin_budget(&s), FTL_COMM_TCP_SPIN_MIN_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_new_communicator_spins_the_longest),
		cmocka_unit_test(test_more_ranks_on_this_host_than_cores_start_at_the_minimum),
		cmocka_unit_test(test_late_peers_shorten_the_spin_down_to_the_minimum),
		cmocka_unit_test(test_catches_grow_the_spin_back_to_the_maximum),
		cmocka_unit_test(test_a_crowded_cpu_stops_spinning_but_probes_every_so_often),
		cmocka_unit_test(test_a_probe_that_finds_the_cpu_free_resumes_spinning),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
