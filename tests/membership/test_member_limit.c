/* The member table's limit (config.max_members, FTL_MAX_MEMBERS): whoever holds the key (or a bug) could
 * gossip new names without end, and each one used to be taken in (20,000 fake members, all kept). A new
 * name beyond the limit is refused and counted (FTL_DROP_TABLE_FULL); the members already known keep
 * being updated, and a place freed by a reaped member is taken again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/swim.h"

enum { LIMIT = 8, OFFERED = 20 };

static ftl_swim *make(const char *name, ftl_keyring *kr, int max_members)
{
	ftl_swim_options o = {.name = name, .generation = 1, .addr = "127.0.0.1:1", .keyring = kr, .seed = 3};
	ftl_swim_config_profile(&o.config, FTL_PROFILE_TRAIN);
	o.config.max_members = max_members;
	ftl_swim *s = ftl_swim_new(&o, 0);
	assert_non_null(s);
	return s;
}

/* One datagram with an alive of name n<i> at addr 127.0.0.1:<port>, incarnation inc. */
static void receive_alive(ftl_swim *s, int64_t now_us, int i, int port, uint64_t inc)
{
	ftl_msg m = {.type = FTL_MSG_ALIVE};
	snprintf(m.u.alive.name, sizeof(m.u.alive.name), "n%d", i);
	snprintf(m.u.alive.addr, sizeof(m.u.alive.addr), "127.0.0.1:%d", port);
	m.u.alive.generation = 1;
	m.u.alive.incarnation = inc;
	uint8_t buf[FTL_UDP_PACKET_MAX];
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, buf, sizeof(buf));
	assert_int_equal(ftl_wire_packet_add(&p, &m), 0);
	ftl_swim_receive(s, now_us, buf, ftl_wire_packet_finish(&p));
}

static const ftl_member *find(const ftl_swim *s, int i)
{
	char name[16];
	snprintf(name, sizeof(name), "n%d", i);
	return ftl_members_find(ftl_swim_members(s), name);
}

static void test_new_names_beyond_the_limit_are_refused_and_counted(void **state)
{
	ftl_keyring *kr = ftl_keyring_new_insecure("c");
	ftl_swim *s = make("me", kr, LIMIT);
	for (int i = 0; i < OFFERED; i++)
		receive_alive(s, 1000 + i, i, 2000 + i, 1);
	assert_int_equal(ftl_swim_members(s)->len, LIMIT); /* me and n0..n6 */
	assert_int_equal(ftl_swim_get_stats(s)->dropped[FTL_DROP_TABLE_FULL], OFFERED - (LIMIT - 1));
	assert_non_null(find(s, LIMIT - 2));
	assert_null(find(s, LIMIT - 1));
	/* a known member still changes: a new incarnation with a new address */
	receive_alive(s, 5000, 3, 3003, 2);
	assert_string_equal(find(s, 3)->addr, "127.0.0.1:3003");
	assert_int_equal(find(s, 3)->incarnation, 2);
	/* a push-pull from a member that knows more names adds none of them */
	ftl_swim *peer = make("n0", kr, 64);
	for (int i = 100; i < 110; i++)
		receive_alive(peer, 1, i, 3000 + i, 1);
	uint8_t *frame;
	size_t len;
	assert_int_equal(ftl_swim_push_pull_encode(peer, false, &frame, &len), 0);
	assert_int_equal(ftl_swim_push_pull_merge(s, 6000, frame, len, NULL), 0);
	free(frame);
	assert_int_equal(ftl_swim_members(s)->len, LIMIT);
	assert_null(find(s, 100));
	assert_int_equal(ftl_swim_get_stats(s)->dropped[FTL_DROP_TABLE_FULL], OFFERED - (LIMIT - 1) + 10);
	ftl_swim_delete(peer);
	ftl_swim_delete(s);
	ftl_keyring_delete(kr);
}

/* A member that leaves and is reaped frees its place: the next new name is taken. */
static void test_a_reaped_member_frees_its_place(void **state)
{
	ftl_keyring *kr = ftl_keyring_new_insecure("c");
	ftl_swim *s = make("me", kr, 3);
	receive_alive(s, 1, 1, 2001, 1);
	receive_alive(s, 2, 2, 2002, 1);
	receive_alive(s, 3, 3, 2003, 1);
	assert_null(find(s, 3));
	ftl_msg left = {.type = FTL_MSG_LEFT};
	strcpy(left.u.rumor.name, "n1");
	strcpy(left.u.rumor.from, "n1");
	left.u.rumor.generation = 1;
	left.u.rumor.incarnation = 1;
	uint8_t buf[FTL_UDP_PACKET_MAX];
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, buf, sizeof(buf));
	assert_int_equal(ftl_wire_packet_add(&p, &left), 0);
	ftl_swim_receive(s, 10, buf, ftl_wire_packet_finish(&p));
	int64_t later = 10 + ftl_swim_get_config(s)->reap_after_us + 1000000;
	for (int64_t t = 10; t <= later; t += 100000)
		ftl_swim_tick(s, t);
	assert_null(find(s, 1));
	receive_alive(s, later + 1, 3, 2003, 1);
	assert_non_null(find(s, 3));
	ftl_swim_delete(s);
	ftl_keyring_delete(kr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_names_beyond_the_limit_are_refused_and_counted),
		cmocka_unit_test(test_a_reaped_member_frees_its_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
