/* Member addresses gossiped by a keyed member are checked: an alive (gossip or push-pull) whose address
 * is not a numeric host with a port the agent can send to is dropped and counted, and never enters the
 * member table. Uses the agent's own check (ftl_addr_is_member) on a membership core. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "membership/swim.h"

static void test_gossiped_member_address_that_is_not_ip_port_is_dropped(void **state)
{
	static const uint8_t key[FTL_KEY_SIZE] = {1};
	ftl_keyring *kr = ftl_keyring_new("c", key);
	ftl_swim_options o = {.name = "me", .generation = 1, .addr = "10.0.0.1:7946", .keyring = kr, .seed = 3,
			      .is_addr_valid = ftl_addr_is_member};
	ftl_swim_config_profile(&o.config, FTL_PROFILE_TRAIN);
	ftl_swim *s = ftl_swim_new(&o, 0);
	assert_non_null(s);
	const char *bad[] = {"999.1.1.1:99999", "999.1.1.1:7946", "10.0.0.2:0", "10.0.0.2", "0.0.0.0:7946",
			     "[::]:7946", "host.example:7946", "10.0.0.2:70000"};
	size_t n_bad = sizeof(bad) / sizeof(bad[0]);
	for (size_t i = 0; i < n_bad; i++) {
		/* As a push-pull entry from a keyed peer: the frame opens, the entry is dropped. */
		ftl_pp_member m = {.generation = 1, .state = FTL_MEMBER_ALIVE};
		snprintf(m.name, sizeof(m.name), "x%zu", i);
		strcpy(m.addr, bad[i]);
		ftl_push_pull hdr = {.count = 1};
		strcpy(hdr.source, "peer");
		uint8_t *plain;
		size_t plain_len;
		assert_int_equal(ftl_wire_encode_push_pull(&hdr, &m, &plain, &plain_len), 0);
		assert_int_equal(ftl_swim_push_pull_merge(s, 1, plain, plain_len, NULL), 0);
		free(plain);
	}
	assert_int_equal(ftl_swim_members(s)->len, 1);
	assert_int_equal(ftl_swim_get_stats(s)->dropped[FTL_DROP_BAD_ADDR], n_bad);
	/* A good address joins. */
	ftl_pp_member m = {.name = "ok", .addr = "[fd00::7]:7946", .generation = 1, .state = FTL_MEMBER_ALIVE};
	ftl_push_pull hdr = {.source = "peer", .count = 1};
	uint8_t *plain;
	size_t plain_len;
	assert_int_equal(ftl_wire_encode_push_pull(&hdr, &m, &plain, &plain_len), 0);
	assert_int_equal(ftl_swim_push_pull_merge(s, 1, plain, plain_len, NULL), 0);
	free(plain);
	assert_non_null(ftl_swim_find(s, "ok"));
	ftl_swim_delete(s);
	ftl_keyring_delete(kr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gossiped_member_address_that_is_not_ip_port_is_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
