/* Everything that arrives, already opened by the caller's peer channel (agent/seal.h): a datagram is
 * decoded and each message handed to the probe or rumor logic; push-pull frames are merged member by
 * member. What fails to decode is dropped and counted, never trusted in part; the channel counts what
 * did not open here too (ftl_swim_count_drop), so one table says what was dropped and why. */
#include "swim_internal.h"

#include <stdlib.h>
#include <string.h>

/* A push-pull frame of len bytes cannot hold more members than this (each needs several bytes), so
 * the decode buffer is sized by what arrived, never by a count the peer claims. */
#define PP_MIN_MEMBER_BYTES 8
#define PP_MAX_MEMBERS 100000

static void dispatch(ftl_swim *s, int64_t now_us, const ftl_msg *m)
{
	if (s->is_name_taken)
		return; /* refused by a message earlier in this packet: we take in nothing more */
	switch (m->type) {
	case FTL_MSG_PING: ftl_swim_on_ping(s, now_us, &m->u.ping); break;
	case FTL_MSG_PING_REQ: ftl_swim_on_ping_req(s, now_us, &m->u.ping_req); break;
	case FTL_MSG_ACK: ftl_swim_on_ack(s, now_us, &m->u.ack); break;
	case FTL_MSG_NACK: ftl_swim_on_nack(s, now_us, &m->u.nack); break;
	case FTL_MSG_ALIVE: ftl_swim_on_alive(s, now_us, &m->u.alive); break;
	case FTL_MSG_SUSPECT: ftl_swim_on_suspect(s, now_us, &m->u.rumor); break;
	case FTL_MSG_DEAD: ftl_swim_on_dead(s, now_us, &m->u.rumor); break;
	case FTL_MSG_LEFT: ftl_swim_on_left(s, now_us, &m->u.rumor); break;
	case FTL_MSG_KEY_OP: ftl_swim_on_key_op(s, now_us, &m->u.key_op); break;
	case FTL_MSG_NAME_TAKEN: ftl_swim_on_name_taken(s, now_us, &m->u.name_taken); break;
	default: break;
	}
}

static bool is_request(ftl_msg_type t) { return t == FTL_MSG_PING || t == FTL_MSG_PING_REQ; }

void ftl_swim_count_drop(ftl_swim *s, ftl_swim_drop why)
{
	if ((unsigned)why < FTL_DROP_MAX)
		s->stats.dropped[why]++;
}

void ftl_swim_receive(ftl_swim *s, int64_t now_us, const uint8_t *data, size_t len)
{
	if (s->is_name_taken)
		return; /* we have stopped taking part (swim_name.c) */
	s->stats.packets_received++;
	s->stats.bytes_received += len + FTL_KEYRING_OVERHEAD;
	ftl_msg msgs[FTL_WIRE_MAX_MSGS];
	size_t n;
	if (ftl_wire_decode_packet(data, len, msgs, FTL_WIRE_MAX_MSGS, &n) != 0) {
		s->stats.dropped[FTL_DROP_MALFORMED]++;
		return;
	}
	/* Rumors first, requests last: the ack we send to a ping then carries whatever this packet taught us
	 * (a suspect pinged with its suspicion refutes on that very ack). */
	for (size_t i = 0; i < n; i++) {
		s->stats.received[msgs[i].type]++;
		if (!is_request(msgs[i].type))
			dispatch(s, now_us, &msgs[i]);
	}
	for (size_t i = 0; i < n; i++)
		if (is_request(msgs[i].type))
			dispatch(s, now_us, &msgs[i]);
}

