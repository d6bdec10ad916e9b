/* Fuzz target: ftl_meta_unpack, which reads every member's gossiped metadata (node/node_meta.h: the data
 * address, the replica, the user's bytes), the one decoder of a member's own words about itself that is not
 * MessagePack. Beyond "does not crash": what it reads is within bounds and consistent (a replica has a name
 * and an index below its size; the user part lies inside the input), and packing what it read and reading
 * that again gives the same member and user bytes. */
#include <string.h>

#include "fuzz_checks.h"
#include "node/node_meta.h"

static bool same_member(const ftl_rdv_member *a, const ftl_rdv_member *b)
{
	return !strcmp(a->data_addr, b->data_addr) && !strcmp(a->replica, b->replica) &&
	       a->replica_index == b->replica_index && a->replica_size == b->replica_size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t packed[FTL_META_MAX];
	if (size > FTL_META_MAX) /* membership refuses longer metadata before it gets here */
		return 0;
	ftl_rdv_member m, again;
	const uint8_t *user, *user_again;
	size_t user_len, user_again_len;
	memset(&m, 0x5a, sizeof m);
	ftl_meta_unpack(data, size, &m, &user, &user_len);
	FUZZ_REQUIRE(memchr(m.data_addr, '\0', sizeof m.data_addr) != NULL);
	FUZZ_REQUIRE(user >= data && user_len <= size && user + user_len == data + size);
	if (m.replica_size > 0) {
		FUZZ_REQUIRE(m.data_addr[0] != '\0' && m.replica[0] != '\0' && m.replica_index < m.replica_size);
		FUZZ_REQUIRE(memchr(m.replica, '\0', sizeof m.replica) != NULL);
	} else {
		FUZZ_REQUIRE(m.replica[0] == '\0' && m.replica_index == 0);
	}
	if (m.data_addr[0] == '\0')
		return 0; /* not a worker: nothing of it travels as such */
	size_t len = ftl_meta_pack(&m, user, user_len, packed, sizeof packed);
	if (len == 0)
		return 0; /* a shorter spelling never grows, but a user part with separators may not fit again */
	ftl_meta_unpack(packed, len, &again, &user_again, &user_again_len);
	FUZZ_REQUIRE(same_member(&m, &again));
	FUZZ_REQUIRE(user_again_len == user_len && memcmp(user_again, user, user_len) == 0);
	return 0;
}
