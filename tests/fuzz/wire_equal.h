/* Field-by-field equality of decoded messages, for round-trip checks in the unit tests and the fuzz
 * targets. Written independently of the codec's field tables on purpose: a test oracle that shared the
 * codec's tables would share its mistakes. Header-only so that the single-file unit tests can use it. */
#ifndef FTL_TESTS_WIRE_EQUAL_H
#define FTL_TESTS_WIRE_EQUAL_H

#include <stdbool.h>
#include <string.h>

#include "membership/message.h"

static inline bool wire_meta_equal(uint16_t a_len, const uint8_t *a, uint16_t b_len, const uint8_t *b)
{
	return a_len == b_len && a_len <= FTL_META_MAX && memcmp(a, b, a_len) == 0;
}

static inline bool wire_key_fps_equal(const ftl_key_fps *a, const ftl_key_fps *b)
{
	return a->count == b->count && a->count <= FTL_KEY_FPS_MAX &&
	       memcmp(a->fp, b->fp, (size_t)a->count * FTL_KEY_FP_SIZE) == 0;
}

static inline bool wire_msg_equal(const ftl_msg *a, const ftl_msg *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case FTL_MSG_PING:
		return a->u.ping.seq == b->u.ping.seq && !strcmp(a->u.ping.target, b->u.ping.target) &&
		       !strcmp(a->u.ping.source, b->u.ping.source) &&
		       !strcmp(a->u.ping.source_addr, b->u.ping.source_addr);
	case FTL_MSG_PING_REQ:
		return a->u.ping_req.seq == b->u.ping_req.seq &&
		       !strcmp(a->u.ping_req.target, b->u.ping_req.target) &&
		       !strcmp(a->u.ping_req.target_addr, b->u.ping_req.target_addr) &&
		       !strcmp(a->u.ping_req.source, b->u.ping_req.source) &&
		       !strcmp(a->u.ping_req.source_addr, b->u.ping_req.source_addr) &&
		       a->u.ping_req.want_nack == b->u.ping_req.want_nack;
	case FTL_MSG_ACK:
		return a->u.ack.seq == b->u.ack.seq && !strcmp(a->u.ack.source, b->u.ack.source);
	case FTL_MSG_NACK:
		return a->u.nack.seq == b->u.nack.seq && !strcmp(a->u.nack.source, b->u.nack.source);
	case FTL_MSG_ALIVE:
		return !strcmp(a->u.alive.name, b->u.alive.name) &&
		       a->u.alive.generation == b->u.alive.generation &&
		       a->u.alive.incarnation == b->u.alive.incarnation &&
		       !strcmp(a->u.alive.addr, b->u.alive.addr) &&
		       wire_meta_equal(a->u.alive.meta_len, a->u.alive.meta, b->u.alive.meta_len, b->u.alive.meta) &&
		       wire_key_fps_equal(&a->u.alive.key_fps, &b->u.alive.key_fps);
	case FTL_MSG_SUSPECT:
	case FTL_MSG_DEAD:
	case FTL_MSG_LEFT:
		return !strcmp(a->u.rumor.name, b->u.rumor.name) &&
		       a->u.rumor.generation == b->u.rumor.generation &&
		       a->u.rumor.incarnation == b->u.rumor.incarnation &&
		       !strcmp(a->u.rumor.from, b->u.rumor.from) && a->u.rumor.proof == b->u.rumor.proof;
	case FTL_MSG_KEY_OP:
		return a->u.key_op.serial == b->u.key_op.serial && a->u.key_op.op == b->u.key_op.op &&
		       !strcmp(a->u.key_op.from, b->u.key_op.from) &&
		       wire_meta_equal(a->u.key_op.key_len, a->u.key_op.key, b->u.key_op.key_len, b->u.key_op.key);
	case FTL_MSG_NAME_TAKEN:
		return !strcmp(a->u.name_taken.name, b->u.name_taken.name) &&
		       a->u.name_taken.generation == b->u.name_taken.generation &&
		       !strcmp(a->u.name_taken.addr, b->u.name_taken.addr) &&
		       !strcmp(a->u.name_taken.from, b->u.name_taken.from);
	case FTL_MSG_TYPE_MAX:
		break;
	}
	return false;
}

static inline bool wire_pp_member_equal(const ftl_pp_member *a, const ftl_pp_member *b)
{
	return !strcmp(a->name, b->name) && a->generation == b->generation && a->incarnation == b->incarnation &&
	       !strcmp(a->addr, b->addr) && a->state == b->state && a->proof == b->proof &&
	       wire_meta_equal(a->meta_len, a->meta, b->meta_len, b->meta) &&
	       wire_key_fps_equal(&a->key_fps, &b->key_fps);
}

static inline bool wire_push_pull_equal(const ftl_push_pull *a, const ftl_pp_member *am, const ftl_push_pull *b,
					const ftl_pp_member *bm)
{
	if (a->is_join != b->is_join || strcmp(a->source, b->source) != 0 || a->count != b->count)
		return false;
	for (uint32_t i = 0; i < a->count; i++)
		if (!wire_pp_member_equal(&am[i], &bm[i]))
			return false;
	return true;
}

#endif
