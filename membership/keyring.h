/* The keyring: seals and opens every datagram and frame with libsodium's XChaCha20-Poly1305 AEAD.
 *
 * The cluster name is the additional data, so two clusters on one network never accept each other's
 * packets even when they share a key. Several keys can be installed: we seal with the primary and try
 * every key when opening, so a key can be rotated with no downtime (install everywhere, use everywhere,
 * remove the old one). Insecure mode sends plaintext and must be asked for explicitly.
 *
 * Sealed layout:   0x01 | nonce (24) | ciphertext | tag (16)
 * Insecure layout: 0x00 | plaintext
 * A keyring in one mode drops packets of the other mode (counted), so a misconfigured node is visible. */
#ifndef FTL_MEMBERSHIP_KEYRING_H
#define FTL_MEMBERSHIP_KEYRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"

#include "key_fingerprint.h"

#define FTL_KEY_SIZE 32
#define FTL_KEYRING_MAX_KEYS 8
#define FTL_CLUSTER_MAX 64
/* Bytes a sealed packet has beyond its plaintext (mode byte + nonce + tag). */
#define FTL_KEYRING_OVERHEAD (1 + 24 + 16)

typedef struct ftl_keyring ftl_keyring;

/* Why an open failed; every failure is counted in ftl_keyring_stats. */
typedef enum ftl_keyring_drop {
	FTL_KEYRING_DROP_TRUNCATED,   /* shorter than the overhead */
	FTL_KEYRING_DROP_BAD_MODE,    /* plaintext packet at a secure node, sealed at an insecure one, or unknown */
	FTL_KEYRING_DROP_BAD_MAC,     /* no key opens it: wrong key, tampered, or wrong cluster name */
	FTL_KEYRING_DROP_TOO_LONG,    /* its plaintext would not fit the caller's buffer */
	FTL_KEYRING_DROP_MAX
} ftl_keyring_drop;

extern const char *const ftl_keyring_drop_strs[FTL_KEYRING_DROP_MAX];

typedef struct ftl_keyring_stats {
	uint64_t sealed;
	uint64_t opened;
	uint64_t dropped[FTL_KEYRING_DROP_MAX];
} ftl_keyring_stats;

/* A secure keyring with one key (the primary), or NULL with the reason in the diag (sodium_init failed,
 * cluster name empty or too long). */
ftl_keyring *ftl_keyring_new(const char *cluster, const uint8_t key[FTL_KEY_SIZE]);
/* An insecure keyring: plaintext on the wire. The caller logs the warning. */
ftl_keyring *ftl_keyring_new_insecure(const char *cluster);
void ftl_keyring_delete(ftl_keyring *kr);

bool ftl_keyring_is_insecure(const ftl_keyring *kr);
/* Adds a key that can open packets (idempotent). FTL_ERR_INVALID if the ring is full or insecure. */
ftl_err ftl_keyring_install(ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE]);
/* Makes an installed key the primary. FTL_ERR_INVALID if it is not installed. */
ftl_err ftl_keyring_use(ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE]);
/* Removes an installed key. FTL_ERR_INVALID if it is the primary or not installed. */
ftl_err ftl_keyring_remove(ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE]);
/* Copies up to max keys out; returns how many are installed. The primary is keys[0]. */
size_t ftl_keyring_list(const ftl_keyring *kr, uint8_t keys[][FTL_KEY_SIZE], size_t max);
/* The fingerprints of the installed keys (key_fingerprint.h), the primary first; none when insecure. */
void ftl_keyring_fingerprints(const ftl_keyring *kr, ftl_key_fps *out);
/* How many times install, use or remove has changed the ring: a reader that remembers the number knows
 * when its copy of the fingerprints is stale. */
uint64_t ftl_keyring_changes(const ftl_keyring *kr);

/* Seals plaintext pt into out and sets *out_len. FTL_ERR_INVALID if cap is too small. */
ftl_err ftl_keyring_seal(ftl_keyring *kr, const uint8_t *pt, size_t pt_len, uint8_t *out, size_t cap,
			 size_t *out_len);
/* Opens in into pt. Returns 0 and sets *pt_len, or -1 (counted, reason in *why when not NULL): a decoder
 * of what arrived, so it leaves the diag alone and the caller that counts the drop decides what to say. */
int ftl_keyring_open(ftl_keyring *kr, const uint8_t *in, size_t in_len, uint8_t *pt, size_t cap,
		     size_t *pt_len, ftl_keyring_drop *why);

const ftl_keyring_stats *ftl_keyring_get_stats(const ftl_keyring *kr);

/* Key text form for config files and ftlctl: standard base64 of the 32 bytes. FTL_ERR_INVALID for any other
 * text (NULL included); the caller puts where it came from in front of the message (ftl_diag_prefix). */
ftl_err ftl_key_from_base64(const char *text, uint8_t key[FTL_KEY_SIZE]);
void ftl_key_to_base64(const uint8_t key[FTL_KEY_SIZE], char *out, size_t cap); /* cap >= 45 */

#endif
