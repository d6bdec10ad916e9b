/* The ready/commit flow for 1, 2 and 4 members with instant, lossless delivery and no simulator: the first
 * view waits for the settle time and then has every member in join order with the oldest as rank 0;
 * take_new_view reports it once; the blob callback's bytes reach every member, and a callback that
 * postpones delays the commit; bad options and malformed input are refused and counted. When two lineages
 * meet, the one that has done more work wins whatever the epochs (issue 24, item 2). */
#include "rdv_test.h"

#include <stdlib.h>

#define MAX_NODES 4
#define SETTLE (1 * SEC)
#define INTERVAL (100 * MS)

typedef struct cluster {
	ftl_rdv *nodes[MAX_NODES];
	ftl_rdv_member members[MAX_NODES];
	int n;
	int blob_calls;
	bool is_blob_postponed;
} cluster;

static ftl_err blob_cb(void *ctx, uint64_t epoch, uint8_t *blob, size_t cap, size_t *len)
{
	cluster *c = ctx;
	c->blob_calls++;
	*len = 0;
	if (c->is_blob_postponed)
		return FTL_ERR_BACKEND; /* as when NCCL cannot make a unique id */
	memset(blob, 0xab, 16); /* an NCCL unique id would be 128 bytes */
	blob[0] = (uint8_t)epoch;
	*len = 16;
	return FTL_OK;
}

static void cluster_start(cluster *c, int n, bool is_with_blob)
{
	memset(c, 0, sizeof *c);
	c->n = n;
	for (int i = 0; i < n; i++) {
		ftl_rdv_member *m = &c->members[i];
		snprintf(m->name, sizeof m->name, "node-%c", 'd' - i); /* names sort against join order */
		snprintf(m->data_addr, sizeof m->data_addr, "10.1.0.%d:7000", 9 - i);
		m->generation = 100 + (uint64_t)i;
		ftl_rdv_options o = {.name = m->name, .generation = m->generation, .data_addr = m->data_addr,
				     .config = {.min_workers = 1, .max_workers = 8, .settle_us = SETTLE,
						.ready_interval_us = INTERVAL},
				     .blob_cb = is_with_blob ? blob_cb : NULL, .blob_ctx = c};
		c->nodes[i] = ftl_rdv_new(&o);
		assert_non_null(c->nodes[i]);
	}
}

static void cluster_stop(cluster *c)
{
	for (int i = 0; i < c->n; i++)
		ftl_rdv_delete(c->nodes[i]);
}

static int find(const cluster *c, const char *name)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->members[i].name, name) == 0)
			return i;
	return -1;
}

/* Delivers every output at once until the cluster is quiet; returns how many messages went. */
static int pump(cluster *c, int64_t now)
{
	int sent = 0;
	for (bool is_busy = true; is_busy;) {
		is_busy = false;
		for (int i = 0; i < c->n; i++) {
			ftl_rdv_output out;
			while (ftl_rdv_next_output(c->nodes[i], &out)) {
				int to = find(c, out.to);
				assert_true(to >= 0);
				ftl_rdv_receive(c->nodes[to], now, out.data, out.len);
				ftl_rdv_output_free(&out);
				is_busy = true;
				sent++;
			}
		}
	}
	return sent;
}

static void all_see_all(cluster *c, int64_t now)
{
	for (int i = 0; i < c->n; i++)
		ftl_rdv_set_members(c->nodes[i], now, c->members, (size_t)c->n, NULL, 0);
	pump(c, now);
}

static void tick_all(cluster *c, int64_t now)
{
	for (int i = 0; i < c->n; i++)
		ftl_rdv_tick(c->nodes[i], now);
	pump(c, now);
}

static void first_view_for(int n)
{
	cluster c;
	const ftl_rdv_view *v;
	cluster_start(&c, n, false);
	all_see_all(&c, 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(ftl_rdv_current(c.nodes[i])->epoch, 0);
		assert_int_equal(ftl_rdv_get_phase(c.nodes[i]), FTL_RDV_RENDEZVOUS);
		assert_string_equal(ftl_rdv_coordinator(c.nodes[i]), "node-d"); /* the oldest, not the first by name */
		assert_false(ftl_rdv_take_new_view(c.nodes[i], &v));
	}
	assert_int_equal(ftl_rdv_next_deadline(c.nodes[0]), SETTLE); /* the coordinator wakes when settled */
	tick_all(&c, SETTLE - 1);
	assert_int_equal(ftl_rdv_current(c.nodes[0])->epoch, 0);
	tick_all(&c, SETTLE);
	for (int i = 0; i < n; i++) {
		assert_true(ftl_rdv_take_new_view(c.nodes[i], &v));
		assert_false(ftl_rdv_take_new_view(c.nodes[i], &v));
		assert_int_equal(v->epoch, 1);
		assert_int_equal(v->n, n);
		for (int k = 0; k < n; k++) { /* join order: generation, whatever the names and addresses say */
			assert_string_equal(v->members[k].name, c.members[k].name);
			assert_string_equal(v->members[k].data_addr, c.members[k].data_addr);
		}
		assert_int_equal(ftl_rdv_rank(c.nodes[i]), i);
		assert_int_equal(ftl_rdv_get_phase(c.nodes[i]), FTL_RDV_TRAINING);
		assert_int_equal(ftl_rdv_next_deadline(c.nodes[i]), INT64_MAX); /* nothing to do: no timers */
	}
	/* Quiet while nothing changes. */
	tick_all(&c, 10 * SEC);
	assert_int_equal(pump(&c, 10 * SEC), 0);
	assert_int_equal(ftl_rdv_current(c.nodes[0])->epoch, 1);
	cluster_stop(&c);
}

