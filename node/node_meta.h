/* What a member's gossiped metadata carries: the address of its comm (data) listener, which the
 * rendezvous needs to build communicators, then the user's own metadata (FTL_META). Layout:
 * "<data addr>\x1f<user meta>"; a member with no data address (a plain ftl-agent) takes no part in
 * training views. */
#ifndef FTL_NODE_META_H
#define FTL_NODE_META_H

#include <stddef.h>
#include <stdint.h>

#define FTL_META_SEP '\x1f'

/* Builds the gossiped bytes; returns their length, or 0 if they do not fit in cap. */
size_t ftl_meta_pack(const char *data_addr, const uint8_t *user, size_t user_len, uint8_t *out, size_t cap);
/* Splits gossiped bytes: copies the data address (empty when none) and points at the user part. */
void ftl_meta_unpack(const uint8_t *meta, size_t len, char *data_addr, size_t addr_cap, const uint8_t **user,
		     size_t *user_len);

#endif
