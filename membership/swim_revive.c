/* A reaped life that speaks again must prove it is alive now.
 *
 * An alive rumor or push-pull entry for a life we reaped (tombstones.h) is either a replay of old traffic
 * or a member that was cut off long enough to be reaped on this side and is back (a healed partition).
 * The two look the same on the wire, so we ask: a ping to the advertised address, naming that member.
 * Only the live process can ack it (sealed, with a sequence number it has never seen); a replay cannot.
 * On the ack the tombstone goes and the alive applies, a join as any other. At most one question per name
 * per probe interval, and FTL_SWIM_REVIVALS at once, so replays cost a few pings and change nothing. */
#include "swim_internal.h"

#include <string.h>

static ftl_revival *find(ftl_swim *s, const char *name, int64_t now_us)
{
	for (int i = 0; i < FTL_SWIM_REVIVALS; i++)
		if (s->revivals[i].expires_us > now_us && strcmp(s->revivals[i].alive.name, name) == 0)
			return &s->revivals[i];
	return NULL;
}

static ftl_revival *free_slot(ftl_swim *s, int64_t now_us)
{
	for (int i = 0; i < FTL_SWIM_REVIVALS; i++)
		if (s->revivals[i].expires_us <= now_us)
			return &s->revivals[i];
	return NULL;
}

void ftl_swim_revive_ask(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a)
{
	ftl_revival *r;
	if (find(s, a->name, now_us) || !(r = free_slot(s, now_us)))
		return;
	r->alive = *a;
	r->seq = ++s->seq;
	r->expires_us = now_us + s->cfg.probe_interval_us;
	ftl_msg ping = {.type = FTL_MSG_PING};
	ping.u.ping.seq = r->seq;
	strcpy(ping.u.ping.target, a->name);
	strcpy(ping.u.ping.source, s->name);
	strcpy(ping.u.ping.source_addr, s->addr);
	ftl_swim_send(s, a->name, a->addr, &ping, NULL);
}

bool ftl_swim_revive_ack(ftl_swim *s, int64_t now_us, const ftl_msg_ack *ack)
{
	ftl_revival *r = find(s, ack->source, now_us);
	if (!r || r->seq != ack->seq)
		return false;
	ftl_msg_alive alive = r->alive;
	r->expires_us = 0;
	ftl_tombstones_unbury(&s->tombstones, alive.name);
	s->stats.revivals++;
	ftl_swim_on_alive(s, now_us, &alive);
	return true;
}