static void test_one_member_commits_its_own_view_after_settling(void **state) { first_view_for(1); }
static void test_two_members_agree_on_one_view(void **state) { first_view_for(2); }
static void test_four_members_agree_on_one_view(void **state) { first_view_for(4); }

static void test_every_member_gets_the_coordinators_blob(void **state)
{
	cluster c;
	cluster_start(&c, 4, true);
	all_see_all(&c, 0);
	c.is_blob_postponed = true;
	tick_all(&c, SETTLE);
	assert_int_equal(ftl_rdv_current(c.nodes[0])->epoch, 0); /* postponed */
	assert_true(c.blob_calls > 0);
	c.is_blob_postponed = false;
	tick_all(&c, SETTLE + INTERVAL);
	for (int i = 0; i < 4; i++) {
		const ftl_rdv_view *v = ftl_rdv_current(c.nodes[i]);
		assert_int_equal(v->epoch, 1);
		assert_int_equal(v->blob_len, 16);
		assert_int_equal(v->blob[0], 1);
		assert_int_equal(v->blob[15], 0xab);
	}
	cluster_stop(&c);
}

static void test_a_death_commits_at_once_and_the_next_oldest_leads(void **state)
{
	cluster c;
	cluster_start(&c, 4, false);
	all_see_all(&c, 0);
	tick_all(&c, SETTLE);
	/* node-d (rank 0) dies: the others see members 1..3 only, and commit at once (no settle). */
	for (int i = 1; i < 4; i++)
		ftl_rdv_set_members(c.nodes[i], 2 * SEC, &c.members[1], 3, NULL, 0);
	pump(&c, 2 * SEC);
	for (int i = 1; i < 4; i++) {
		const ftl_rdv_view *v = ftl_rdv_current(c.nodes[i]);
		assert_int_equal(v->epoch, 2);
		assert_int_equal(v->n, 3);
		assert_string_equal(v->members[0].name, "node-c");
		assert_int_equal(ftl_rdv_rank(c.nodes[i]), i - 1);
	}
	cluster_stop(&c);
}

/* Nodes [from, to) see only each other. */
static void see_group(cluster *c, int from, int to, int64_t now)
{
	for (int i = from; i < to; i++)
		ftl_rdv_set_members(c->nodes[i], now, &c->members[from], (size_t)(to - from), NULL, 0);
	pump(c, now);
}

/* A job of three (nodes 0..2) and a stray (node 3) form lineages apart; the stray's view goes through
 * `rebuilds` more epochs (joins and leaves it saw). With these steps each, they meet. Returns the lineage
 * all four end in, after checking that they hold one view of four; *job_lineage is the job's first one, and
 * *job_kept says whether the job's members held their own lineage all along. */
static uint64_t lineage_after_meeting(uint64_t job_steps, uint64_t stray_steps, int rebuilds,
				      uint64_t *job_lineage, bool *job_kept)
{
	cluster c;
	int64_t now = SETTLE;
	cluster_start(&c, 4, false);
	see_group(&c, 0, 3, 0);
	see_group(&c, 3, 4, 0);
	tick_all(&c, now);
	*job_lineage = ftl_rdv_current(c.nodes[0])->lineage;
	for (int k = 0; k < rebuilds; k++) {
		ftl_rdv_request_rebuild(c.nodes[3], now, ftl_rdv_current(c.nodes[3])->epoch);
		pump(&c, now);
		tick_all(&c, now += INTERVAL);
	}
	assert_int_equal(ftl_rdv_current(c.nodes[3])->epoch, ftl_rdv_current(c.nodes[0])->epoch + (uint64_t)rebuilds);
	assert_int_not_equal(ftl_rdv_current(c.nodes[3])->lineage, *job_lineage);
	for (int i = 0; i < 4; i++)
		ftl_rdv_set_steps(c.nodes[i], ftl_rdv_current(c.nodes[i])->lineage, i < 3 ? job_steps : stray_steps);
	*job_kept = true;
	all_see_all(&c, now);
	for (int t = 0; t < 50; t++) {
		tick_all(&c, now += INTERVAL);
		for (int i = 0; i < 3; i++)
			*job_kept = *job_kept && ftl_rdv_current(c.nodes[i])->lineage == *job_lineage;
	}
	uint64_t lineage = ftl_rdv_current(c.nodes[0])->lineage;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ftl_rdv_current(c.nodes[i])->n, 4);
		assert_int_equal(ftl_rdv_current(c.nodes[i])->lineage, lineage);
		assert_int_equal(ftl_rdv_get_phase(c.nodes[i]), FTL_RDV_TRAINING);
	}
	cluster_stop(&c);
	return lineage;
}

