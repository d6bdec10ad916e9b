/* Sample messages with every field set, for the unit tests' round trips and the fuzz seed corpus.
 * Header-only so that the single-file unit tests can use it. */
#ifndef FTL_TESTS_WIRE_SAMPLES_H
#define FTL_TESTS_WIRE_SAMPLES_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "membership/message.h"

/* Fills dst with a string of exactly len bytes of c (len < the buffer's size). */
static inline void sample_text(char *dst, size_t len, char c)
{
	memset(dst, c, len);
	dst[len] = '\0';
}

/* A message of the given type with every field set. is_max makes every string and the meta as long as
 * the caps allow and the integers as large; otherwise they are short and the meta empty. */
static inline ftl_msg sample_msg(ftl_msg_type type, bool is_max)
{
	size_t name_len = is_max ? FTL_NAME_MAX - 1 : 2;
	size_t addr_len = is_max ? FTL_ADDR_MAX - 1 : 9;
	ftl_msg m;
	memset(&m, 0, sizeof m);
	m.type = type;
	switch (type) {
	case FTL_MSG_PING:
		m.u.ping.seq = is_max ? UINT32_MAX : 7;
		sample_text(m.u.ping.target, name_len, 't');
		sample_text(m.u.ping.source, name_len, 's');
		sample_text(m.u.ping.source_addr, addr_len, 'a');
		break;
	case FTL_MSG_PING_REQ:
		m.u.ping_req.seq = is_max ? UINT32_MAX : 0;
		sample_text(m.u.ping_req.target, name_len, 't');
		sample_text(m.u.ping_req.target_addr, addr_len, 'b');
		sample_text(m.u.ping_req.source, name_len, 's');
		sample_text(m.u.ping_req.source_addr, addr_len, 'a');
		m.u.ping_req.want_nack = is_max;
		break;
	case FTL_MSG_ACK:
	case FTL_MSG_NACK: /* same layout */
		m.u.ack.seq = is_max ? UINT32_MAX : 1;
		sample_text(m.u.ack.source, name_len, 's');
		break;
	case FTL_MSG_ALIVE:
		sample_text(m.u.alive.name, name_len, 'n');
		m.u.alive.generation = is_max ? UINT64_MAX : 1;
		m.u.alive.incarnation = is_max ? UINT64_MAX - 1 : 0;
		sample_text(m.u.alive.addr, addr_len, 'a');
		m.u.alive.meta_len = is_max ? FTL_META_MAX : 0;
		for (size_t i = 0; i < m.u.alive.meta_len; i++)
			m.u.alive.meta[i] = (uint8_t)i; /* includes NUL bytes: meta is binary */
		m.u.alive.key_fps.count = is_max ? FTL_KEY_FPS_MAX : 1;
		for (size_t i = 0; i < m.u.alive.key_fps.count; i++)
			memset(m.u.alive.key_fps.fp[i], 0xf0 + (int)i, FTL_KEY_FP_SIZE);
		break;
	case FTL_MSG_SUSPECT:
	case FTL_MSG_DEAD:
	case FTL_MSG_LEFT:
		sample_text(m.u.rumor.name, name_len, 'n');
		m.u.rumor.generation = is_max ? UINT64_MAX : 3;
		m.u.rumor.incarnation = is_max ? UINT64_MAX : 4;
		sample_text(m.u.rumor.from, name_len, 'f');
		if (type == FTL_MSG_DEAD)
			m.u.rumor.proof = is_max ? UINT64_MAX : 2; /* 2: FTL_DEATH_REFUSED; the wire carries any u64 */
		break;
	case FTL_MSG_KEY_OP:
		m.u.key_op.serial = is_max ? UINT64_MAX : 9;
		m.u.key_op.op = is_max ? FTL_KEY_REMOVE : FTL_KEY_INSTALL;
		sample_text(m.u.key_op.from, name_len, 'f');
		m.u.key_op.key_len = 32;
		for (size_t i = 0; i < 32; i++)
			m.u.key_op.key[i] = (uint8_t)(i * 7);
		break;
	case FTL_MSG_NAME_TAKEN:
		sample_text(m.u.name_taken.name, name_len, 'n');
		m.u.name_taken.generation = is_max ? UINT64_MAX : 5;
		sample_text(m.u.name_taken.addr, addr_len, 'a');
		sample_text(m.u.name_taken.from, name_len, 'f');
		break;
	case FTL_MSG_TYPE_MAX: /* left invalid: the encoder refuses it */
		break;
	}
	return m;
}

/* A push-pull header and n members in every state, with meta from full to empty and from none to a full
 * keyring of key fingerprints. */
static inline void sample_push_pull(ftl_push_pull *hdr, ftl_pp_member *m, uint32_t n)
{
	memset(hdr, 0, sizeof *hdr);
	hdr->is_join = true;
	sample_text(hdr->source, FTL_NAME_MAX - 1, 's');
	hdr->count = n;
	memset(m, 0, n * sizeof *m);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(m[i].name, sizeof m[i].name, "worker-%u", i);
		snprintf(m[i].addr, sizeof m[i].addr, "10.0.0.%u:7946", i % 256);
		m[i].generation = (uint64_t)i << 40;
		m[i].incarnation = UINT64_MAX - i;
		m[i].state = (ftl_member_state)(i % FTL_MEMBER_STATE_MAX);
		m[i].proof = m[i].state == FTL_MEMBER_DEAD ? 4 : 0; /* 4: FTL_DEATH_WITNESSED */
		m[i].meta_len = (uint16_t)(i == 0 ? FTL_META_MAX : (i * 3) % FTL_META_MAX);
		memset(m[i].meta, 'm' + (int)(i % 8), m[i].meta_len);
		m[i].key_fps.count = (uint8_t)(i % (FTL_KEY_FPS_MAX + 1)); /* none to a full keyring */
		for (uint8_t k = 0; k < m[i].key_fps.count; k++)
			memset(m[i].key_fps.fp[k], k, FTL_KEY_FP_SIZE);
	}
}

#endif
