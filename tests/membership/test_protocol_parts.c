/* Unit tests of the protocol's small parts, each alone: the suspicion timer, the piggyback queue, local
 * health, the member table and the profile formulas. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/awareness.h"
#include "membership/broadcast.h"
#include "membership/members.h"
#include "membership/profile.h"
#include "membership/suspicion.h"

static void test_suspicion_starts_at_max_and_shrinks_to_min_with_confirmations(void **state)
{
	ftl_suspicion s;
	ftl_suspicion_start(&s, 1000, 100, 600, 3, "accuser");
	assert_int_equal(ftl_suspicion_deadline(&s), 1000 + 600);
	assert_true(ftl_suspicion_confirm(&s, "b"));
	int64_t one = ftl_suspicion_deadline(&s);
	int64_t expect = 600 - (int64_t)(500.0 * log(2.0) / log(4.0)); /* 350, give or take rounding */
	assert_true(llabs((one - 1000) - expect) <= 1);
	assert_true(ftl_suspicion_confirm(&s, "c"));
	assert_true(ftl_suspicion_deadline(&s) < one);
	assert_true(ftl_suspicion_confirm(&s, "d"));
	assert_int_equal(ftl_suspicion_deadline(&s), 1000 + 100);
	assert_false(ftl_suspicion_confirm(&s, "e")); /* k reached: no more news to spread */
}

static void test_suspicion_ignores_repeated_and_accuser_confirmations(void **state)
{
	ftl_suspicion s;
	ftl_suspicion_start(&s, 0, 100, 600, 3, "accuser");
	assert_false(ftl_suspicion_confirm(&s, "accuser"));
	assert_true(ftl_suspicion_confirm(&s, "b"));
	assert_false(ftl_suspicion_confirm(&s, "b"));
	assert_int_equal(s.confirmations, 1);
}

static void test_suspicion_with_no_expected_confirmations_uses_min(void **state)
{
	ftl_suspicion s;
	ftl_suspicion_start(&s, 0, 100, 600, 0, "a");
	assert_int_equal(ftl_suspicion_deadline(&s), 100);
}

static size_t fill_count(ftl_bcast_queue *q, int limit, size_t cap)
{
	uint8_t buf[2048];
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, buf, cap);
	return ftl_bcast_fill(q, &p, limit);
}

static size_t push_rumor(ftl_bcast_queue *q, const char *about, uint64_t inc)
{
	ftl_msg m = {.type = FTL_MSG_SUSPECT};
	snprintf(m.u.rumor.name, sizeof(m.u.rumor.name), "%s", about);
	snprintf(m.u.rumor.from, sizeof(m.u.rumor.from), "x");
	m.u.rumor.incarnation = inc;
	uint8_t buf[FTL_WIRE_MSG_MAX];
	size_t len;
	assert_int_equal(ftl_wire_encode_msg(&m, buf, sizeof(buf), &len), 0);
	assert_int_equal(ftl_bcast_push(q, about, buf, len), 0);
	return len;
}

static void test_broadcast_newer_rumor_replaces_older_about_same_member(void **state)
{
	ftl_bcast_queue q;
	ftl_bcast_init(&q);
	push_rumor(&q, "a", 1);
	push_rumor(&q, "b", 1);
	push_rumor(&q, "a", 2);
	assert_int_equal(ftl_bcast_len(&q), 2);
	assert_true(ftl_bcast_has(&q, "a"));
	ftl_bcast_free(&q);
}

static void test_broadcast_rumor_is_dropped_after_limit_transmissions(void **state)
{
	ftl_bcast_queue q;
	ftl_bcast_init(&q);
	push_rumor(&q, "a", 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fill_count(&q, 3, 1400), 1);
	assert_int_equal(ftl_bcast_len(&q), 0);
	assert_int_equal(fill_count(&q, 3, 1400), 0);
	ftl_bcast_free(&q);
}

static void test_broadcast_least_sent_go_first_when_packet_is_small(void **state)
{
	ftl_bcast_queue q;
	ftl_bcast_init(&q);
	push_rumor(&q, "old", 1);
	assert_int_equal(fill_count(&q, 10, 1400), 1); /* "old" sent once */
	size_t len = push_rumor(&q, "new", 1);
	/* Room for one rumor only: the unsent one wins. */
	uint8_t buf[2048];
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, buf, 6 + len + len / 2);
	assert_int_equal(ftl_bcast_fill(&q, &p, 10), 1);
	ftl_msg out[4];
	size_t n;
	assert_int_equal(ftl_wire_decode_packet(buf, ftl_wire_packet_finish(&p), out, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].u.rumor.name, "new");
	ftl_bcast_free(&q);
}

static void test_awareness_is_clamped_and_scales_timeouts(void **state)
{
	ftl_awareness a;
	ftl_awareness_init(&a, 8);
	ftl_awareness_apply(&a, -3);
	assert_int_equal(a.score, 0);
	assert_int_equal(ftl_awareness_scale(&a, 100), 100);
	ftl_awareness_apply(&a, 20);
	assert_int_equal(a.score, 7);
	assert_int_equal(ftl_awareness_scale(&a, 100), 800);
}

