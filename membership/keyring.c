/* The keyring: AEAD sealing of every datagram and frame (libsodium XChaCha20-Poly1305), key rotation,
 * and a count of every packet dropped and why.
 *
 * XChaCha20's 24-byte nonce is large enough to draw at random for every packet with no counter to keep
 * in sync across restarts. Keys live in the ring only; they are wiped with sodium_memzero when removed
 * and when the ring is deleted. Key comparisons use sodium_memcmp (constant time). Layouts and modes are
 * described in keyring.h. */
#include "keyring.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#define MODE_INSECURE 0x00
#define MODE_SEALED 0x01
#define NONCE_SIZE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_SIZE crypto_aead_xchacha20poly1305_ietf_ABYTES

_Static_assert(FTL_KEYRING_OVERHEAD == 1 + NONCE_SIZE + TAG_SIZE, "keyring.h overhead matches libsodium");
_Static_assert(FTL_KEY_SIZE == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "key size matches libsodium");

const char *const ftl_keyring_drop_strs[FTL_KEYRING_DROP_MAX] = {"truncated", "bad_mode", "bad_mac",
								 "too_long"};

struct ftl_keyring {
	char cluster[FTL_CLUSTER_MAX]; /* the additional data of every packet */
	size_t cluster_len;
	bool is_insecure;
	size_t key_count;                             /* 1..FTL_KEYRING_MAX_KEYS when secure, else 0 */
	uint8_t keys[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE]; /* keys[0] is the primary */
	uint64_t changes;                             /* successful installs, uses and removes */
	ftl_keyring_stats stats;
};

static ftl_keyring *keyring_alloc(const char *cluster)
{
	ftl_keyring *kr;
	size_t len;

	if (sodium_init() < 0) {
		ftl_diag_set(FTL_ERR_SYSTEM, "sodium_init failed");
		return NULL;
	}
	len = cluster == NULL ? 0 : strnlen(cluster, FTL_CLUSTER_MAX);
	if (len == 0) {
		ftl_diag_set(FTL_ERR_INVALID, "cluster name is empty");
		return NULL;
	}
	if (len == FTL_CLUSTER_MAX) {
		ftl_diag_set(FTL_ERR_INVALID, "cluster name too long");
		return NULL;
	}
	kr = calloc(1, sizeof *kr);
	if (kr == NULL) {
		ftl_diag_set(FTL_ERR_SYSTEM, "out of memory");
		return NULL;
	}
	memcpy(kr->cluster, cluster, len);
	kr->cluster_len = len;
	return kr;
}

ftl_keyring *ftl_keyring_new(const char *cluster, const uint8_t key[FTL_KEY_SIZE])
{
	ftl_keyring *kr = keyring_alloc(cluster);
	if (kr == NULL)
		return NULL;
	memcpy(kr->keys[0], key, FTL_KEY_SIZE);
	kr->key_count = 1;
	return kr;
}

ftl_keyring *ftl_keyring_new_insecure(const char *cluster)
{
	ftl_keyring *kr = keyring_alloc(cluster);
	if (kr != NULL)
		kr->is_insecure = true;
	return kr;
}

void ftl_keyring_delete(ftl_keyring *kr)
{
	if (kr == NULL)
		return;
	sodium_memzero(kr->keys, sizeof kr->keys);
	free(kr);
}

bool ftl_keyring_is_insecure(const ftl_keyring *kr)
{
	return kr->is_insecure;
}

/* Index of key in the ring, or -1 when absent (a lookup). Looks at every slot so the time does not depend
 * on where it is. */
static int find_key(const ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE])
{
	int found = -1;
	for (size_t i = 0; i < kr->key_count; i++)
		if (sodium_memcmp(kr->keys[i], key, FTL_KEY_SIZE) == 0)
			found = (int)i;
	return found;
}

