/* Who goes when too many strangers hold connections open. A port open to anyone (the gossip port before a
 * peer proves it holds the key, /metrics before a request head is complete) cannot refuse newcomers when
 * full: an attacker who keeps the slots filled, renewing each as it times out, would then keep every real
 * peer out. Instead the newcomer is always let in and the oldest stranger goes: a real peer proves itself
 * (or finishes its request) at once, so it is the newest for the moment it needs, while a connection that
 * idles or trickles only grows older. A cap per source address keeps one address from pushing out everyone
 * else's connections; many addresses (a botnet, or 127.0.0.2, 127.0.0.3, ... on loopback) still only push
 * out the oldest.
 *
 * The queue is intrusive (an ftl_admit_entry inside the caller's connection), oldest first; every
 * operation is O(1) except ftl_admit_victim, which is O(queue length) (the queue is capped, 256 at most). */
#ifndef FTL_AGENT_ADMISSION_H
#define FTL_AGENT_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct ftl_admit_entry {
	struct ftl_admit_entry *older, *newer;
	uint8_t source[16]; /* the peer's IP address (IPv4 as v4-mapped IPv6), port left out */
	bool is_queued;
} ftl_admit_entry;

typedef struct ftl_admit_queue {
	ftl_admit_entry *oldest, *newest;
	size_t len;
} ftl_admit_queue;

/* e joins as the newest; peer (may be NULL: a source of its own) is where it comes from. */
void ftl_admit_push(ftl_admit_queue *q, ftl_admit_entry *e, const struct sockaddr *peer);
/* e leaves (proved itself, or closed); nothing if it is not queued. */
void ftl_admit_remove(ftl_admit_queue *q, ftl_admit_entry *e);
/* Which queued entry must go before one more from newcomer_peer is let in, so that at most max_total stay
 * queued and at most max_per_source from its source (0: no such cap): that source's oldest when it is at
 * its cap, else the oldest of all when the queue is full, else NULL. The caller closes it (which removes
 * it) and asks again. */
ftl_admit_entry *ftl_admit_victim(const ftl_admit_queue *q, const struct sockaddr *newcomer_peer, size_t max_total,
				  size_t max_per_source);

#endif
