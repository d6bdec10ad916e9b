/* A bounds check over raw MessagePack bytes, run before msgpack-c sees them.
 *
 * msgpack-c allocates a container's element array as soon as it reads the container's header, sized by
 * the count the header claims: a 6-byte packet claiming 2^32 elements asks its zone for 128 GiB. The
 * skim walks the encoding once, without materialising anything, and refuses any container that claims
 * more elements than bytes remain (every element takes at least one byte), anything nested deeper than
 * WIRE_SKIM_MAX_DEPTH, truncation and reserved bytes. After a successful skim, msgpack-c allocates at
 * most a small constant times the input length. Internal to membership/. */
#ifndef FTL_MEMBERSHIP_WIRE_SKIM_H
#define FTL_MEMBERSHIP_WIRE_SKIM_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"

/* Our frames nest at most four deep (push-pull map, member array, member map, value); the slack is for
 * fields a later version may add. */
#define WIRE_SKIM_MAX_DEPTH 8

/* A decoder's refusal: the static reason goes to the calling thread's diag (code FTL_ERR_INVALID); -1. The
 * caller counts the drop. */
int wire_refuse(const char *why);

/* Checks that [buf, buf+len) holds exactly one well-formed, plausibly sized object. Returns 0, or -1
 * with the reason in the diag ("truncated", "trailing bytes", "nested too deep", "container larger than input",
 * "reserved byte"). O(len). */
int wire_skim(const uint8_t *buf, size_t len);

#endif
