/* Key fingerprints (key_fingerprint.h): keyed BLAKE2b of a fixed context, truncated. */
#include "key_fingerprint.h"

#include <string.h>

#include <sodium.h>

#include "keyring.h"

_Static_assert(FTL_KEYRING_MAX_KEYS <= FTL_KEY_FPS_MAX, "a member can advertise its whole keyring");
_Static_assert(FTL_KEY_SIZE >= crypto_generichash_KEYBYTES_MIN && FTL_KEY_SIZE <= crypto_generichash_KEYBYTES_MAX,
	       "a cluster key is a valid BLAKE2b key");

/* Never change it: the fingerprints of mixed versions must agree. */
static const char context[] = "ftl cluster key fingerprint v1";

void ftl_key_fingerprint(const uint8_t *key, uint8_t fp[FTL_KEY_FP_SIZE])
{
	/* libsodium's shortest BLAKE2b output is 16 bytes; the output length is an input of BLAKE2b, so the
	 * first 8 of 16 are as good as any 8. */
	uint8_t full[crypto_generichash_BYTES_MIN];
	crypto_generichash(full, sizeof full, (const uint8_t *)context, sizeof context - 1, key, FTL_KEY_SIZE);
	memcpy(fp, full, FTL_KEY_FP_SIZE);
}

int ftl_key_fps_find(const ftl_key_fps *fps, const uint8_t fp[FTL_KEY_FP_SIZE])
{
	for (int i = 0; fps && i < fps->count && i < FTL_KEY_FPS_MAX; i++)
		if (memcmp(fps->fp[i], fp, FTL_KEY_FP_SIZE) == 0)
			return i;
	return -1;
}

void ftl_key_fp_to_hex(const uint8_t fp[FTL_KEY_FP_SIZE], char out[FTL_KEY_FP_HEX_SIZE])
{
	sodium_bin2hex(out, FTL_KEY_FP_HEX_SIZE, fp, FTL_KEY_FP_SIZE);
}
