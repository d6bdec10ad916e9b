/* The metadata layout of node_meta.h. */
#include "node_meta.h"

#include <string.h>

size_t ftl_meta_pack(const char *data_addr, const uint8_t *user, size_t user_len, uint8_t *out, size_t cap)
{
	size_t al = strlen(data_addr);
	if (al + 1 + user_len > cap)
		return 0;
	memcpy(out, data_addr, al);
	out[al] = (uint8_t)FTL_META_SEP;
	if (user_len)
		memcpy(out + al + 1, user, user_len);
	return al + 1 + user_len;
}

void ftl_meta_unpack(const uint8_t *meta, size_t len, char *data_addr, size_t addr_cap, const uint8_t **user,
		     size_t *user_len)
{
	const uint8_t *sep = len ? memchr(meta, FTL_META_SEP, len) : NULL;
	data_addr[0] = '\0';
	if (!sep) { /* no data address: all of it is the user's */
		*user = meta;
		*user_len = len;
		return;
	}
	size_t al = (size_t)(sep - meta);
	if (al < addr_cap) {
		memcpy(data_addr, meta, al);
		data_addr[al] = '\0';
	}
	*user = sep + 1;
	*user_len = len - al - 1;
}
