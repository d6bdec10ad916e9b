/* Hostile input to one ftl_swim instance, as the peer channel hands it over once opened (agent/seal.h
 * opens and counts what is sealed with another key or for another cluster; tests/channel/test_seal.c):
 * random bytes, a push-pull that does not decode, and a ping for another node are dropped and counted;
 * the member table does not change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "membership/rng.h"
#include "membership/swim.h"

static const uint8_t key_a[FTL_KEY_SIZE] = {1};

static ftl_swim *make(const char *name, ftl_keyring *kr)
{
	ftl_swim_options o = {.name = name, .generation = 1, .addr = "127.0.0.1:1", .keyring = kr, .seed = 9};
	ftl_swim_config_profile(&o.config, FTL_PROFILE_TRAIN);
	ftl_swim *s = ftl_swim_new(&o, 0);
	assert_non_null(s);
	return s;
}

static size_t ping_packet(const char *target, uint8_t *out, size_t cap)
{
	ftl_msg ping = {.type = FTL_MSG_PING};
	ping.u.ping.seq = 1;
	strcpy(ping.u.ping.target, target);
	strcpy(ping.u.ping.source, "mallory");
	strcpy(ping.u.ping.source_addr, "127.0.0.1:9");
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, out, cap);
	assert_int_equal(ftl_wire_packet_add(&p, &ping), 0);
	return ftl_wire_packet_finish(&p);
}

static void test_random_bytes_change_nothing_but_counters(void **state)
{
	ftl_keyring *kr = ftl_keyring_new("c", key_a);
	ftl_swim *s = make("me", kr);
	ftl_rng rng;
	ftl_rng_seed(&rng, 5);
	uint8_t buf[2000];
	for (int i = 0; i < 20000; i++) {
		size_t len = ftl_rng_below(&rng, sizeof(buf));
		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)ftl_rng_next(&rng);
		ftl_swim_receive(s, i, buf, len);
	}
	assert_int_equal(ftl_swim_get_stats(s)->dropped[FTL_DROP_MALFORMED], 20000);
	assert_int_equal(ftl_swim_members(s)->len, 1);
	ftl_swim_output out;
	assert_false(ftl_swim_next_output(s, &out)); /* nothing answered */
	ftl_swim_delete(s);
	ftl_keyring_delete(kr);
}

static void test_a_ping_is_answered(void **state)
{
	ftl_keyring *kr = ftl_keyring_new("c", key_a);
	ftl_swim *s = make("me", kr);
	uint8_t buf[1400];
	size_t len = ping_packet("me", buf, sizeof(buf));
	ftl_swim_receive(s, 3, buf, len);
	ftl_swim_output out;
	assert_true(ftl_swim_next_output(s, &out));
	assert_string_equal(out.to_addr, "127.0.0.1:9");
	ftl_swim_delete(s);
	ftl_keyring_delete(kr);
}

static void test_ping_for_another_node_is_dropped(void **state)
{
	ftl_keyring *kr = ftl_keyring_new("c", key_a);
	ftl_swim *s = make("me", kr);
	uint8_t buf[1400];
	size_t len = ping_packet("someone-else", buf, sizeof(buf));
	ftl_swim_receive(s, 1, buf, len);
	assert_int_equal(ftl_swim_get_stats(s)->dropped[FTL_DROP_WRONG_TARGET], 1);
	ftl_swim_output out;
	assert_false(ftl_swim_next_output(s, &out));
	ftl_swim_delete(s);
	ftl_keyring_delete(kr);
}

static void test_push_pull_that_does_not_decode_is_dropped(void **state)
{
	ftl_keyring *kr = ftl_keyring_new("c", key_a);
	ftl_swim *s = make("me", kr);
	ftl_swim *peer = make("peer", kr);
	uint8_t *frame;
	size_t len;
	assert_int_equal(ftl_swim_push_pull_encode(peer, true, &frame, &len), 0);
	assert_int_equal(ftl_swim_push_pull_merge(s, 1, frame, len - 1, NULL), FTL_ERR_INVALID); /* cut short */
	assert_non_null(strstr(ftl_diag_message(), "push-pull frame"));
	assert_int_equal(ftl_swim_get_stats(s)->dropped[FTL_DROP_PUSH_PULL], 1);
	assert_int_equal(ftl_swim_members(s)->len, 1);
	assert_int_equal(ftl_swim_push_pull_merge(s, 1, frame, len, NULL), 0); /* whole: merged */
	assert_int_equal(ftl_swim_members(s)->len, 2);
	free(frame);
	ftl_swim_delete(s);
	ftl_swim_delete(peer);
	ftl_keyring_delete(kr);
}

static void test_bad_options_are_refused_with_the_setting_named(void **state)
{
	ftl_keyring *kr = ftl_keyring_new("c", key_a);
	ftl_swim_options o = {.name = "", .generation = 1, .addr = "x:1", .keyring = kr};
	ftl_swim_config_profile(&o.config, FTL_PROFILE_LAN);
	assert_null(ftl_swim_new(&o, 0));
	assert_non_null(strstr(ftl_diag_message(), "name"));
	o.name = "ok";
	o.keyring = NULL;
	assert_null(ftl_swim_new(&o, 0));
	assert_non_null(strstr(ftl_diag_message(), "keyring"));
	ftl_keyring_delete(kr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_bytes_change_nothing_but_counters),
		cmocka_unit_test(test_a_ping_is_answered),
		cmocka_unit_test(test_ping_for_another_node_is_dropped),
		cmocka_unit_test(test_push_pull_that_does_not_decode_is_dropped),
		cmocka_unit_test(test_bad_options_are_refused_with_the_setting_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
