/* Key fingerprints: a short name for a cluster key that members may gossip, so that every member can tell
 * which keys the others hold (key_census.h) without anyone ever sending a key.
 *
 * A fingerprint is the first 8 bytes of keyed BLAKE2b (libsodium's crypto_generichash, 16-byte output):
 * the key is the BLAKE2b key and a fixed context string is the message. Keyed BLAKE2b is a pseudorandom
 * function of its key, so a fingerprint tells whoever sees it nothing about the key beyond "this key, or
 * not": learning the key from it is a search of 2^256 keys. (Gossip is sealed anyway; this holds even for
 * a reader who holds some other cluster key, such as a member removed by a rotation.) The fixed context
 * keeps fingerprints apart from any other use of the same key. 8 bytes are plenty to tell apart the few
 * keys a cluster holds at once (a collision among 8 keys has odds below 2^-58) and keep an alive message
 * small: a full keyring adds 66 bytes to it.
 *
 * Wire form: the fingerprints a member holds, its primary first, as one bin of count * 8 bytes (key 21 of
 * wire_schema.c). */
#ifndef FTL_MEMBERSHIP_KEY_FINGERPRINT_H
#define FTL_MEMBERSHIP_KEY_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FTL_KEY_FP_SIZE 8
#define FTL_KEY_FPS_MAX 8 /* fingerprints one member advertises: a whole keyring (FTL_KEYRING_MAX_KEYS) */
#define FTL_KEY_FP_HEX_SIZE (2 * FTL_KEY_FP_SIZE + 1)

/* The fingerprints of the keys one member holds, its primary first. */
typedef struct ftl_key_fps {
	uint8_t count;                                /* 0: it advertises none (insecure, or an older agent) */
	uint8_t fp[FTL_KEY_FPS_MAX][FTL_KEY_FP_SIZE];
} ftl_key_fps;

/* The fingerprint of a 32-byte key (FTL_KEY_SIZE). */
void ftl_key_fingerprint(const uint8_t *key, uint8_t fp[FTL_KEY_FP_SIZE]);
/* Where fp is in fps (0 = that member's primary), or -1 when absent (a lookup). fps may be NULL (none
 * advertised). */
int ftl_key_fps_find(const ftl_key_fps *fps, const uint8_t fp[FTL_KEY_FP_SIZE]);
/* Lowercase hex, NUL-terminated, for ftlctl. */
void ftl_key_fp_to_hex(const uint8_t fp[FTL_KEY_FP_SIZE], char out[FTL_KEY_FP_HEX_SIZE]);

#endif