static void test_a_stray_with_a_higher_epoch_and_fewer_steps_never_rolls_the_job_back(void **state)
{
	uint64_t job;
	bool is_kept;
	uint64_t kept = lineage_after_meeting(430, 44, 5, &job, &is_kept);
	assert_int_equal(kept, job);
	assert_true(is_kept); /* not for one view did a member of the job hold the stray's lineage */
}

static void test_the_lineage_with_more_steps_wins_even_when_it_is_smaller(void **state)
{
	uint64_t job;
	bool is_kept;
	uint64_t kept = lineage_after_meeting(44, 430, 0, &job, &is_kept);
	assert_int_not_equal(kept, job);
}

static void test_with_equal_steps_the_larger_view_wins(void **state)
{
	uint64_t job;
	bool is_kept;
	uint64_t kept = lineage_after_meeting(100, 100, 5, &job, &is_kept);
	assert_int_equal(kept, job);
	assert_true(is_kept);
}

/* Every member, a spare included, must know that the job has work to lose: a member that later finds itself
 * rank 0 without the state must not start the job again from nothing. Rank 0 says so once per lineage, when
 * its first steps are set; later steps cost no message. */
static void test_rank_0_tells_every_member_once_that_the_job_has_steps(void **state)
{
	cluster c;
	cluster_start(&c, 4, false);
	all_see_all(&c, 0);
	tick_all(&c, SETTLE);
	uint64_t lineage = ftl_rdv_current(c.nodes[0])->lineage;
	assert_int_equal(ftl_rdv_rank(c.nodes[0]), 0);
	ftl_rdv_set_steps(c.nodes[1], lineage, 3); /* not rank 0: says nothing */
	assert_int_equal(pump(&c, SETTLE), 0);
	ftl_rdv_set_steps(c.nodes[0], lineage, 2);
	assert_int_equal(pump(&c, SETTLE), 3);
	for (int i = 1; i < 4; i++)
		assert_true(ftl_rdv_steps(c.nodes[i]) >= 2);
	ftl_rdv_set_steps(c.nodes[0], lineage, 9);
	assert_int_equal(pump(&c, SETTLE), 0);
	ftl_rdv_set_steps(c.nodes[0], lineage + 1, 9); /* not its lineage: ignored */
	assert_int_equal(ftl_rdv_steps(c.nodes[0]), 9);
	cluster_stop(&c);
}

static void test_bad_options_and_malformed_input_are_refused(void **state)
{
	ftl_rdv_options o = {.name = "a", .generation = 1, .data_addr = "h:1",
			     .config = {.min_workers = 0, .max_workers = 4, .settle_us = 0, .ready_interval_us = 1}};
	assert_null(ftl_rdv_new(&o));
	assert_string_equal(ftl_diag_message(), "rendezvous: min_workers must be at least 1");
	o.config.min_workers = 5;
	assert_null(ftl_rdv_new(&o));
	o.config.min_workers = 1;
	o.name = "";
	assert_null(ftl_rdv_new(&o));
	o.name = "a";
	ftl_rdv *r = ftl_rdv_new(&o);
	assert_non_null(r);
	static const uint8_t junk[] = {0x01, 0xde, 0xff, 0xff};
	ftl_rdv_receive(r, 0, junk, sizeof junk);
	ftl_rdv_receive(r, 0, junk, 0);
	assert_int_equal(ftl_rdv_dropped(r), 2);
	assert_int_equal(ftl_rdv_get_phase(r), FTL_RDV_NO_VIEW);
	assert_string_equal(ftl_rdv_coordinator(r), "");
	ftl_rdv_delete(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_member_commits_its_own_view_after_settling),
		cmocka_unit_test(test_two_members_agree_on_one_view),
		cmocka_unit_test(test_four_members_agree_on_one_view),
		cmocka_unit_test(test_every_member_gets_the_coordinators_blob),
		cmocka_unit_test(test_a_death_commits_at_once_and_the_next_oldest_leads),
		cmocka_unit_test(test_a_stray_with_a_higher_epoch_and_fewer_steps_never_rolls_the_job_back),
		cmocka_unit_test(test_the_lineage_with_more_steps_wins_even_when_it_is_smaller),
		cmocka_unit_test(test_with_equal_steps_the_larger_view_wins),
		cmocka_unit_test(test_rank_0_tells_every_member_once_that_the_job_has_steps),
		cmocka_unit_test(test_bad_options_and_malformed_input_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
