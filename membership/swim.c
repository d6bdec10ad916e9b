/* ftl_swim lifecycle, the timer wheel of one node (tick and next deadline), the output and event
 * queues (base/fifo.h), and the small entry points: join, leave, hint, metadata. This is the face: it calls
 * the satellites (swim_*.c), and they never call back into it; what they share sits below them, in
 * swim_state.c. */
#include "swim_internal.h"

#include <stdlib.h>
#include <string.h>

const char *const ftl_swim_event_type_strs[FTL_EVENT_TYPE_MAX] = {
	"join", "update", "suspect", "alive", "dead", "left", "reap", "name_refused", "name_taken",
};

const char *const ftl_death_reason_strs[FTL_DEATH_REASON_MAX] = {
	"", "suspicion timed out", "refused by its own address", "gossip", "witnessed on its host",
};

const char *const ftl_swim_check_result_strs[FTL_CHECK_RESULT_MAX] = {
	"accepted", "refused", "no answer",
};

const char *const ftl_swim_drop_strs[FTL_DROP_MAX] = {
	"keyring", "malformed", "wrong_target", "unknown_seq", "push_pull", "bad_addr", "member_table_full",
};

/* ---- lifecycle ---- */

/* FTL_OK, or FTL_ERR_INVALID with the option at fault in the diag. */
static ftl_err check_options(const ftl_swim_options *o)
{
	if (!o->name || !o->name[0] || strlen(o->name) >= FTL_NAME_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "name must be 1 to 63 bytes");
	if (!o->addr || !o->addr[0] || strlen(o->addr) >= FTL_ADDR_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "addr must be a host:port of 1 to 63 bytes");
	if (o->meta_len > FTL_META_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "metadata must be at most 256 bytes");
	if (!o->keyring)
		return ftl_diag_set(FTL_ERR_INVALID, "a keyring is required (use an insecure keyring to send plaintext)");
	const char *why;
	if (ftl_swim_config_check(&o->config, &why) != FTL_SWIM_FIELD_NONE)
		return ftl_diag_set(FTL_ERR_INVALID, "%s", why);
	return FTL_OK;
}

ftl_swim *ftl_swim_new(const ftl_swim_options *o, int64_t now_us)
{
	if (check_options(o) != FTL_OK)
		return NULL;
	ftl_swim *s = calloc(1, sizeof(*s));
	if (!s) {
		ftl_diag_set(FTL_ERR_SYSTEM, "out of memory");
		return NULL;
	}
	s->cfg = o->config;
	s->keyring = o->keyring;
	s->is_addr_valid = o->is_addr_valid;
	ftl_rng_seed(&s->rng, o->seed);
	strcpy(s->name, o->name);
	strcpy(s->addr, o->addr);
	s->is_key_version_known = true; /* until a join: a node with no seeds starts the cluster's key history */
	ftl_members_init(&s->members);
	ftl_bcast_init(&s->bcast);
	ftl_awareness_init(&s->health, s->cfg.awareness_max);
	ftl_fifo_create(&s->outputs, sizeof(ftl_swim_output));
	ftl_fifo_create(&s->events, sizeof(ftl_swim_event));
	s->seq = (uint32_t)ftl_rng_next(&s->rng);
	ftl_member *self = ftl_swim_add_member(s, o->name, o->addr, now_us);
	if (!self || ftl_members_set_meta(self, o->meta, o->meta_len) != FTL_OK ||
	    ftl_swim_take_key_fps(s) != FTL_OK) {
		ftl_swim_delete(s); /* the reason is in the diag */
		return NULL;
	}
	self->generation = o->generation;
	/* Stagger timers so that nodes started together do not probe in lockstep. */
	s->next_probe_us = now_us + (int64_t)ftl_rng_below(&s->rng, (uint32_t)s->cfg.probe_interval_us);
	s->next_gossip_us = now_us + (int64_t)ftl_rng_below(&s->rng, (uint32_t)s->cfg.gossip_interval_us);
	/* As if the last exchange were a random part of an interval ago: nodes started together spread out. */
	s->last_push_pull_us = now_us - (int64_t)ftl_rng_below(&s->rng, (uint32_t)(s->cfg.push_pull_interval_us / 1000 + 1)) * 1000;
	s->next_reap_us = now_us;
	ftl_swim_broadcast_alive(s, self);
	return s;
}

