/* Replays change nothing: traffic captured from a cluster and sent again later, when the state it
 * described is gone, must be recognised as old. A key operation replayed to a node started after the
 * key was removed does not bring the key back; alive and push-pull traffic of a member that died and was
 * reaped does not bring the member back. `membership_test_replay NAME` runs one test (ctest names them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "membership/swim.h"

static const uint8_t k1[FTL_KEY_SIZE] = {1};
static const uint8_t k2[FTL_KEY_SIZE] = {2};
static const uint8_t k3[FTL_KEY_SIZE] = {3};

typedef struct captured {
	size_t len;
	uint8_t data[FTL_UDP_PACKET_MAX];
} captured;

static ftl_swim *make(const char *name, const char *addr, ftl_keyring *kr, uint64_t generation)
{
	ftl_swim_options o = {.name = name, .generation = generation, .addr = addr, .keyring = kr, .seed = 7};
	ftl_swim_config_profile(&o.config, FTL_PROFILE_TRAIN);
	ftl_swim *s = ftl_swim_new(&o, 0);
	assert_non_null(s);
	return s;
}

/* Ticks s until it sends a datagram to `to` (at most 20 virtual seconds); returns the last one sent. */
static captured capture_to(ftl_swim *s, int64_t *now_us, const char *to)
{
	captured c = {0};
	for (int i = 0; i < 200 && c.len == 0; i++) {
		*now_us += 100000;
		ftl_swim_tick(s, *now_us);
		ftl_swim_output out;
		while (ftl_swim_next_output(s, &out))
			if (out.kind == FTL_OUTPUT_PACKET && strcmp(out.to_addr, to) == 0) {
				c.len = out.len;
				memcpy(c.data, out.data, out.len);
			}
	}
	assert_true(c.len > 0);
	return c;
}

static void push_pull(ftl_swim *from, ftl_swim *to, int64_t now_us)
{
	uint8_t *frame;
	size_t len;
	assert_int_equal(ftl_swim_push_pull_encode(from, false, &frame, &len), 0);
	assert_int_equal(ftl_swim_push_pull_merge(to, now_us, frame, len, NULL), 0);
	free(frame);
}

static size_t keys_of(ftl_keyring *kr)
{
	uint8_t keys[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE];
	return ftl_keyring_list(kr, keys, FTL_KEYRING_MAX_KEYS);
}

static void add_known(ftl_swim *s, const char *name, const char *addr, uint64_t generation)
{
	ftl_msg_alive a = {.generation = generation, .incarnation = 0};
	strcpy(a.name, name);
	strcpy(a.addr, addr);
	assert_int_equal(ftl_swim_add_known(s, 0, &a), 0);
}

static void test_replayed_key_install_does_not_restore_a_removed_key(void **state)
{
	ftl_keyring *ka = ftl_keyring_new("c", k1), *kb = ftl_keyring_new("c", k1);
	ftl_swim *a = make("a", "10.0.0.1:1", ka, 1);
	add_known(a, "b", "10.0.0.2:1", 1);
	int64_t now = 0;

	/* `keys install K2` at a: the datagram that carries it to b is captured. */
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_INSTALL, k2), 0);
	captured install = capture_to(a, &now, "10.0.0.2:1");
	/* Then `keys remove K2`, and a node c starts later with K1 alone and joins through a. */
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_REMOVE, k2), 0);
	ftl_keyring *kc = ftl_keyring_new("c", k1);
	ftl_swim *c = make("c", "10.0.0.3:1", kc, 1);
	const char *seed = "10.0.0.1:1";
	ftl_swim_join(c, &seed, 1);

	/* Replayed before c's first push-pull: c does not know the key version yet, so nothing applies. */
	ftl_swim_receive(c, now, install.data, install.len);
	assert_int_equal(keys_of(kc), 1);
	/* After it: the version (2) says the install (1) is old. */
	push_pull(a, c, now);
	ftl_swim_receive(c, now, install.data, install.len);
	assert_int_equal(keys_of(kc), 1);
	assert_int_equal(ftl_swim_get_stats(c)->key_ops_stale, 2);
	assert_int_equal(ftl_swim_get_stats(c)->key_ops_applied, 0);

	/* A new operation still reaches c. */
	add_known(a, "c", "10.0.0.3:1", 1);
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_INSTALL, k3), 0);
	for (int i = 0; i < 10 && keys_of(kc) == 1; i++) {
		captured next = capture_to(a, &now, "10.0.0.3:1");
		ftl_swim_receive(c, now, next.data, next.len);
	}
	assert_int_equal(keys_of(kc), 2);
	ftl_swim_receive(c, now, install.data, install.len); /* and the old one still does not */
	assert_int_equal(keys_of(kc), 2);
	uint8_t keys[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE];
	ftl_keyring_list(kc, keys, FTL_KEYRING_MAX_KEYS);
	assert_memory_equal(keys[1], k3, FTL_KEY_SIZE);
	ftl_swim_delete(a);
	ftl_swim_delete(c);
	ftl_keyring_delete(ka);
	ftl_keyring_delete(kb);
	ftl_keyring_delete(kc);
}

