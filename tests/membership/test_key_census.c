/* The key census: key fingerprints (their encoding, and that they are not the key), the count of who holds
 * which key over a member table, fingerprints that follow a keyring and travel by gossip and push-pull, and
 * `keys use` / `keys remove` refused while the census says they would cut a member off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/swim.h"

static const uint8_t k1[FTL_KEY_SIZE] = {1};
static const uint8_t k2[FTL_KEY_SIZE] = {2};

static void fp_of(const uint8_t *key, uint8_t fp[FTL_KEY_FP_SIZE]) { ftl_key_fingerprint(key, fp); }

/* ---- fingerprints ---- */

static void test_fingerprint_is_keyed_blake2b_of_the_fixed_context_cut_to_8_bytes(void **state)
{
	/* Expected values from an independent implementation (Python's hashlib):
	 * blake2b(b"ftl cluster key fingerprint v1", key=K, digest_size=16).digest()[:8] */
	uint8_t counting[FTL_KEY_SIZE], ones[FTL_KEY_SIZE], fp[FTL_KEY_FP_SIZE];
	char hex[FTL_KEY_FP_HEX_SIZE];
	for (int i = 0; i < FTL_KEY_SIZE; i++)
		counting[i] = (uint8_t)i;
	memset(ones, 0xff, sizeof ones);
	fp_of(counting, fp);
	ftl_key_fp_to_hex(fp, hex);
	assert_string_equal(hex, "77d3b84c9cfe7cb2");
	fp_of(ones, fp);
	ftl_key_fp_to_hex(fp, hex);
	assert_string_equal(hex, "073d69b0cf7b4bdb");
}

static void test_fingerprint_does_not_carry_the_key(void **state)
{
	/* Not a proof (that is the PRF property of keyed BLAKE2b), but the mistakes it would catch: the key or
	 * a slice of it sent as its fingerprint, or keys that differ in one byte sharing a fingerprint. */
	uint8_t key[FTL_KEY_SIZE], fp[FTL_KEY_FP_SIZE], seen[FTL_KEY_SIZE][FTL_KEY_FP_SIZE];
	for (int i = 0; i < FTL_KEY_SIZE; i++)
		key[i] = (uint8_t)(0x40 + i);
	fp_of(key, fp);
	for (int at = 0; at + FTL_KEY_FP_SIZE <= FTL_KEY_SIZE; at++)
		assert_memory_not_equal(fp, key + at, FTL_KEY_FP_SIZE);
	for (int i = 0; i < FTL_KEY_SIZE; i++) {
		key[i] ^= 1;
		fp_of(key, seen[i]);
		key[i] ^= 1;
		assert_memory_not_equal(seen[i], fp, FTL_KEY_FP_SIZE);
		for (int j = 0; j < i; j++)
			assert_memory_not_equal(seen[i], seen[j], FTL_KEY_FP_SIZE);
	}
}

static void test_keyring_fingerprints_list_the_primary_first_and_count_changes(void **state)
{
	ftl_keyring *kr = ftl_keyring_new("c", k1);
	ftl_key_fps fps;
	uint8_t f1[FTL_KEY_FP_SIZE], f2[FTL_KEY_FP_SIZE];
	fp_of(k1, f1);
	fp_of(k2, f2);
	uint64_t changes = ftl_keyring_changes(kr);
	assert_int_equal(ftl_keyring_install(kr, k2), 0);
	assert_int_equal(ftl_keyring_install(kr, k2), 0); /* already there: no change */
	assert_int_equal(ftl_keyring_changes(kr), changes + 1);
	ftl_keyring_fingerprints(kr, &fps);
	assert_int_equal(fps.count, 2);
	assert_int_equal(ftl_key_fps_find(&fps, f1), 0);
	assert_int_equal(ftl_key_fps_find(&fps, f2), 1);
	assert_int_equal(ftl_keyring_use(kr, k2), 0);
	assert_int_equal(ftl_keyring_remove(kr, k1), 0);
	assert_int_equal(ftl_keyring_changes(kr), changes + 3);
	ftl_keyring_fingerprints(kr, &fps);
	assert_int_equal(fps.count, 1);
	assert_int_equal(ftl_key_fps_find(&fps, f2), 0);
	assert_int_equal(ftl_key_fps_find(&fps, f1), -1);
	assert_int_equal(ftl_key_fps_find(NULL, f1), -1);
	ftl_keyring_delete(kr);
	ftl_keyring *insecure = ftl_keyring_new_insecure("c");
	ftl_keyring_fingerprints(insecure, &fps);
	assert_int_equal(fps.count, 0);
	ftl_keyring_delete(insecure);
}

