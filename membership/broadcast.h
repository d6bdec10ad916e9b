/* The piggyback queue (memberlist's TransmitLimitedQueue is the model): rumors waiting to ride on
 * outgoing packets.
 *
 * Each rumor is about one member; queuing a new rumor about a member drops the older one, since the
 * newer supersedes it. Packets take the least-sent rumors first and, among equals, the newest, so fresh
 * news spreads before old news is repeated. A rumor is dropped after `limit` transmissions
 * (lambda*ceil(log10(N+1)), computed by the caller for the current N). Items are pre-encoded so a rumor
 * is encoded once however many times it is sent.
 *
 * Cost (a node that learns a thousand members at once queues a thousand rumors and fills a packet from them
 * many times a second): the queue is kept in send order at all times and indexed by member name, so a push
 * is O(1) plus a move of q pointers, and a fill looks only at the rumors it takes (and those that do not fit
 * while room is left), then merges the ones it sent back into place: O(q) pointer moves, no sort. */
#ifndef FTL_MEMBERSHIP_BROADCAST_H
#define FTL_MEMBERSHIP_BROADCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"

#include "wire.h"

typedef struct ftl_bcast_item ftl_bcast_item;

/* A queued rumor's place in send order, with its sort key beside it so that ordering never reads the rumor. */
typedef struct ftl_bcast_entry {
	uint64_t id;             /* of the rumor: larger is newer */
	int transmits;           /* times it was sent */
	ftl_bcast_item *item;    /* owned */
} ftl_bcast_entry;

typedef struct ftl_bcast_queue {
	ftl_bcast_entry *items;  /* [len], in send order: least-sent first, among equals newest first */
	size_t len;
	size_t cap;
	ftl_bcast_entry *sent;   /* [cap]: scratch for the rumors one fill sent */
	ftl_bcast_item **index;  /* [n_index], open addressing by member name; NULL is an empty slot */
	size_t n_index;          /* a power of two, at least 2*len */
	uint64_t next_id;        /* increases with every push: larger is newer */
	size_t min_len;          /* no queued rumor is shorter: a packet with less room takes nothing more */
	int last_limit;          /* the limit of the last fill: every queued rumor was sent fewer times */
} ftl_bcast_queue;

void ftl_bcast_init(ftl_bcast_queue *q);
void ftl_bcast_free(ftl_bcast_queue *q);
/* Queues an encoded message about member `about`, replacing any queued rumor about it. FTL_ERR_SYSTEM on
 * OOM, FTL_ERR_INVALID for a message longer than FTL_WIRE_MSG_MAX. */
ftl_err ftl_bcast_push(ftl_bcast_queue *q, const char *about, const uint8_t *msg, size_t len);
/* Adds as many rumors as fit into p; returns how many were added. */
size_t ftl_bcast_fill(ftl_bcast_queue *q, ftl_wire_packet *p, int limit);
/* True while a rumor about `about` is still queued (a leaving node waits for its own to go out). */
bool ftl_bcast_has(const ftl_bcast_queue *q, const char *about);
static inline size_t ftl_bcast_len(const ftl_bcast_queue *q) { return q->len; }

#endif
