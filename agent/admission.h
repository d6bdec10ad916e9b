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
 * only such entries, they may be exceeded up to `hard`, and beyond that the caller waits a turn before it
 * accepts the next connection (the kernel's listen backlog holds the rest meanwhile, costing us no
 * descriptor): nobody is turned away. The caller counts the turns (ftl_agent.loop_turns).
 *
 * The queue is intrusive (an ftl_admit_entry inside the caller's connection, on a base/list.h list), oldest
 * first; push and remove are O(1), ftl_admit_victim O(queue length) when a per-source cap is set. */
#ifndef FTL_AGENT_ADMISSION_H
#define FTL_AGENT_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/list.h" /* the queue; ftl_owner_of: the connection an entry sits in */

typedef struct ftl_admit_entry {
	ftl_list_link link; /* in its queue */
	uint8_t source[16]; /* the peer's IP address (IPv4 as v4-mapped IPv6), port left out */
	uint64_t turn;      /* the loop turn it was queued in */
	bool is_queued;
} ftl_admit_entry;

typedef struct ftl_admit_queue {
	ftl_list entries; /* oldest first */
	size_t len;
} ftl_admit_queue;

static inline ftl_admit_entry *ftl_admit_entry_of(ftl_list_link *link)
{
	return link ? ftl_owner_of(link, ftl_admit_entry, link) : NULL;
}

/* The oldest entry of q, or NULL when it is empty. */
static inline ftl_admit_entry *ftl_admit_oldest(const ftl_admit_queue *q) { return ftl_admit_entry_of(q->entries.first); }
/* The entry queued after e, or NULL when e is the newest. */
static inline ftl_admit_entry *ftl_admit_newer(const ftl_admit_entry *e) { return ftl_admit_entry_of(e->link.next); }

typedef struct ftl_admit_limits {
	size_t total;       /* entries queued at once */
	size_t per_source;  /* ... from one address; 0: no such cap */
	size_t hard;        /* entries queued at once while those over a cap are too young to go */
} ftl_admit_limits;

/* Limits of at most `total` entries, `per_source` from one address, and `backlog` more while those over
 * a cap are too young to go, cut down to fit within 1/share of this process's descriptor limit
 * (RLIMIT_NOFILE, the soft one): running out of descriptors would make the kernel's accept refuse real
 * peers along with the rest (libuv then closes every connection waiting), so the caps must bind first. */
ftl_admit_limits ftl_admit_limits_fitted(size_t total, size_t per_source, size_t backlog, size_t share);


/* e joins as the newest, in loop turn `turn`; peer (may be NULL: no source cap) is where it comes from. */
void ftl_admit_push(ftl_admit_queue *q, ftl_admit_entry *e, const struct sockaddr *peer, uint64_t turn);
/* e leaves (proved itself, or closed); nothing if it is not queued. */
void ftl_admit_remove(ftl_admit_queue *q, ftl_admit_entry *e);
/* Whether the next connection must wait in the listen backlog (not be accepted) in loop turn `turn`:
 * lim->hard entries are queued and none may go yet. */
bool ftl_admit_must_wait(const ftl_admit_queue *q, const ftl_admit_limits *lim, uint64_t turn);
/* Which queued entry must go, now in loop turn `turn`, before one more from newcomer_peer is let in: its
 * source's oldest when that source is at its cap, else the oldest of all when the queue is full, else
 * NULL (none may go yet). The caller closes it (which removes it) and asks again. */
ftl_admit_entry *ftl_admit_victim(const ftl_admit_queue *q, const struct sockaddr *newcomer_peer,
				  const ftl_admit_limits *lim, uint64_t turn);

#endif