ftl_err ftl_swim_push_pull_encode(ftl_swim *s, bool is_join, uint8_t **frame, size_t *len)
{
	uint32_t n = s->members.len;
	ftl_pp_member *arr = calloc(n, sizeof(*arr));
	if (!arr)
		return ftl_diag_set(FTL_ERR_SYSTEM, "push-pull: out of memory for a frame of %u members", n);
	for (uint32_t i = 0; i < n; i++) {
		const ftl_member *m = &s->members.arr[i];
		strcpy(arr[i].name, m->name);
		strcpy(arr[i].addr, m->addr);
		arr[i].generation = m->generation;
		arr[i].incarnation = m->incarnation;
		arr[i].state = m->state;
		arr[i].proof = m->state == FTL_MEMBER_DEAD ? m->death_proof : 0;
		arr[i].meta_len = m->meta_len;
		if (m->meta_len)
			memcpy(arr[i].meta, m->meta, m->meta_len);
		if (m->key_fps)
			arr[i].key_fps = *m->key_fps;
	}
	ftl_push_pull hdr = {.is_join = is_join, .count = n, .key_version = s->key_version};
	strcpy(hdr.source, s->name);
	int rc = ftl_wire_encode_push_pull(&hdr, arr, frame, len);
	free(arr);
	if (rc != 0) /* our table holds only what the decoder or ftl_swim_new checked: only the buffer can fail */
		return ftl_diag_set(FTL_ERR_SYSTEM, "push-pull: out of memory encoding a frame of %u members", n);
	return FTL_OK;
}

static void merge_member(ftl_swim *s, int64_t now_us, const ftl_pp_member *pm, const char *source)
{
	ftl_msg msg;
	memset(&msg, 0, sizeof(msg));
	if (pm->state == FTL_MEMBER_ALIVE) {
		ftl_msg_alive *a = &msg.u.alive;
		strcpy(a->name, pm->name);
		strcpy(a->addr, pm->addr);
		a->generation = pm->generation;
		a->incarnation = pm->incarnation;
		a->meta_len = pm->meta_len;
		memcpy(a->meta, pm->meta, pm->meta_len);
		a->key_fps = pm->key_fps;
		ftl_swim_on_alive(s, now_us, a);
		return;
	}
	ftl_msg_rumor *r = &msg.u.rumor;
	strcpy(r->name, pm->name);
	strcpy(r->from, source);
	r->generation = pm->generation;
	r->incarnation = pm->incarnation;
	bool is_proven = pm->state == FTL_MEMBER_DEAD &&
			 (pm->proof == FTL_DEATH_REFUSED || pm->proof == FTL_DEATH_WITNESSED);
	if (pm->state == FTL_MEMBER_LEFT)
		ftl_swim_on_left(s, now_us, r);
	else if (is_proven) { /* a proven death leaves nothing to refute: the process is gone */
		r->proof = pm->proof;
		ftl_swim_on_dead(s, now_us, r);
	} else /* a peer's dead is only our suspect: the member gets its chance to refute (memberlist) */
		ftl_swim_on_suspect(s, now_us, r);
}

ftl_err ftl_swim_push_pull_merge(ftl_swim *s, int64_t now_us, const uint8_t *frame, size_t len, bool *is_join)
{
	size_t max = len / PP_MIN_MEMBER_BYTES + 1;
	if (max > PP_MAX_MEMBERS)
		max = PP_MAX_MEMBERS;
	ftl_pp_member *arr = calloc(max, sizeof(*arr));
	ftl_push_pull hdr;
	ftl_err err = FTL_OK;
	if (!arr)
		err = ftl_diag_set(FTL_ERR_SYSTEM, "push-pull frame of %zu bytes: out of memory", len);
	else if (ftl_wire_decode_push_pull(frame, len, &hdr, arr, max) != 0)
		err = ftl_diag_prefix("push-pull frame of %zu bytes: ", len); /* the decoder's reason */
	if (err) {
		s->stats.dropped[FTL_DROP_PUSH_PULL]++;
		free(arr);
		return err;
	}
	ftl_swim_learn_key_version(s, hdr.key_version);
	for (uint32_t i = 0; i < hdr.count && !s->is_name_taken; i++)
		merge_member(s, now_us, &arr[i], hdr.source);
	if (is_join)
		*is_join = hdr.is_join;
	s->stats.push_pulls++;
	free(arr);
	return FTL_OK;
}