/* ---- the census over a member table ---- */

static ftl_key_fps fps_of(int n, const uint8_t first)
{
	ftl_key_fps fps = {.count = (uint8_t)n};
	for (int i = 0; i < n; i++)
		memset(fps.fp[i], first + i, FTL_KEY_FP_SIZE);
	return fps;
}

static ftl_member *add(ftl_members *t, ftl_rng *rng, const char *name, ftl_member_state state,
		       const ftl_key_fps *fps)
{
	ftl_member *m = ftl_members_add(t, rng, name, "10.0.0.1:1", state, 0);
	assert_non_null(m);
	if (fps)
		assert_int_equal(ftl_members_set_key_fps(m, fps), 0);
	return m;
}

static void test_census_counts_live_members_that_hold_each_key(void **state)
{
	ftl_members t;
	ftl_rng rng;
	ftl_rng_seed(&rng, 1);
	ftl_members_init(&t);
	ftl_key_fps ab = fps_of(2, 'a'), b = fps_of(1, 'b'), ba = ab;
	memcpy(ba.fp[0], ab.fp[1], FTL_KEY_FP_SIZE); /* b primary, then a */
	memcpy(ba.fp[1], ab.fp[0], FTL_KEY_FP_SIZE);
	ftl_key_fps twice = fps_of(2, 'a');
	memcpy(twice.fp[1], twice.fp[0], FTL_KEY_FP_SIZE);
	add(&t, &rng, "self", FTL_MEMBER_ALIVE, &ab);
	add(&t, &rng, "w1", FTL_MEMBER_ALIVE, &ba);
	add(&t, &rng, "w2", FTL_MEMBER_SUSPECT, &b);      /* suspect is live */
	add(&t, &rng, "w3", FTL_MEMBER_ALIVE, NULL);      /* an older agent: reports nothing */
	add(&t, &rng, "w4", FTL_MEMBER_ALIVE, &twice);    /* a listed twice counts once */
	add(&t, &rng, "gone", FTL_MEMBER_DEAD, &ab);      /* the dead and the left are not counted */
	add(&t, &rng, "left", FTL_MEMBER_LEFT, &b);

	ftl_key_census c;
	ftl_key_census_take(&c, &t, &ab);
	assert_int_equal(c.members, 5);
	assert_int_equal(c.unreported, 1);
	assert_int_equal(c.n_rows, 2);
	const ftl_key_census_row *ra = ftl_key_census_find(&c, ab.fp[0]), *rb = ftl_key_census_find(&c, ab.fp[1]);
	assert_non_null(ra);
	assert_non_null(rb);
	assert_int_equal(ra->local, 0);
	assert_int_equal(ra->holders, 3);   /* self, w1, w4 */
	assert_int_equal(ra->primaries, 2); /* self, w4 */
	assert_int_equal(rb->local, 1);
	assert_int_equal(rb->holders, 3);   /* self, w1, w2 */
	assert_int_equal(rb->primaries, 2); /* w1, w2 */

	const char *names[8];
	assert_int_equal(ftl_key_census_lacking(&t, ab.fp[0], names, 8), 2);
	assert_string_equal(names[0], "w2");
	assert_string_equal(names[1], "w3");
	assert_int_equal(ftl_key_census_lacking(&t, ab.fp[0], names, 1), 2); /* the count beyond the names */
	ftl_members_free(&t);
}

static void test_census_keeps_our_keys_and_says_when_it_cannot_count_every_key(void **state)
{
	ftl_members t;
	ftl_rng rng;
	ftl_rng_seed(&rng, 1);
	ftl_members_init(&t);
	ftl_key_fps ours = fps_of(1, 'z');
	add(&t, &rng, "self", FTL_MEMBER_ALIVE, &ours);
	for (int i = 0; i < 5; i++) { /* 40 distinct keys held elsewhere: 31 shown beside ours */
		char name[8];
		snprintf(name, sizeof name, "w%d", i);
		ftl_key_fps other = fps_of(FTL_KEY_FPS_MAX, (uint8_t)(i * FTL_KEY_FPS_MAX));
		add(&t, &rng, name, FTL_MEMBER_ALIVE, &other);
	}
	ftl_key_census c;
	ftl_key_census_take(&c, &t, &ours);
	assert_int_equal(c.n_rows, FTL_KEY_CENSUS_ROWS);
	assert_true(c.is_truncated);
	assert_int_equal(c.rows[0].local, 0);
	assert_int_equal(c.rows[0].holders, 1);
	assert_int_equal(c.rows[1].local, -1);
	ftl_members_free(&t);
}

/* ---- in the membership core ---- */

