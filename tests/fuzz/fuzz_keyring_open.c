/* Fuzz target: ftl_keyring_open, then the packet decoder on whatever opens.
 *
 * Two rings see every input: a secure one holding the fixture key (sealed seeds open, mutations of them
 * exercise the mode, length and MAC checks) and an insecure one (plaintext seeds open, so mutations reach
 * the decoder). Properties: each open moves exactly one counter; what opens re-seals and re-opens to the
 * same plaintext; what opens and decodes round-trips (fuzz_check_packet). */
#include <string.h>

#include "fuzz_checks.h"
#include "fuzz_fixture.h"
#include "membership/keyring.h"

#define FUZZ_MAX_INPUT 65536

static uint64_t counted(const ftl_keyring *kr)
{
	const ftl_keyring_stats *s = ftl_keyring_get_stats(kr);
	uint64_t n = s->opened;
	for (int d = 0; d < FTL_KEYRING_DROP_MAX; d++)
		n += s->dropped[d];
	return n;
}

static void check_ring(ftl_keyring *kr, const uint8_t *data, size_t size)
{
	static uint8_t pt[FUZZ_MAX_INPUT], resealed[FUZZ_MAX_INPUT + FTL_KEYRING_OVERHEAD], again[FUZZ_MAX_INPUT];
	uint64_t before = counted(kr);
	size_t pt_len, resealed_len, again_len;
	ftl_keyring_drop why = FTL_KEYRING_DROP_MAX;

	if (ftl_keyring_open(kr, data, size, pt, sizeof pt, &pt_len, &why) != 0) {
		FUZZ_REQUIRE(why < FTL_KEYRING_DROP_MAX);
		FUZZ_REQUIRE(counted(kr) == before + 1);
		return;
	}
	FUZZ_REQUIRE(counted(kr) == before + 1);
	FUZZ_REQUIRE(pt_len <= size);
	FUZZ_REQUIRE(ftl_keyring_seal(kr, pt, pt_len, resealed, sizeof resealed, &resealed_len) == 0);
	FUZZ_REQUIRE(ftl_keyring_open(kr, resealed, resealed_len, again, sizeof again, &again_len, NULL) == 0);
	FUZZ_REQUIRE(again_len == pt_len && memcmp(again, pt, pt_len) == 0);
	fuzz_check_packet(pt, pt_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ftl_keyring *secure, *insecure;

	if (secure == NULL) {
		uint8_t key[FTL_KEY_SIZE];
		fuzz_fixture_key(key);
		secure = ftl_keyring_new(FUZZ_CLUSTER, key);
		insecure = ftl_keyring_new_insecure(FUZZ_CLUSTER);
		FUZZ_REQUIRE(secure != NULL && insecure != NULL);
	}
	if (size > FUZZ_MAX_INPUT)
		return 0;
	check_ring(secure, data, size);
	check_ring(insecure, data, size);
	return 0;
}
