/* Everything that leaves a node goes through here: one message (plus an optional second one) with as
 * many queued rumors as fit under the datagram budget, queued as an output. The budget leaves room for
 * the seal the caller's peer channel puts on every datagram (agent/seal.h). Gossip is the same with no
 * primary message, sent only when there is news. */
#include "swim_internal.h"

#include <string.h>

#define PLAINTEXT_BUDGET (FTL_UDP_PACKET_MAX - FTL_KEYRING_OVERHEAD)

bool ftl_swim_is_live(const ftl_swim *s, const ftl_member *m, int64_t now_us)
{
	return m->state == FTL_MEMBER_ALIVE || m->state == FTL_MEMBER_SUSPECT;
}

/* Gossip also reaches the recently dead and left, so a falsely declared node hears of it and refutes. */
static bool is_gossip_target(const ftl_swim *s, const ftl_member *m, int64_t now_us)
{
	return ftl_swim_is_live(s, m, now_us) || now_us - m->state_since_us < s->cfg.gossip_to_dead_us;
}

int ftl_swim_random_members(ftl_swim *s, int64_t now_us, int k, const char *exclude,
			    bool (*wanted)(const ftl_swim *, const ftl_member *, int64_t),
			    const ftl_member **out)
{
	int n = 0;
	uint32_t len = s->members.len;
	uint32_t tries = 3 * len < 64u * (uint32_t)k + 64 ? 3 * len : 64u * (uint32_t)k + 64;
	for (uint32_t t = 0; t < tries && n < k; t++) {
		const ftl_member *m = &s->members.arr[ftl_rng_below(&s->rng, len)];
		if (strcmp(m->name, s->name) == 0 || (exclude && strcmp(m->name, exclude) == 0) ||
		    !wanted(s, m, now_us))
			continue;
		bool is_dup = false;
		for (int i = 0; i < n; i++)
			is_dup |= out[i] == m;
		if (!is_dup)
			out[n++] = m;
	}
	return n;
}

static void queue_packet(ftl_swim *s, const char *to_name, const char *to_addr, const uint8_t *plain, size_t len)
{
	ftl_swim_output *out = ftl_fifo_push(&s->outputs);
	if (!out)
		return;
	out->kind = FTL_OUTPUT_PACKET;
	out->is_join = false;
	ftl_copy_str(out->to_name, to_name, FTL_NAME_MAX);
	strcpy(out->to_addr, to_addr);
	memcpy(out->data, plain, len);
	out->len = len;
	s->stats.packets_sent++;
	s->stats.bytes_sent += len + FTL_KEYRING_OVERHEAD;
}

static int rumor_limit(const ftl_swim *s) { return ftl_swim_retransmit_limit(&s->cfg, ftl_swim_live_count(s)); }

void ftl_swim_send(ftl_swim *s, const char *to_name, const char *to_addr, const ftl_msg *primary,
		   const ftl_msg *extra)
{
	uint8_t plain[PLAINTEXT_BUDGET];
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, plain, sizeof(plain));
	if (ftl_wire_packet_add(&p, primary) != 0)
		return;
	s->stats.sent[primary->type]++;
	if (extra && ftl_wire_packet_add(&p, extra) == 0)
		s->stats.sent[extra->type]++;
	s->stats.piggybacked += ftl_bcast_fill(&s->bcast, &p, rumor_limit(s));
	size_t len = ftl_wire_packet_finish(&p);
	queue_packet(s, to_name, to_addr, plain, len);
}

void ftl_swim_gossip(ftl_swim *s, int64_t now_us)
{
	const ftl_member *peers[16];
	int n = ftl_swim_random_members(s, now_us, s->cfg.gossip_nodes, NULL, is_gossip_target, peers);
	for (int i = 0; i < n && ftl_bcast_len(&s->bcast) > 0; i++) {
		uint8_t plain[PLAINTEXT_BUDGET];
		ftl_wire_packet p;
		ftl_wire_packet_init(&p, plain, sizeof(plain));
		size_t added = ftl_bcast_fill(&s->bcast, &p, rumor_limit(s));
		if (added == 0)
			continue;
		s->stats.piggybacked += added;
		size_t len = ftl_wire_packet_finish(&p);
		queue_packet(s, peers[i]->name, peers[i]->addr, plain, len);
	}
}