ftl_err ftl_keyring_install(ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE])
{
	if (kr->is_insecure)
		return ftl_diag_set(FTL_ERR_INVALID, "the keyring is insecure (plaintext mode): it holds no keys");
	if (find_key(kr, key) >= 0)
		return FTL_OK;
	if (kr->key_count == FTL_KEYRING_MAX_KEYS)
		return ftl_diag_set(FTL_ERR_INVALID, "the keyring is full (%d keys): remove an old key first",
				    FTL_KEYRING_MAX_KEYS);
	memcpy(kr->keys[kr->key_count++], key, FTL_KEY_SIZE);
	kr->changes++;
	return FTL_OK;
}

ftl_err ftl_keyring_use(ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE])
{
	uint8_t primary[FTL_KEY_SIZE];
	int at = find_key(kr, key);
	if (at < 0)
		return ftl_diag_set(FTL_ERR_INVALID, "that key is not installed: install it first");
	/* Move it to the front, keeping the others in order. */
	memcpy(primary, kr->keys[at], FTL_KEY_SIZE);
	memmove(kr->keys[1], kr->keys[0], (size_t)at * FTL_KEY_SIZE);
	memcpy(kr->keys[0], primary, FTL_KEY_SIZE);
	sodium_memzero(primary, sizeof primary);
	kr->changes += at != 0;
	return FTL_OK;
}

ftl_err ftl_keyring_remove(ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE])
{
	int at = find_key(kr, key);
	if (at < 0)
		return ftl_diag_set(FTL_ERR_INVALID, "that key is not installed");
	if (at == 0)
		return ftl_diag_set(FTL_ERR_INVALID, "that key is the primary: `use` another key first");
	memmove(kr->keys[at], kr->keys[at + 1], (kr->key_count - (size_t)at - 1) * FTL_KEY_SIZE);
	kr->key_count--;
	sodium_memzero(kr->keys[kr->key_count], FTL_KEY_SIZE);
	kr->changes++;
	return FTL_OK;
}

size_t ftl_keyring_list(const ftl_keyring *kr, uint8_t keys[][FTL_KEY_SIZE], size_t max)
{
	for (size_t i = 0; i < kr->key_count && i < max; i++)
		memcpy(keys[i], kr->keys[i], FTL_KEY_SIZE);
	return kr->key_count;
}

void ftl_keyring_fingerprints(const ftl_keyring *kr, ftl_key_fps *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < kr->key_count; i++)
		ftl_key_fingerprint(kr->keys[i], out->fp[out->count++]);
}

uint64_t ftl_keyring_changes(const ftl_keyring *kr)
{
	return kr->changes;
}

/* Bytes a packet of this ring's mode has beyond its plaintext. */
static size_t overhead_of(const ftl_keyring *kr)
{
	return kr->is_insecure ? 1 : FTL_KEYRING_OVERHEAD;
}

ftl_err ftl_keyring_seal(ftl_keyring *kr, const uint8_t *pt, size_t pt_len, uint8_t *out, size_t cap,
			 size_t *out_len)
{
	size_t overhead = overhead_of(kr);
	if (cap < overhead || pt_len > cap - overhead)
		return ftl_diag_set(FTL_ERR_INVALID, "keyring: %zu bytes of plaintext need %zu sealed, the buffer "
				    "holds %zu", pt_len, pt_len + overhead, cap);
	if (kr->is_insecure) {
		out[0] = MODE_INSECURE;
		memmove(out + 1, pt, pt_len);
		*out_len = pt_len + 1;
	} else {
		unsigned long long ct_len;
		uint8_t *nonce = out + 1;
		out[0] = MODE_SEALED;
		randombytes_buf(nonce, NONCE_SIZE);
		crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + NONCE_SIZE, &ct_len, pt, pt_len,
							   (const uint8_t *)kr->cluster, kr->cluster_len, NULL,
							   nonce, kr->keys[0]);
		*out_len = 1 + NONCE_SIZE + (size_t)ct_len;
	}
	kr->stats.sealed++;
	return FTL_OK;
}

