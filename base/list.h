/* An intrusive doubly-linked list: the link sits inside its owner's struct (ftl_owner_of finds the owner
 * again), an owner joins at either end and leaves from anywhere in O(1), and nothing is allocated. The
 * agent keeps its connections, checks, peers and control clients on such lists, so that stopping can close
 * every one (each leaves its list when its last libuv handle has closed), and its admission queues oldest
 * first (agent/admission.h). */
#ifndef FTL_BASE_LIST_H
#define FTL_BASE_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ftl_list_link {
	struct ftl_list_link *prev, *next;
} ftl_list_link;

typedef struct ftl_list {
	ftl_list_link *first, *last;
} ftl_list;

/* The struct of type `type` whose member `field` is at ptr: the owner of an intrusive link, admission
 * entry (agent/admission.h) or connection (agent/agent_conn.h). */
#define ftl_owner_of(ptr, type, field) ((type *)((char *)(ptr) - offsetof(type, field)))

static inline void ftl_list_push_front(ftl_list *l, ftl_list_link *link)
{
	link->prev = NULL;
	link->next = l->first;
	if (l->first)
		l->first->prev = link;
	else
		l->last = link;
	l->first = link;
}

static inline void ftl_list_push_back(ftl_list *l, ftl_list_link *link)
{
	link->next = NULL;
	link->prev = l->last;
	if (l->last)
		l->last->next = link;
	else
		l->first = link;
	l->last = link;
}

/* link leaves l; it must be on it. */
static inline void ftl_list_unlink(ftl_list *l, ftl_list_link *link)
{
	if (link->prev)
		link->prev->next = link->next;
	else
		l->first = link->next;
	if (link->next)
		link->next->prev = link->prev;
	else
		l->last = link->prev;
	link->prev = link->next = NULL;
}

#endif
