/* test_comm_rebuild: how the next view's device communicator is chosen (comm_rebuild.h), without a GPU:
 * the plan as a pure function, the vote over real tcp ranks (forked processes on loopback), and the whole
 * rebuild on tcp, whose communicators cannot shrink, so every rank must agree on a fresh init that works.
 * The shrink itself needs NCCL and a GPU: tests/comm/test_comm_nccl_cycles.c runs it there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "comm/comm_rebuild.h"
#include "harness.h"

static void test_plan_drops_the_dead_ranks_and_keeps_the_order(void **state)
{
	(void)state;
	const uint64_t old_keys[5] = {10, 11, 12, 13, 14};
	const uint64_t middle[3] = {10, 12, 14}, first[4] = {11, 12, 13, 14}, last[4] = {10, 11, 12, 13};
	int exclude[5], n;
	assert_int_equal(ftl_comm_rebuild_plan(old_keys, 5, middle, 3, exclude, &n), FTL_OK);
	assert_int_equal(n, 2);
	assert_int_equal(exclude[0], 1);
	assert_int_equal(exclude[1], 3);
	assert_int_equal(ftl_comm_rebuild_plan(old_keys, 5, first, 4, exclude, &n), FTL_OK);
	assert_int_equal(n, 1);
	assert_int_equal(exclude[0], 0);
	assert_int_equal(ftl_comm_rebuild_plan(old_keys, 5, last, 4, exclude, &n), FTL_OK);
	assert_int_equal(n, 1);
	assert_int_equal(exclude[0], 4);
}

static void test_plan_for_the_same_members_excludes_none(void **state)
{
	(void)state;
	const uint64_t keys[3] = {7, 8, 9};
	int exclude[3], n = -1;
	assert_int_equal(ftl_comm_rebuild_plan(keys, 3, keys, 3, exclude, &n), FTL_OK);
	assert_int_equal(n, 0);
}

static void test_plan_needs_a_fresh_init_for_a_joiner_or_a_reorder(void **state)
{
	(void)state;
	const uint64_t old_keys[3] = {1, 2, 3};
	const uint64_t joined[4] = {1, 2, 3, 4}, replaced[3] = {1, 2, 5}, reordered[2] = {3, 1};
	int exclude[3], n;
	assert_int_equal(ftl_comm_rebuild_plan(old_keys, 3, joined, 4, exclude, &n), FTL_ERR_UNSUPPORTED);
	assert_non_null(strstr(ftl_diag_message(), "joined"));
	assert_int_equal(ftl_comm_rebuild_plan(old_keys, 3, replaced, 3, exclude, &n), FTL_ERR_UNSUPPORTED);
	assert_non_null(strstr(ftl_diag_message(), "new rank 2"));
	assert_int_equal(ftl_comm_rebuild_plan(old_keys, 3, reordered, 2, exclude, &n), FTL_ERR_UNSUPPORTED);
	assert_non_null(strstr(ftl_diag_message(), "new rank 1"));
}

/* ---- three ranks on loopback ---- */

enum { RANKS = 3, REPORT_VOTE = 1, REPORT_REBUILD = 2 };

/* Each rank's offer in three votes: all the same; one other id; one rank with nothing to shrink. */
static const uint64_t offers[3][RANKS] = {{42, 42, 42}, {42, 43, 42}, {42, 42, 0}};

