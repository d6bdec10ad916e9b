/* Who goes when too many strangers hold connections open. A port open to anyone (the gossip port before a
 * peer proves it holds the key, /metrics before a request head is complete) cannot turn newcomers away
 * when full: an attacker who keeps the slots filled, renewing each as it closes, would keep every real
 * peer out. Instead the newcomer is let in and the oldest stranger goes: a real peer proves itself (or
 * finishes its request) at once, so it is among the newest for the moment it needs, while a connection
 * that idles or trickles only grows older. A cap per source address keeps one address from pushing out
 * everyone else's connections; many addresses (a botnet, or 127.0.0.2, 127.0.0.3, ... on loopback) still
 * only push out the oldest.
 *
 * "At once" has a floor: a connection accepted in one turn of the loop is first read in the next (its
 * read is registered with the poller then), and one turn can accept a whole listen backlog. So an entry
 * is never pushed out before two turns have begun since it was queued; when the caps are reached with
 * only such entries, they may be exceeded (up to `hard`, which should exceed total by a listen backlog),
 * and beyond that the newcomer is refused. The caller counts the turns (ftl_agent.loop_turns).
 *
 * The queue is intrusive (an ftl_admit_entry inside the caller's connection), oldest first; push and
 * remove are O(1), ftl_admit_victim O(queue length) when a per-source cap is set. */
#ifndef FTL_AGENT_ADMISSION_H
#define FTL_AGENT_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct ftl_admit_entry {
	struct ftl_admit_entry *older, *newer;
	uint8_t source[16]; /* the peer's IP address (IPv4 as v4-mapped IPv6), port left out */
	uint64_t turn;      /* the loop turn it was queued in */
	bool is_queued;
} ftl_admit_entry;

typedef struct ftl_admit_queue {
	ftl_admit_entry *oldest, *newest;
	size_t len;
} ftl_admit_queue;

typedef struct ftl_admit_limits {
	size_t total;       /* entries queued at once */
	size_t per_source;  /* ... from one address; 0: no such cap */
	size_t hard;        /* entries queued at once even when those over a cap are too young to go */
} ftl_admit_limits;

/* The connection (of type `type`) whose ftl_admit_entry member `field` is entry. */
#define ftl_admit_owner(entry, type, field) ((type *)((char *)(entry) - offsetof(type, field)))

/* e joins as the newest, in loop turn `turn`; peer (may be NULL: no source cap) is where it comes from. */
void ftl_admit_push(ftl_admit_queue *q, ftl_admit_entry *e, const struct sockaddr *peer, uint64_t turn);
/* e leaves (proved itself, or closed); nothing if it is not queued. */
void ftl_admit_remove(ftl_admit_queue *q, ftl_admit_entry *e);
/* Which queued entry must go, now in loop turn `turn`, before one more from newcomer_peer is let in: its
 * source's oldest when that source is at its cap, else the oldest of all when the queue is full, else
 * NULL. The caller closes it (which removes it) and asks again. NULL with *is_refused: the newcomer
 * itself must go (lim->hard entries are queued, those over a cap too young to push out). */
ftl_admit_entry *ftl_admit_victim(const ftl_admit_queue *q, const struct sockaddr *newcomer_peer,
				  const ftl_admit_limits *lim, uint64_t turn, bool *is_refused);

#endif
