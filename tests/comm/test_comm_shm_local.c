/* test_comm_shm_local: the rule that decides whether a communicator uses shared memory, as a pure function
 * of the identities the ranks exchange: one kernel (boot id) and one network namespace, and nobody said off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "comm/comm_shm.h"

#define N 4

static void fill(struct ftl_comm_shm_identity ids[N])
{
	for (int i = 0; i < N; i++) {
		memset(&ids[i], 0, sizeof(ids[i]));
		ids[i].magic = 0x46544c49u;
		ids[i].is_wanted = 1;
		ids[i].netns_ino = 4026531840u;
		ids[i].netns_dev = 4;
		memcpy(ids[i].boot_id, "0b9a6f0e-4d1e-4a53-9d7c-3c1f2a0e9b11\n", 37);
	}
}

static void test_same_kernel_and_namespace_is_local(void **state)
{
	(void)state;
	struct ftl_comm_shm_identity ids[N];
	fill(ids);
	assert_true(ftl_comm_shm_is_all_local(ids, N));
	assert_true(ftl_comm_shm_is_all_local(ids, 1));
}

static void test_another_network_namespace_is_not_local(void **state)
{
	(void)state;
	struct ftl_comm_shm_identity ids[N];
	fill(ids);
	ids[3].netns_ino++; /* a pod on the same machine */
	assert_false(ftl_comm_shm_is_all_local(ids, N));
	fill(ids);
	ids[1].netns_dev++;
	assert_false(ftl_comm_shm_is_all_local(ids, N));
}

static void test_another_kernel_is_not_local_even_with_equal_namespace_inodes(void **state)
{
	(void)state;
	struct ftl_comm_shm_identity ids[N];
	fill(ids);
	ids[2].boot_id[0] = '1'; /* the root namespace has the same inode on every host */
	assert_false(ftl_comm_shm_is_all_local(ids, N));
}

static void test_one_rank_saying_off_keeps_everyone_on_tcp(void **state)
{
	(void)state;
	struct ftl_comm_shm_identity ids[N];
	fill(ids);
	ids[0].is_wanted = 0;
	assert_false(ftl_comm_shm_is_all_local(ids, N));
	fill(ids);
	ids[3].magic = 0;
	assert_false(ftl_comm_shm_is_all_local(ids, N));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_kernel_and_namespace_is_local),
		cmocka_unit_test(test_another_network_namespace_is_not_local),
		cmocka_unit_test(test_another_kernel_is_not_local_even_with_equal_namespace_inodes),
		cmocka_unit_test(test_one_rank_saying_off_keeps_everyone_on_tcp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