/* Counts s's events of one type (draining them all). */
static int count_events(ftl_swim *s, ftl_swim_event_type type)
{
	int n = 0;
	ftl_swim_event ev;
	while (ftl_swim_next_event(s, &ev))
		n += ev.type == type;
	return n;
}

/* Ticks s in 100 ms steps (at most limit_s virtual seconds) until it raises an event of type. */
static void tick_until(ftl_swim *s, int64_t *now_us, ftl_swim_event_type type, int limit_s)
{
	for (int i = 0; i < limit_s * 10; i++) {
		*now_us += 100000;
		ftl_swim_tick(s, *now_us);
		ftl_swim_output out;
		while (ftl_swim_next_output(s, &out))
			;
		if (count_events(s, type) > 0)
			return;
	}
	fail_msg("no %s event within %d s", ftl_swim_event_type_strs[type], limit_s);
}

static void test_replayed_alive_of_a_reaped_member_is_ignored(void **state)
{
	ftl_keyring *ka = ftl_keyring_new("c", k1), *kd = ftl_keyring_new("c", k1);
	ftl_swim *a = make("a", "10.0.0.1:1", ka, 1);
	ftl_swim *d = make("d", "10.0.0.4:1", kd, 1);
	add_known(a, "d", "10.0.0.4:1", 1);
	add_known(d, "a", "10.0.0.1:1", 1);
	int64_t now = 0, d_now = 0;

	/* Captured while d lived: a datagram of d's (its alive rides on it) and its push-pull frame. */
	captured alive = capture_to(d, &d_now, "10.0.0.1:1");
	uint8_t *frame;
	size_t frame_len;
	assert_int_equal(ftl_swim_push_pull_encode(d, false, &frame, &frame_len), 0);
	ftl_swim_delete(d);

	/* d is gone: a declares it dead, then reaps it. */
	count_events(a, FTL_EVENT_JOIN);
	tick_until(a, &now, FTL_EVENT_DEAD, 120);
	tick_until(a, &now, FTL_EVENT_REAP, 3600);
	assert_null(ftl_swim_find(a, "d"));

	/* The replays: no join, no entry, counted. */
	ftl_swim_receive(a, now, alive.data, alive.len);
	assert_int_equal(ftl_swim_push_pull_merge(a, now, frame, frame_len, NULL), 0);
	assert_null(ftl_swim_find(a, "d"));
	assert_int_equal(count_events(a, FTL_EVENT_JOIN), 0);
	assert_true(ftl_swim_get_stats(a)->alive_of_reaped >= 2);
	/* Nothing about d is gossiped on either; a asks d's address whether that life is there (a healed
	 * partition would ack), and with nobody there nothing more happens. */
	assert_int_equal(ftl_swim_count(a, FTL_MEMBER_ALIVE), 1);
	ftl_swim_output out;
	int asked = 0;
	while (ftl_swim_next_output(a, &out))
		asked += out.kind == FTL_OUTPUT_PACKET && strcmp(out.to_addr, "10.0.0.4:1") == 0;
	assert_int_equal(asked, 1);
	now += 10 * 1000000;
	ftl_swim_tick(a, now);
	assert_null(ftl_swim_find(a, "d"));
	assert_int_equal(ftl_swim_get_stats(a)->revivals, 0);

	/* A real restart of d (a new generation) joins. */
	ftl_keyring *kd2 = ftl_keyring_new("c", k1);
	ftl_swim *d2 = make("d", "10.0.0.4:1", kd2, 2);
	int64_t d2_now = now;
	add_known(d2, "a", "10.0.0.1:1", 1);
	captured restart = capture_to(d2, &d2_now, "10.0.0.1:1");
	ftl_swim_receive(a, now, restart.data, restart.len);
	assert_non_null(ftl_swim_find(a, "d"));
	assert_int_equal(count_events(a, FTL_EVENT_JOIN), 1);
	free(frame);
	ftl_swim_delete(a);
	ftl_swim_delete(d2);
	ftl_keyring_delete(ka);
	ftl_keyring_delete(kd);
	ftl_keyring_delete(kd2);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replayed_key_install_does_not_restore_a_removed_key),
		cmocka_unit_test(test_replayed_alive_of_a_reaped_member_is_ignored),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