void ftl_swim_delete(ftl_swim *s)
{
	if (!s)
		return;
	ftl_members_free(&s->members);
	ftl_tombstones_free(&s->tombstones);
	ftl_bcast_free(&s->bcast);
	free(s->suspects);
	free(s->suspect_due_us);
	ftl_fifo_destroy(&s->outputs);
	ftl_fifo_destroy(&s->events);
	free(s);
}

/* ---- timers ---- */

static void reap(ftl_swim *s, int64_t now_us)
{
	if (s->count[FTL_MEMBER_DEAD] + s->count[FTL_MEMBER_LEFT] == 0)
		return;
	for (uint32_t i = s->members.len; i-- > 0;) {
		ftl_member *m = &s->members.arr[i];
		if ((m->state == FTL_MEMBER_DEAD || m->state == FTL_MEMBER_LEFT) &&
		    now_us - m->state_since_us >= s->cfg.reap_after_us && strcmp(m->name, s->name) != 0) {
			ftl_swim_emit(s, now_us, FTL_EVENT_REAP, m);
			ftl_tombstones_add(&s->tombstones, m->name, m->generation);
			s->count[m->state]--;
			ftl_members_remove(&s->members, &s->rng, m);
		}
	}
}

static void push_pull_tick(ftl_swim *s, int64_t now_us)
{
	const ftl_member *peer;
	if (ftl_swim_random_members(s, now_us, 1, NULL, ftl_swim_is_live, &peer) == 1) {
		ftl_swim_output *out = ftl_fifo_push(&s->outputs);
		if (out) {
			out->kind = FTL_OUTPUT_PUSH_PULL;
			out->is_join = false;
			strcpy(out->to_addr, peer->addr);
			strcpy(out->to_name, peer->name);
			out->len = 0;
		}
	}
}

/* Scaled by the current size, so a cluster that grew since the last exchange slows down at once. */
static int64_t next_push_pull(const ftl_swim *s)
{
	return s->last_push_pull_us + ftl_swim_push_pull_interval_us(&s->cfg, ftl_swim_live_count(s));
}

void ftl_swim_tick(ftl_swim *s, int64_t now_us)
{
	if (s->is_name_taken)
		return; /* we have stopped taking part (swim_name.c) */
	ftl_swim_sync_key_fps(s);
	ftl_swim_probe_tick(s, now_us);
	ftl_swim_relay_tick(s, now_us);
	ftl_swim_expire_suspicions(s, now_us);
	if (now_us >= s->next_gossip_us && ftl_bcast_len(&s->bcast) > 0) {
		ftl_swim_gossip(s, now_us);
		s->next_gossip_us = now_us + s->cfg.gossip_interval_us;
	}
	if (s->cfg.push_pull_interval_us > 0 && now_us >= next_push_pull(s)) {
		push_pull_tick(s, now_us);
		s->last_push_pull_us = now_us;
	}
	if (now_us >= s->next_reap_us) {
		reap(s, now_us);
		s->next_reap_us = now_us + s->cfg.reap_after_us / 4 + 1;
	}
}

int64_t ftl_swim_next_deadline(const ftl_swim *s)
{
	if (s->is_name_taken)
		return INT64_MAX;
	int64_t t = ftl_swim_probe_deadline(s);
	t = ftl_deadline_min(t, ftl_swim_relay_deadline(s));
	t = ftl_deadline_min(t, ftl_swim_next_suspicion_deadline(s));
	if (ftl_bcast_len(&s->bcast) > 0)
		t = ftl_deadline_min(t, s->next_gossip_us);
	if (s->cfg.push_pull_interval_us > 0)
		t = ftl_deadline_min(t, next_push_pull(s));
	if (s->count[FTL_MEMBER_DEAD] + s->count[FTL_MEMBER_LEFT] > 0)
		t = ftl_deadline_min(t, s->next_reap_us);
	return t;
}

/* ---- entry points ---- */