static ftl_swim *make(const char *name, const char *addr, ftl_keyring *kr)
{
	ftl_swim_options o = {.name = name, .generation = 1, .addr = addr, .keyring = kr, .seed = 7};
	ftl_swim_config_profile(&o.config, FTL_PROFILE_TRAIN);
	ftl_swim *s = ftl_swim_new(&o, 0);
	assert_non_null(s);
	return s;
}

/* Delivers every datagram a and b send each other for `us` of virtual time. */
static void exchange(ftl_swim *a, ftl_swim *b, int64_t *now_us, int64_t us)
{
	ftl_swim *nodes[2] = {a, b};
	for (int64_t end = *now_us + us; *now_us < end; *now_us += 10000)
		for (int i = 0; i < 2; i++) {
			ftl_swim_tick(nodes[i], *now_us);
			ftl_swim_output out;
			while (ftl_swim_next_output(nodes[i], &out))
				if (out.kind == FTL_OUTPUT_PACKET)
					ftl_swim_receive(nodes[1 - i], *now_us, out.data, out.len);
		}
}

static void add_known(ftl_swim *s, const char *name, const char *addr, const ftl_key_fps *fps)
{
	ftl_msg_alive a = {.generation = 1, .incarnation = 0};
	strcpy(a.name, name);
	strcpy(a.addr, addr);
	if (fps)
		a.key_fps = *fps;
	assert_int_equal(ftl_swim_add_known(s, 0, &a), 0);
}

static const ftl_key_census_row *row_at(ftl_swim *s, const uint8_t *key, ftl_key_census *c)
{
	uint8_t fp[FTL_KEY_FP_SIZE];
	fp_of(key, fp);
	ftl_swim_key_census(s, c);
	return ftl_key_census_find(c, fp);
}

static void test_fingerprints_follow_the_keyring_and_travel_by_gossip_and_push_pull(void **state)
{
	ftl_keyring *ka = ftl_keyring_new("c", k1), *kb = ftl_keyring_new("c", k1),
		    *kc = ftl_keyring_new("c", k1);
	ftl_swim *a = make("a", "10.0.0.1:1", ka), *b = make("b", "10.0.0.2:1", kb);
	int64_t now = 0;
	add_known(a, "b", "10.0.0.2:1", NULL);
	add_known(b, "a", "10.0.0.1:1", NULL);
	exchange(a, b, &now, 2000000); /* each hears the other's first alive, fingerprints and all */
	ftl_key_census c;
	assert_int_equal(row_at(b, k1, &c)->holders, 2);
	assert_int_equal(c.unreported, 0);

	/* A key installed straight into a's keyring (no key op): a announces it at its next tick. */
	uint64_t incarnation = ftl_swim_incarnation(a);
	assert_int_equal(ftl_keyring_install(ka, k2), 0);
	exchange(a, b, &now, 2000000);
	assert_int_equal(ftl_swim_incarnation(a), incarnation + 1);
	const ftl_key_census_row *r = row_at(b, k2, &c);
	assert_non_null(r);
	assert_int_equal(r->local, -1); /* b does not hold it ... */
	assert_int_equal(r->holders, 1); /* ... a does */
	assert_int_equal(c.members, 2);
	assert_int_equal(row_at(a, k2, &c)->holders, 1);

	/* `keys install` through the core: b applies it, announces it, and both count 2/2. */
	now += 1000000;
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_INSTALL, k2), 0);
	exchange(a, b, &now, 3000000);
	assert_int_equal(row_at(a, k2, &c)->holders, 2);
	assert_int_equal(row_at(b, k2, &c)->holders, 2);
	assert_int_equal(row_at(b, k2, &c)->local, 1);

	/* A node that learns the cluster by push-pull learns the fingerprints with it. */
	ftl_swim *fresh = make("c", "10.0.0.3:1", kc);
	uint8_t *frame;
	size_t len;
	assert_int_equal(ftl_swim_push_pull_encode(a, false, &frame, &len), 0);
	assert_int_equal(ftl_swim_push_pull_merge(fresh, now, frame, len, NULL), 0);
	free(frame);
	assert_int_equal(row_at(fresh, k2, &c)->holders, 2);
	assert_int_equal(c.members, 3);
	ftl_swim_delete(fresh);
	ftl_swim_delete(a);
	ftl_swim_delete(b);
	ftl_keyring_delete(ka);
	ftl_keyring_delete(kb);
	ftl_keyring_delete(kc);
}

/* Hands s one message in a datagram, as the peer channel passes it on once opened. */
static void deliver(ftl_swim *s, int64_t now, const ftl_msg *m)
{
	uint8_t plain[FTL_UDP_PACKET_MAX];
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, plain, sizeof plain);
	assert_int_equal(ftl_wire_packet_add(&p, m), 0);
	ftl_swim_receive(s, now, plain, ftl_wire_packet_finish(&p));
}

