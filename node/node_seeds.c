/* The seed rule. A seed is a host:port name that the shell re-resolves through DNS every reseed interval (a
 * Kubernetes headless Service answers with every pod); each answer comes here. The node push-pulls with every
 * address of the answer that is neither its own nor a member it sees alive: that is how a new node joins, how
 * the two sides of a healed partition find each other once gossip has given up on them, and how nodes that
 * started before their seed was up merge with it later (otherwise each side would form a cluster of its own
 * and train alone). A healthy cluster sends nothing. O(members x answers) per answer.
 *
 * And how often to ask. While the node sees no one alive but itself, soon: 250 ms, then twice as long each
 * time up to the reseed interval. Workers started together race their seed's bind (and a Service lists a pod
 * only once it runs), so a first join often finds nobody; waiting the whole interval (5 s by default) for the
 * second try cost every such cold start that long. Once it sees a member, the interval; left alone later (a
 * partition, a cluster that left), it starts over from 250 ms. */
#include "node_internal.h"

#include <string.h>

/* Marks answers[k] seen alive (in is_alive[k]) for every alive member at that address. Address hashes are
 * compared first, so the member table is read as one array and an address only on a match. */
static void mark_alive(const ftl_swim *s, const char *const *addrs, size_t n_addrs, bool *is_alive)
{
	uint32_t hash[64];
	for (size_t k = 0; k < n_addrs; k++)
		hash[k] = ftl_hash_str(addrs[k]);
	const ftl_members *t = ftl_swim_members(s);
	for (uint32_t i = 0; i < t->len; i++) {
		const ftl_member *m = &t->arr[i];
		if (m->state != FTL_MEMBER_ALIVE)
			continue;
		for (size_t k = 0; k < n_addrs; k++)
			is_alive[k] |= m->addr_hash == hash[k] && strcmp(m->addr, addrs[k]) == 0;
	}
}

static bool is_repeated(const char *const *addrs, size_t k)
{
	for (size_t j = 0; j < k; j++)
		if (strcmp(addrs[j], addrs[k]) == 0)
			return true;
	return false;
}

size_t ftl_node_seeds_answered(ftl_node *n, int64_t now_us, const char *const *addrs, size_t n_addrs)
{
	bool is_alive[64] = {false};
	if (n_addrs > 64)
		n_addrs = 64; /* a resolver reads a bounded answer; so do we */
	mark_alive(n->swim, addrs, n_addrs, is_alive);
	const ftl_member *self = ftl_swim_find(n->swim, ftl_swim_name(n->swim));
	size_t joins = 0;
	for (size_t k = 0; k < n_addrs; k++) {
		if (is_alive[k] || is_repeated(addrs, k) || (self && strcmp(self->addr, addrs[k]) == 0))
			continue;
		ftl_swim_join(n->swim, &addrs[k], 1);
		joins++;
	}
	ftl_node_settle(n, now_us);
	return joins;
}

enum { SEEDS_ALONE_FIRST_WAIT_US = 250000 };

/* We are a member (not leaving) and see no other alive or suspect. */
static bool is_alone(const ftl_swim *s)
{
	const ftl_member *self = ftl_swim_find(s, ftl_swim_name(s));
	if (!self || (self->state != FTL_MEMBER_ALIVE && self->state != FTL_MEMBER_SUSPECT))
		return false; /* leaving: nobody to hurry for */
	return ftl_swim_count(s, FTL_MEMBER_ALIVE) + ftl_swim_count(s, FTL_MEMBER_SUSPECT) <= 1;
}

int64_t ftl_node_seeds_next_wait_us(ftl_node *n, int64_t interval_us)
{
	if (!is_alone(n->swim)) {
		n->seeds_alone_wait_us = 0;
		return interval_us;
	}
	int64_t wait = n->seeds_alone_wait_us > 0 ? n->seeds_alone_wait_us : SEEDS_ALONE_FIRST_WAIT_US;
	if (wait > interval_us)
		wait = interval_us;
	n->seeds_alone_wait_us = wait * 2;
	return wait;
}
