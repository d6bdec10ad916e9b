/* What a member's gossiped metadata carries: the address of its comm (data) listener, which the
 * rendezvous needs to build communicators, and in a job of replicas the replica it belongs to
 * (rendezvous/rdv_replicas.h), then the user's own metadata (FTL_META). Layout:
 * "<data addr>\x1f<user meta>", or "<data addr>\x1e<replica>\x1e<index>\x1e<size>\x1f<user meta>" for a
 * member of a replica; a member with no data address (a plain ftl-agent) takes no part in training views.
 * The replica part is new in 0.4: agents before it read it as part of the address, so a job of replicas
 * needs every worker at 0.4 or later (a job without replicas sends the layout they know). */
#ifndef FTL_NODE_META_H
#define FTL_NODE_META_H

#include <stddef.h>
#include <stdint.h>

#include "rendezvous/rdv_types.h"

#define FTL_META_SEP '\x1f'
#define FTL_META_REPLICA_SEP '\x1e'

/* Builds the gossiped bytes from self's data_addr and replica fields (its name and generation are not
 * read); returns their length, or 0 if they do not fit in cap. */
size_t ftl_meta_pack(const ftl_rdv_member *self, const uint8_t *user, size_t user_len, uint8_t *out, size_t cap);
/* Splits gossiped bytes: fills m's data_addr (empty when none) and replica fields (replica_size 0 when
 * none, or when that part does not parse: such a member is never in a view of replicas) and points at the
 * user part. m's name and generation are left as they are. */
void ftl_meta_unpack(const uint8_t *meta, size_t len, ftl_rdv_member *m, const uint8_t **user, size_t *user_len);

#endif
