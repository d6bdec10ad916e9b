/* The fixed cluster and key that fuzz_keyring_open opens with and the seed generator seals with. */
#ifndef FTL_TESTS_FUZZ_FIXTURE_H
#define FTL_TESTS_FUZZ_FIXTURE_H

#include "membership/keyring.h"

#define FUZZ_CLUSTER "ftl-fuzz"

/* Key byte i is FUZZ_KEY_BASE + i. */
#define FUZZ_KEY_BASE 0x40

static inline void fuzz_fixture_key(uint8_t key[FTL_KEY_SIZE])
{
	for (int i = 0; i < FTL_KEY_SIZE; i++)
		key[i] = (uint8_t)(FUZZ_KEY_BASE + i);
}

#endif