/* Tries every installed key; true when one authenticates the packet. */
static bool opens_sealed(const ftl_keyring *kr, const uint8_t *in, size_t in_len, uint8_t *pt, size_t *pt_len)
{
	const uint8_t *nonce = in + 1;
	const uint8_t *ct = nonce + NONCE_SIZE;
	size_t ct_len = in_len - 1 - NONCE_SIZE;
	for (size_t i = 0; i < kr->key_count; i++) {
		unsigned long long len;
		if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, &len, NULL, ct, ct_len,
							       (const uint8_t *)kr->cluster, kr->cluster_len,
							       nonce, kr->keys[i]) == 0) {
			*pt_len = (size_t)len;
			return true;
		}
	}
	return false;
}

/* Why in (already known to be at least one byte) cannot be opened before any cryptography, or MAX. */
static ftl_keyring_drop precheck(const ftl_keyring *kr, const uint8_t *in, size_t in_len, size_t cap)
{
	size_t overhead = overhead_of(kr);
	if (in[0] != (kr->is_insecure ? MODE_INSECURE : MODE_SEALED))
		return FTL_KEYRING_DROP_BAD_MODE;
	if (in_len < overhead)
		return FTL_KEYRING_DROP_TRUNCATED;
	if (in_len - overhead > cap)
		return FTL_KEYRING_DROP_TOO_LONG;
	return FTL_KEYRING_DROP_MAX;
}

int ftl_keyring_open(ftl_keyring *kr, const uint8_t *in, size_t in_len, uint8_t *pt, size_t cap,
		     size_t *pt_len, ftl_keyring_drop *why)
{
	ftl_keyring_drop drop = in_len == 0 ? FTL_KEYRING_DROP_TRUNCATED : precheck(kr, in, in_len, cap);

	if (drop == FTL_KEYRING_DROP_MAX) {
		if (kr->is_insecure) {
			memmove(pt, in + 1, in_len - 1);
			*pt_len = in_len - 1;
		} else if (!opens_sealed(kr, in, in_len, pt, pt_len)) {
			drop = FTL_KEYRING_DROP_BAD_MAC;
		}
	}
	if (drop != FTL_KEYRING_DROP_MAX) {
		kr->stats.dropped[drop]++;
		if (why != NULL)
			*why = drop;
		return -1;
	}
	kr->stats.opened++;
	return 0;
}

const ftl_keyring_stats *ftl_keyring_get_stats(const ftl_keyring *kr)
{
	return &kr->stats;
}

ftl_err ftl_key_from_base64(const char *text, uint8_t key[FTL_KEY_SIZE])
{
	uint8_t decoded[FTL_KEY_SIZE + 1]; /* one spare byte so that a longer key is seen, not truncated */
	size_t len = 0;
	/* Surrounding whitespace (a trailing newline from a file or Secret) is ignored; anything else that is
	 * not base64 is an error. */
	bool is_key = text != NULL &&
		      sodium_base642bin(decoded, sizeof decoded, text, strlen(text), " \t\r\n", &len, NULL,
					sodium_base64_VARIANT_ORIGINAL) == 0 &&
		      len == FTL_KEY_SIZE;
	if (is_key)
		memcpy(key, decoded, FTL_KEY_SIZE);
	sodium_memzero(decoded, sizeof decoded);
	if (!is_key)
		return ftl_diag_set(FTL_ERR_INVALID, "expected the base64 of 32 bytes (make one with `ftlctl keygen`)");
	return FTL_OK;
}

void ftl_key_to_base64(const uint8_t key[FTL_KEY_SIZE], char *out, size_t cap)
{
	assert(cap >= sodium_base64_ENCODED_LEN(FTL_KEY_SIZE, sodium_base64_VARIANT_ORIGINAL));
	sodium_bin2base64(out, cap, key, FTL_KEY_SIZE, sodium_base64_VARIANT_ORIGINAL);
}
