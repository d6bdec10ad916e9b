/* test_comm_shm_local: the rule that decides whether a communicator uses shared memory, as a pure function
 * of the identities the ranks exchange: one kernel (boot id) and one network namespace, and nobody said off;
 * and when not, the reason every rank gives (which rank, and how it differs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "comm/comm_shm.h"

#define N 4

static char why[FTL_COMM_SHM_WHY_MAX];

static bool is_all_local(const struct ftl_comm_shm_identity *ids, int n)
{
	why[0] = '\0';
	return ftl_comm_shm_is_all_local(ids, n, why, sizeof(why));
}

static void fill(struct ftl_comm_shm_identity ids[N])
{
	for (int i = 0; i < N; i++) {
		memset(&ids[i], 0, sizeof(ids[i]));
		ids[i].magic = 0x46544c49u;
		ids[i].refusal = FTL_COMM_SHM_WANTED;
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
	assert_true(is_all_local(ids, N));
	assert_true(is_all_local(ids, 1));
}

static void test_another_network_namespace_is_not_local(void **state)
{
	(void)state;
	struct ftl_comm_shm_identity ids[N];
	fill(ids);
	ids[3].netns_ino++; /* a pod on the same machine */
	assert_false(is_all_local(ids, N));
	assert_string_equal(why, "rank 3 is in another network namespace than rank 0");
	fill(ids);
	ids[1].netns_dev++;
	assert_false(is_all_local(ids, N));
	assert_string_equal(why, "rank 1 is in another network namespace than rank 0");
}

static void test_another_kernel_is_not_local_even_with_equal_namespace_inodes(void **state)
{
	(void)state;
	struct ftl_comm_shm_identity ids[N];
	fill(ids);
	ids[2].boot_id[0] = '1'; /* the root namespace has the same inode on every host */
	assert_false(is_all_local(ids, N));
	assert_string_equal(why, "rank 2 is on another host than rank 0");
}

static void test_one_rank_saying_off_keeps_everyone_on_tcp(void **state)
{
	(void)state;
	struct ftl_comm_shm_identity ids[N];
	fill(ids);
	ids[0].refusal = FTL_COMM_SHM_REFUSED_OFF;
	assert_false(is_all_local(ids, N));
	assert_string_equal(why, "rank 0 has FTL_COMM_SHM off");
	fill(ids);
	ids[2].refusal = FTL_COMM_SHM_REFUSED_NO_ID;
	assert_false(is_all_local(ids, N));
	assert_string_equal(why, "rank 2 cannot read its host identity (boot id, network namespace)");
	fill(ids);
	ids[3].magic = 0;
	assert_false(is_all_local(ids, N));
	assert_string_equal(why, "rank 3 sent no identity");
	fill(ids);
	ids[1].refusal = FTL_COMM_SHM_REFUSAL_MAX; /* garbage */
	assert_false(is_all_local(ids, N));
	assert_string_equal(why, "rank 1 sent no identity");
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
