/* The piggyback queue of broadcast.h: one array of rumors kept in send order, and an index by member name
 * (open addressing, linear probing) so that a newer rumor finds the one it replaces without a scan. */
#include "broadcast.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ftl_bcast_item {
	char about[FTL_NAME_MAX];
	uint32_t hash;      /* of about, for the index */
	uint64_t id;        /* as in its entry: finds the entry by binary search */
	int transmits;      /* as in its entry */
	size_t len;
	uint8_t msg[];
};

void ftl_bcast_init(ftl_bcast_queue *q)
{
	memset(q, 0, sizeof(*q));
	q->min_len = SIZE_MAX;
	q->last_limit = INT_MAX;
}

void ftl_bcast_free(ftl_bcast_queue *q)
{
	for (size_t i = 0; i < q->len; i++)
		free(q->items[i].item);
	free(q->items);
	free(q->sent);
	free(q->index);
	ftl_bcast_init(q);
}

/* Send order: least-sent first; among equals, newest first. Ids are unique, so the order is total. */
static bool goes_before(const ftl_bcast_entry *x, const ftl_bcast_entry *y)
{
	return x->transmits != y->transmits ? x->transmits < y->transmits : x->id > y->id;
}

/* ---- the index ---- */

/* The slot holding the rumor about `about`, or the empty slot where it would go. */
static size_t slot_of(const ftl_bcast_queue *q, const char *about, uint32_t hash)
{
	size_t mask = q->n_index - 1;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		const ftl_bcast_item *it = q->index[i];
		if (!it || (it->hash == hash && strcmp(it->about, about) == 0))
			return i;
	}
}

static ftl_bcast_item *find_about(const ftl_bcast_queue *q, const char *about)
{
	return q->n_index ? q->index[slot_of(q, about, ftl_hash_str(about))] : NULL;
}

/* Backward-shift deletion: entries after the hole move into it unless that would put them before their home
 * slot, so every probe chain stays unbroken without tombstones. */
static void unindex(ftl_bcast_queue *q, const ftl_bcast_item *it)
{
	size_t mask = q->n_index - 1, hole = slot_of(q, it->about, it->hash);
	for (size_t j = (hole + 1) & mask; q->index[j]; j = (j + 1) & mask) {
		size_t home = q->index[j]->hash & mask;
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			q->index[hole] = q->index[j];
			hole = j;
		}
	}
	q->index[hole] = NULL;
}

static void drop(ftl_bcast_queue *q, ftl_bcast_item *it)
{
	unindex(q, it);
	free(it);
}

static ftl_err out_of_memory(const ftl_bcast_queue *q)
{
	return ftl_diag_set(FTL_ERR_SYSTEM, "rumor queue: out of memory for %zu rumors", q->len + 1);
}

/* Room for one more rumor in the arrays and the index. */
static ftl_err reserve(ftl_bcast_queue *q)
{
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		ftl_bcast_entry *items = realloc(q->items, cap * sizeof(*items));
		if (!items)
			return out_of_memory(q);
		q->items = items;
		ftl_bcast_entry *sent = realloc(q->sent, cap * sizeof(*sent));
		if (!sent)
			return out_of_memory(q);
		q->sent = sent;
		q->cap = cap;
	}
	if ((q->len + 1) * 2 > q->n_index) {
		size_t n = q->n_index ? q->n_index * 2 : 32;
		ftl_bcast_item **index = calloc(n, sizeof(*index));
		if (!index)
			return out_of_memory(q);
		free(q->index);
		q->index = index;
		q->n_index = n;
		for (size_t i = 0; i < q->len; i++)
			q->index[slot_of(q, q->items[i].item->about, q->items[i].item->hash)] = q->items[i].item;
	}
	return FTL_OK;
}

/* ---- the queue ---- */

