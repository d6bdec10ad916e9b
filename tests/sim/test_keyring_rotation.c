/* Key rotation on the simulator: install -> use -> remove across the cluster, each step rolled out node
 * by node, loses no packet; removing the old key before everyone uses the new one does (the control). */
#include "sim_test.h"

static const uint8_t new_key[FTL_KEY_SIZE] = {7, 7, 7, 7, 1, 2, 3, 4};

static uint64_t keyring_drops(ftl_sim *sim, int n)
{
	uint64_t d = 0;
	for (int i = 0; i < n; i++)
		d += ftl_swim_get_stats(ftl_sim_node(sim, i))->dropped[FTL_DROP_KEYRING];
	return d;
}

typedef ftl_err (*key_step)(ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE]);

/* Applies a step node by node, 50 ms apart, as a rolling `ftlctl keys ...` would. */
static void roll_out(ftl_sim *sim, int n, key_step step, const uint8_t key[FTL_KEY_SIZE])
{
	for (int i = 0; i < n; i++) {
		assert_int_equal(step(ftl_swim_keyring(ftl_sim_node(sim, i)), key), 0);
		ftl_sim_run_for(sim, 50 * MS);
	}
	ftl_sim_run_for(sim, 1 * SEC);
}

static void old_key(ftl_sim *sim, uint8_t key[FTL_KEY_SIZE])
{
	uint8_t keys[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE];
	assert_true(ftl_keyring_list(ftl_swim_keyring(ftl_sim_node(sim, 0)), keys, FTL_KEYRING_MAX_KEYS) >= 1);
	memcpy(key, keys[0], FTL_KEY_SIZE);
}

static void test_rotation_install_use_remove_loses_no_packet(void **state)
{
	const int n = 16;
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, n, FTL_PROFILE_TRAIN, &w);
	uint8_t old[FTL_KEY_SIZE];
	old_key(sim, old);
	ftl_sim_run_for(sim, 1 * SEC);
	roll_out(sim, n, ftl_keyring_install, new_key);
	roll_out(sim, n, ftl_keyring_use, new_key);
	roll_out(sim, n, ftl_keyring_remove, old);
	ftl_sim_run_for(sim, 5 * SEC);
	printf("rotation across %d nodes: %llu packets dropped by the keyring\n", n,
	       (unsigned long long)keyring_drops(sim, n));
	assert_int_equal(keyring_drops(sim, n), 0);
	assert_int_equal(w.false_deaths, 0);
	assert_int_equal(sim_all_alive(sim, 0), 1);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_removing_old_key_too_early_drops_packets(void **state)
{
	const int n = 8;
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = sim_start(&o, n, FTL_PROFILE_TRAIN, &w);
	for (int i = 0; i < n; i++)
		w.may_die[i] = true;
	uint8_t old[FTL_KEY_SIZE];
	old_key(sim, old);
	ftl_keyring *kr = ftl_swim_keyring(ftl_sim_node(sim, 0));
	assert_int_equal(ftl_keyring_install(kr, new_key), 0);
	assert_int_equal(ftl_keyring_use(kr, new_key), 0);
	assert_int_equal(ftl_keyring_remove(kr, old), 0);
	ftl_sim_run_for(sim, 2 * SEC);
	assert_true(keyring_drops(sim, n) > 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotation_install_use_remove_loses_no_packet),
		cmocka_unit_test(test_removing_old_key_too_early_drops_packets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
