/* The metadata layout of node_meta.h. */
#include "node_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ftl_meta_pack(const ftl_rdv_member *self, const uint8_t *user, size_t user_len, uint8_t *out, size_t cap)
{
	char training[FTL_ADDR_MAX + FTL_NAME_MAX + 32];
	int tl = self->replica_size > 0
			 ? snprintf(training, sizeof training, "%s%c%s%c%u%c%u", self->data_addr, FTL_META_REPLICA_SEP,
				    self->replica, FTL_META_REPLICA_SEP, self->replica_index, FTL_META_REPLICA_SEP,
				    self->replica_size)
			 : snprintf(training, sizeof training, "%s", self->data_addr);
	size_t al = (size_t)tl;
	if (tl < 0 || al >= sizeof training || al + 1 + user_len > cap)
		return 0;
	memcpy(out, training, al);
	out[al] = (uint8_t)FTL_META_SEP;
	if (user_len)
		memcpy(out + al + 1, user, user_len);
	return al + 1 + user_len;
}

/* "<replica>\x1e<index>\x1e<size>" (NUL-terminated) into m; false (m's replica left empty) when malformed. */
static bool read_replica(char *part, ftl_rdv_member *m)
{
	char *index = strchr(part, FTL_META_REPLICA_SEP);
	char *size = index ? strchr(index + 1, FTL_META_REPLICA_SEP) : NULL;
	if (!size || index == part || (size_t)(index - part) >= sizeof m->replica)
		return false;
	*index++ = '\0';
	*size++ = '\0';
	char *end_i, *end_s;
	unsigned long i = strtoul(index, &end_i, 10), s = strtoul(size, &end_s, 10);
	if (end_i == index || *end_i || end_s == size || *end_s || s == 0 || i >= s || s > FTL_RDV_MAX_MEMBERS)
		return false;
	ftl_copy_str(m->replica, part, sizeof m->replica);
	m->replica_index = (uint32_t)i;
	m->replica_size = (uint32_t)s;
	return true;
}

void ftl_meta_unpack(const uint8_t *meta, size_t len, ftl_rdv_member *m, const uint8_t **user, size_t *user_len)
{
	const uint8_t *sep = len ? memchr(meta, FTL_META_SEP, len) : NULL;
	m->data_addr[0] = m->replica[0] = '\0';
	m->replica_index = m->replica_size = 0;
	if (!sep) { /* no data address: all of it is the user's */
		*user = meta;
		*user_len = len;
		return;
	}
	size_t tl = (size_t)(sep - meta);
	*user = sep + 1;
	*user_len = len - tl - 1;
	char training[FTL_META_MAX + 1];
	memcpy(training, meta, tl);
	training[tl] = '\0';
	char *replica = strchr(training, FTL_META_REPLICA_SEP);
	if (replica)
		*replica++ = '\0';
	size_t al = strlen(training);
	if (al == 0 || al >= sizeof m->data_addr || (replica && !read_replica(replica, m))) {
		m->replica[0] = '\0'; /* no address, or a replica part that does not parse: in no view */
		m->replica_index = m->replica_size = 0;
		return;
	}
	ftl_copy_str(m->data_addr, training, sizeof m->data_addr);
}