static int vote_and_rebuild(struct harness_child *c)
{
	ftl_comm *host = harness_comm_all(c, 100, 10000);
	if (host == NULL)
		return 1;
	for (int v = 0; v < 3; v++) {
		bool agreed = true;
		ftl_err e = ftl_comm_rebuild_vote(host, offers[v][c->rank], &agreed);
		harness_report(c, REPORT_VOTE, e, v * 2 + agreed);
	}
	/* The old "device" comm is tcp: it cannot shrink, so the rebuild starts a fresh one from cfg. */
	ftl_comm *old = harness_comm_all(c, 7, 10000);
	char boot[HARNESS_BOOT_MAX];
	struct ftl_comm_config cfg;
	int members[RANKS] = {0, 1, 2};
	harness_comm_config(c, members, RANKS, 8, 10000, &cfg, boot, sizeof(boot));
	const uint64_t keys[RANKS] = {1, 2, 3};
	struct ftl_comm_rebuild rb = {.old = old, .old_keys = keys, .old_n = RANKS, .new_keys = keys, .new_n = RANKS,
				      .host = host, .cfg = &cfg};
	ftl_comm *comm = NULL;
	ftl_comm_rebuild_path path = FTL_COMM_REBUILD_SHRINK;
	ftl_err e = ftl_comm_rebuild(&rb, &comm, &path);
	int64_t sum = c->rank + 1;
	if (e == FTL_OK)
		e = ftl_comm_allreduce(comm, &sum, &sum, 1, FTL_I64, FTL_SUM, NULL, NULL);
	if (e != FTL_OK)
		fprintf(stderr, "rank %d: rebuild: %s\n", c->rank, comm ? ftl_comm_error(comm) : ftl_diag_message());
	harness_report(c, REPORT_REBUILD, e, path == FTL_COMM_REBUILD_INIT && comm && comm->comm_id == 8 ? sum : -1);
	ftl_comm_delete(comm);
	ftl_comm_delete(host);
	return 0;
}

static void test_ranks_shrink_only_when_all_offer_the_same_parent_else_init(void **state)
{
	(void)state;
	struct harness h;
	assert_int_equal(harness_start(&h, RANKS, 60, vote_and_rebuild, NULL), 0);
	int votes = 0, rebuilds = 0;
	struct harness_report rep;
	while (votes + rebuilds < RANKS * 4 && harness_read(&h, &rep) == 0) {
		assert_int_equal(rep.err, FTL_OK);
		if (rep.kind == REPORT_VOTE) {
			int v = (int)rep.value / 2;
			bool agreed = rep.value % 2;
			assert_int_equal(agreed, v == 0); /* only the first vote has one offer from everyone */
			votes++;
		} else {
			assert_int_equal(rep.value, 1 + 2 + 3); /* a fresh init, named by cfg's id, that adds up */
			rebuilds++;
		}
	}
	assert_int_equal(votes, RANKS * 3);
	assert_int_equal(rebuilds, RANKS);
	assert_int_equal(harness_wait(&h, 0), 0);
}

static void test_rebuild_refuses_a_host_comm_of_another_view(void **state)
{
	(void)state;
	/* A world of one for the host comm, a config of rank 1 of 2 for the device: refused before any call. */
	struct ftl_comm_config host_cfg, cfg;
	ftl_comm_config_init(&host_cfg);
	host_cfg.bootstrap = "127.0.0.1:1\n";
	host_cfg.bootstrap_len = strlen(host_cfg.bootstrap);
	ftl_comm_config_init(&cfg);
	cfg.world_size = 2;
	cfg.rank = 1;
	ftl_comm *host = NULL, *out = NULL;
	assert_int_equal(ftl_comm_new(&host_cfg, &host), FTL_OK);
	struct ftl_comm_rebuild rb = {.host = host, .cfg = &cfg};
	ftl_comm_rebuild_path path;
	assert_int_equal(ftl_comm_rebuild(&rb, &out, &path), FTL_ERR_INVALID);
	assert_null(out);
	assert_non_null(strstr(ftl_diag_message(), "same view"));
	ftl_comm_delete(host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_drops_the_dead_ranks_and_keeps_the_order),
		cmocka_unit_test(test_plan_for_the_same_members_excludes_none),
		cmocka_unit_test(test_plan_needs_a_fresh_init_for_a_joiner_or_a_reorder),
		cmocka_unit_test(test_ranks_shrink_only_when_all_offer_the_same_parent_else_init),
		cmocka_unit_test(test_rebuild_refuses_a_host_comm_of_another_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