/* Where the entry of `it` stands in send order. O(log q). */
static size_t position_of(const ftl_bcast_queue *q, const ftl_bcast_item *it)
{
	ftl_bcast_entry key = {.id = it->id, .transmits = it->transmits};
	size_t lo = 0, hi = q->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (goes_before(&q->items[mid], &key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

ftl_err ftl_bcast_push(ftl_bcast_queue *q, const char *about, const uint8_t *msg, size_t len)
{
	if (len > FTL_WIRE_MSG_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "rumor about %s: %zu bytes, more than a message holds (%d)", about,
				    len, FTL_WIRE_MSG_MAX);
	ftl_bcast_item *old = find_about(q, about);
	if (old) {
		size_t at = position_of(q, old);
		memmove(&q->items[at], &q->items[at + 1], (q->len - at - 1) * sizeof(*q->items));
		q->len--;
		drop(q, old);
	}
	ftl_err err = reserve(q);
	if (err)
		return err;
	ftl_bcast_item *it = malloc(sizeof(*it) + len);
	if (!it)
		return out_of_memory(q);
	ftl_copy_str(it->about, about, FTL_NAME_MAX);
	it->hash = ftl_hash_str(it->about);
	it->id = q->next_id++;
	it->transmits = 0;
	it->len = len;
	memcpy(it->msg, msg, len);
	/* Never sent and the newest: it goes first. */
	memmove(&q->items[1], &q->items[0], q->len * sizeof(*q->items));
	q->items[0] = (ftl_bcast_entry){.id = it->id, .transmits = 0, .item = it};
	q->len++;
	q->index[slot_of(q, it->about, it->hash)] = it;
	if (len < q->min_len)
		q->min_len = len;
	return FTL_OK;
}

/* Drops every rumor sent `limit` times or more (after the limit shrank with N), keeping the order. O(q). */
static void drop_at_limit(ftl_bcast_queue *q, int limit)
{
	size_t kept = 0;
	for (size_t i = 0; i < q->len; i++) {
		if (q->items[i].transmits >= limit)
			drop(q, q->items[i].item);
		else
			q->items[kept++] = q->items[i];
	}
	q->len = kept;
}

/* Puts the rumors a fill sent (sent[0..n_sent), in send order, each sent once more) back among the rest
 * (items[0..len), in send order): a merge from the back, so it stops where the last sent rumor lands. */
static void merge_sent(ftl_bcast_queue *q, size_t n_sent)
{
	size_t a = q->len, b = n_sent, out = q->len + n_sent;
	while (b > 0) {
		if (a > 0 && goes_before(&q->sent[b - 1], &q->items[a - 1]))
			q->items[--out] = q->items[--a];
		else
			q->items[--out] = q->sent[--b];
	}
	q->len += n_sent;
}

size_t ftl_bcast_fill(ftl_bcast_queue *q, ftl_wire_packet *p, int limit)
{
	if (q->len == 0)
		return 0;
	size_t looked = 0, kept = 0, n_sent = 0;
	/* In send order while anything may still fit: with less room than the shortest rumor, or with
	 * FTL_WIRE_MAX_MSGS messages, every further rumor would be refused. */
	for (; looked < q->len && ftl_wire_packet_room(p) >= q->min_len && p->count < FTL_WIRE_MAX_MSGS; looked++) {
		ftl_bcast_entry e = q->items[looked];
		if (ftl_wire_packet_add_raw(p, e.item->msg, e.item->len) == 0) {
			e.transmits = ++e.item->transmits;
			q->sent[n_sent++] = e;
		} else {
			q->items[kept++] = e;
		}
	}
	/* The rest after the ones not sent, then the sent ones (dropped at the limit) merged back in. */
	memmove(&q->items[kept], &q->items[looked], (q->len - looked) * sizeof(*q->items));
	q->len -= n_sent;
	size_t n_back = 0;
	for (size_t i = 0; i < n_sent; i++) {
		if (q->sent[i].transmits >= limit)
			drop(q, q->sent[i].item);
		else
			q->sent[n_back++] = q->sent[i];
	}
	merge_sent(q, n_back);
	/* Rumors not looked at were sent fewer than last_limit times (and new ones never): only a smaller
	 * limit can have reached them. */
	if (limit < q->last_limit || limit < 1)
		drop_at_limit(q, limit);
	q->last_limit = limit;
	return n_sent;
}

bool ftl_bcast_has(const ftl_bcast_queue *q, const char *about) { return find_about(q, about) != NULL; }