static void test_members_find_add_remove_and_probe_round_covers_everyone(void **state)
{
	ftl_members t;
	ftl_rng rng;
	ftl_rng_seed(&rng, 1);
	ftl_members_init(&t);
	char name[16];
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		assert_non_null(ftl_members_add(&t, &rng, name, "addr:1", FTL_MEMBER_ALIVE, 0));
	}
	assert_non_null(ftl_members_find(&t, "m42"));
	ftl_members_remove(&t, &rng, ftl_members_find(&t, "m42"));
	assert_null(ftl_members_find(&t, "m42"));
	assert_non_null(ftl_members_find(&t, "m99"));
	int seen[100] = {0}, count = 0;
	const ftl_member *m;
	while ((m = ftl_members_next_in_round(&t, &rng)) != NULL) {
		seen[atoi(m->name + 1)]++;
		count++;
	}
	assert_int_equal(count, 99);
	for (int i = 0; i < 100; i++)
		assert_int_equal(seen[i], i == 42 ? 0 : 1);
	assert_int_equal(ftl_members_set_addr(ftl_members_find(&t, "m1"), "other:2"), 0);
	assert_string_equal(ftl_members_find(&t, "m1")->addr, "other:2");
	assert_string_equal(ftl_members_find(&t, "m1")->name, "m1");
	ftl_members_free(&t);
}

static void test_profile_formulas_match_memberlist(void **state)
{
	ftl_swim_config c;
	ftl_swim_config_profile(&c, FTL_PROFILE_LAN);
	const char *why = "";
	assert_int_equal(ftl_swim_config_check(&c, &why), FTL_SWIM_FIELD_NONE);
	assert_null(why);
	assert_int_equal(ftl_swim_retransmit_limit(&c, 8), 4);   /* 4 * ceil(log10 9) */
	assert_int_equal(ftl_swim_retransmit_limit(&c, 100), 12); /* 4 * ceil(log10 101) */
	assert_int_equal(ftl_swim_suspicion_min_us(&c, 5), 4000000); /* 4 * max(1, log10 5) * 1 s */
	assert_int_equal(ftl_swim_suspicion_max_us(&c, 5), 24000000);
	assert_int_equal(ftl_swim_suspicion_confirmations(&c, 100), 2);
	assert_int_equal(ftl_swim_suspicion_confirmations(&c, 3), 0);
	ftl_swim_profile p;
	assert_int_equal(ftl_swim_profile_from_name("train", &p), 0);
	assert_int_equal(p, FTL_PROFILE_TRAIN);
	assert_int_equal(ftl_swim_profile_from_name("wan", &p), FTL_ERR_INVALID);
	assert_int_equal(ftl_swim_push_pull_interval_us(&c, 32), c.push_pull_interval_us);
	assert_int_equal(ftl_swim_push_pull_interval_us(&c, 64), 2 * c.push_pull_interval_us);
	assert_int_equal(ftl_swim_push_pull_interval_us(&c, 10000), 10 * c.push_pull_interval_us);
}

static void test_bad_config_names_the_setting(void **state)
{
	ftl_swim_config c;
	ftl_swim_config_profile(&c, FTL_PROFILE_TRAIN);
	const char *why;
	c.probe_timeout_us = c.probe_interval_us;
	assert_int_equal(ftl_swim_config_check(&c, &why), FTL_SWIM_FIELD_PROBE_TIMEOUT);
	assert_non_null(strstr(why, "probe_timeout"));
	ftl_swim_config_profile(&c, FTL_PROFILE_TRAIN);
	c.gossip_nodes = 0;
	assert_int_equal(ftl_swim_config_check(&c, &why), FTL_SWIM_FIELD_GOSSIP_NODES);
	assert_non_null(strstr(why, "gossip_nodes"));
	ftl_swim_config_profile(&c, FTL_PROFILE_TRAIN);
	c.reap_after_us = -1; /* its own field now, not folded into gossip_to_dead's */
	assert_int_equal(ftl_swim_config_check(&c, &why), FTL_SWIM_FIELD_REAP_AFTER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suspicion_starts_at_max_and_shrinks_to_min_with_confirmations),
		cmocka_unit_test(test_suspicion_ignores_repeated_and_accuser_confirmations),
		cmocka_unit_test(test_suspicion_with_no_expected_confirmations_uses_min),
		cmocka_unit_test(test_broadcast_newer_rumor_replaces_older_about_same_member),
		cmocka_unit_test(test_broadcast_rumor_is_dropped_after_limit_transmissions),
		cmocka_unit_test(test_broadcast_least_sent_go_first_when_packet_is_small),
		cmocka_unit_test(test_awareness_is_clamped_and_scales_timeouts),
		cmocka_unit_test(test_members_find_add_remove_and_probe_round_covers_everyone),
		cmocka_unit_test(test_profile_formulas_match_memberlist),
		cmocka_unit_test(test_bad_config_names_the_setting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