void ftl_swim_join(ftl_swim *s, const char *const *seed_addrs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(seed_addrs[i], s->addr) == 0 || strlen(seed_addrs[i]) >= FTL_ADDR_MAX)
			continue;
		if (s->stats.push_pulls == 0) /* key changes wait until a push-pull tells us the key version */
			s->is_key_version_known = false;
		ftl_swim_output *out = ftl_fifo_push(&s->outputs);
		if (!out)
			return;
		out->kind = FTL_OUTPUT_PUSH_PULL;
		out->is_join = true;
		strcpy(out->to_addr, seed_addrs[i]);
		out->to_name[0] = '\0';
		out->len = 0;
	}
}

void ftl_swim_leave(ftl_swim *s, int64_t now_us)
{
	if (s->is_leaving)
		return;
	s->is_leaving = true;
	s->probe.is_active = false;
	ftl_member *self = ftl_swim_self(s);
	ftl_swim_set_state(s, self, FTL_MEMBER_LEFT, now_us);
	ftl_swim_broadcast_rumor(s, FTL_MSG_LEFT, self, s->name);
	s->next_gossip_us = now_us;
}

/* Done once the rumor has been sent as often as any rumor is, or at once when nobody is left to tell. */
bool ftl_swim_leave_done(const ftl_swim *s)
{
	return s->is_leaving && (!ftl_bcast_has(&s->bcast, s->name) || ftl_swim_live_count(s) == 0);
}

void ftl_swim_hint(ftl_swim *s, int64_t now_us, const char *name)
{
	const ftl_member *m = ftl_members_find(&s->members, name);
	if (!m || s->is_leaving || !ftl_swim_is_live(s, m, now_us) || strcmp(name, s->name) == 0)
		return;
	ftl_swim_probe_soon(s, now_us, m);
	ftl_swim_proof_request(s, now_us, m); /* a reset may be the peer's kernel telling us it is gone */
}

ftl_err ftl_swim_set_meta(ftl_swim *s, int64_t now_us, const uint8_t *meta, uint16_t len)
{
	ftl_member *self = ftl_swim_self(s);
	if (len > FTL_META_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "metadata of %u bytes: at most %d fit in a member's alive message",
				    (unsigned)len, FTL_META_MAX);
	ftl_err err = ftl_members_set_meta(self, meta, len);
	if (err)
		return err;
	self->incarnation++;
	ftl_swim_broadcast_alive(s, self);
	return FTL_OK;
}

/* ---- outputs and reading ---- */

bool ftl_swim_next_output(ftl_swim *s, ftl_swim_output *out)
{
	ftl_swim_output *o = ftl_fifo_pop(&s->outputs);
	if (!o)
		return false;
	out->kind = o->kind;
	out->is_join = o->is_join;
	memcpy(out->to_addr, o->to_addr, sizeof(out->to_addr));
	memcpy(out->to_name, o->to_name, sizeof(out->to_name));
	out->generation = o->generation;
	out->timeout_us = o->timeout_us;
	out->len = o->len;
	memcpy(out->data, o->data, o->len);
	return true;
}

bool ftl_swim_next_event(ftl_swim *s, ftl_swim_event *ev)
{
	ftl_swim_event *e = ftl_fifo_pop(&s->events);
	if (!e)
		return false;
	*ev = *e;
	return true;
}

const char *ftl_swim_name(const ftl_swim *s) { return s->name; }
uint64_t ftl_swim_generation(const ftl_swim *s) { return ftl_swim_find(s, s->name)->generation; }
uint64_t ftl_swim_incarnation(const ftl_swim *s) { return ftl_swim_find(s, s->name)->incarnation; }
const ftl_members *ftl_swim_members(const ftl_swim *s) { return &s->members; }
const ftl_member *ftl_swim_find(const ftl_swim *s, const char *name) { return ftl_members_find(&s->members, name); }
uint32_t ftl_swim_count(const ftl_swim *s, ftl_member_state state) { return s->count[state]; }
int ftl_swim_health_score(const ftl_swim *s) { return s->health.score; }
const ftl_swim_stats *ftl_swim_get_stats(const ftl_swim *s) { return &s->stats; }
const ftl_swim_config *ftl_swim_get_config(const ftl_swim *s) { return &s->cfg; }
ftl_keyring *ftl_swim_keyring(ftl_swim *s) { return s->keyring; }