/* What a member announces: an alive with a raised incarnation and the fingerprints of keys, primary first. */
static void hear_alive(ftl_swim *s, int64_t now, const char *name, uint64_t incarnation,
		       const uint8_t *primary, const uint8_t *other)
{
	ftl_msg m = {.type = FTL_MSG_ALIVE};
	strcpy(m.u.alive.name, name);
	snprintf(m.u.alive.addr, sizeof m.u.alive.addr, "10.0.0.9:%d", name[1]);
	m.u.alive.generation = 1;
	m.u.alive.incarnation = incarnation;
	fp_of(primary, m.u.alive.key_fps.fp[m.u.alive.key_fps.count++]);
	if (other)
		fp_of(other, m.u.alive.key_fps.fp[m.u.alive.key_fps.count++]);
	deliver(s, now, &m);
}

static void assert_primary(ftl_keyring *kr, const uint8_t *key)
{
	uint8_t keys[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE];
	assert_true(ftl_keyring_list(kr, keys, FTL_KEYRING_MAX_KEYS) >= 1);
	assert_memory_equal(keys[0], key, FTL_KEY_SIZE);
}

static void test_keys_use_and_remove_are_refused_while_they_would_cut_a_member_off(void **state)
{
	ftl_keyring *kr = ftl_keyring_new("c", k1);
	ftl_swim *a = make("a", "10.0.0.1:1", kr);
	ftl_key_fps only_k1 = {.count = 1};
	fp_of(k1, only_k1.fp[0]);
	add_known(a, "w1", "10.0.0.9:49", &only_k1);
	add_known(a, "w2", "10.0.0.9:50", NULL); /* an agent from before fingerprints */
	int64_t now = 1000;
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_INSTALL, k2), 0);

	/* Held here only: refused, naming who lacks it, and nothing changes. */
	uint64_t applied = ftl_swim_get_stats(a)->key_ops_applied;
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_USE, k2), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "held by 1 of 3 live members (lacking: w1, w2)"));
	assert_non_null(strstr(ftl_diag_message(), "3/3"));
	assert_primary(kr, k1);
	assert_int_equal(ftl_swim_get_stats(a)->key_ops_applied, applied);

	/* w1 installs it, w2 still reports nothing: still refused. */
	hear_alive(a, now, "w1", 1, k1, k2);
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_USE, k2), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "held by 2 of 3 live members (lacking: w2)"));
	/* Everyone holds it: accepted. */
	hear_alive(a, now, "w2", 1, k1, k2);
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_USE, k2), 0);
	assert_primary(kr, k2);

	/* Removing k1 while w1 and w2 still seal with it is refused; once they switched, it is not. */
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_REMOVE, k1), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "still the primary key of 2 of 3 live members"));
	hear_alive(a, now, "w1", 2, k2, k1);
	hear_alive(a, now, "w2", 2, k2, k1);
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_REMOVE, k1), 0);

	/* A dead member lacks nothing: w2 dies without k1's successor, and a new key can be used. */
	const uint8_t k3[FTL_KEY_SIZE] = {3};
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_INSTALL, k3), 0);
	hear_alive(a, now, "w1", 3, k2, k3);
	ftl_msg dead = {.type = FTL_MSG_DEAD};
	strcpy(dead.u.rumor.name, "w2");
	strcpy(dead.u.rumor.from, "w1");
	dead.u.rumor.generation = 1;
	dead.u.rumor.incarnation = 2;
	deliver(a, now, &dead);
	assert_int_equal(ftl_swim_find(a, "w2")->state, FTL_MEMBER_DEAD);
	assert_int_equal(ftl_swim_key_op(a, now, FTL_KEY_USE, k3), 0);
	ftl_swim_delete(a);
	ftl_keyring_delete(kr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fingerprint_is_keyed_blake2b_of_the_fixed_context_cut_to_8_bytes),
		cmocka_unit_test(test_fingerprint_does_not_carry_the_key),
		cmocka_unit_test(test_keyring_fingerprints_list_the_primary_first_and_count_changes),
		cmocka_unit_test(test_census_counts_live_members_that_hold_each_key),
		cmocka_unit_test(test_census_keeps_our_keys_and_says_when_it_cannot_count_every_key),
		cmocka_unit_test(test_fingerprints_follow_the_keyring_and_travel_by_gossip_and_push_pull),
		cmocka_unit_test(test_keys_use_and_remove_are_refused_while_they_would_cut_a_member_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
