/* Sample rendezvous messages with every field of their type set, and a field-by-field equality written
 * independently of the codec's tables (an oracle that shared them would share their mistakes), for the
 * codec's unit tests, the fuzz target's round trip and its seed corpus. Header-only. */
#ifndef FTL_TESTS_RDV_SAMPLES_H
#define FTL_TESTS_RDV_SAMPLES_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rendezvous/rdv_msg.h"

/* A message of the given type. Views get n members from members[] (filled here); is_max makes every
 * string as long as the caps allow, the blob full and the integers large. */
static inline rdv_msg rdv_sample_msg(rdv_msg_type type, bool is_max, ftl_rdv_member *members, uint32_t n)
{
	rdv_msg m;
	memset(&m, 0, sizeof m);
	m.type = type;
	snprintf(m.from, sizeof m.from, "%s", is_max ? "w-0123456789-0123456789-0123456789-0123456789-0123456789-01234" : "w1");
	m.generation = is_max ? UINT64_MAX : 1700000000123ULL;
	m.epoch = is_max ? UINT64_MAX - 1 : 4;
	m.view_digest = 0x1234567890abcdefULL;
	m.lineage = is_max ? UINT64_MAX : 77;
	m.view_size = is_max ? FTL_RDV_MAX_MEMBERS : 3;
	m.steps = is_max ? UINT64_MAX : 0; /* optional: present at max, absent else */
	bool has_ballot = type != RDV_MSG_READY && type != RDV_MSG_COMMIT;
	bool has_view = type == RDV_MSG_ACCEPT || type == RDV_MSG_COMMIT || type == RDV_MSG_PROMISE;
	if (type == RDV_MSG_READY) {
		snprintf(m.data_addr, sizeof m.data_addr, "%s", is_max ? "[fd00:0000:0000:0000:0000:0000:0000:0001]:65535-padding-padding" : "10.0.0.1:29500");
		m.candidate_digest = 0xfeedULL;
		m.survivors_digest = is_max ? UINT64_MAX : 0;
		m.rebuild_epoch = is_max ? m.epoch : 0; /* the optional requests: present at max, absent else */
		m.waive_epoch = is_max ? m.epoch : 0;
		m.max_epoch = is_max ? m.epoch : 0; /* the optional scale request likewise */
		m.max_request = is_max ? FTL_RDV_MAX_MEMBERS : 0;
		m.bench_epoch = is_max ? m.epoch : 0; /* the optional bench request likewise */
		if (is_max) {
			snprintf(m.bench.name, sizeof m.bench.name, "%.58s-slow", m.from);
			m.bench.generation = UINT64_MAX;
		}
	}
	if (has_ballot) {
		m.ballot.round = is_max ? UINT64_MAX : 3;
		snprintf(m.ballot.by, sizeof m.ballot.by, "%s", m.from);
	}
	if (type == RDV_MSG_PROMISE) {
		m.accepted.round = 2;
		snprintf(m.accepted.by, sizeof m.accepted.by, "w0");
	}
	if (has_view) {
		m.view.epoch = m.epoch + (type != RDV_MSG_COMMIT);
		m.view.lineage = m.lineage;
		m.view.n = n;
		m.view.members = members;
		for (uint32_t i = 0; i < n; i++) {
			memset(&members[i], 0, sizeof members[i]);
			if (is_max)
				snprintf(members[i].name, sizeof members[i].name, "%.58s-%04u", m.from, i % 10000u);
			else
				snprintf(members[i].name, sizeof members[i].name, "w%u", i);
			members[i].generation = 1000 + i;
			snprintf(members[i].data_addr, sizeof members[i].data_addr, "10.0.%u.%u:29500", i / 256, i % 256);
			if (is_max) { /* the optional replica part: present at max, absent else */
				snprintf(members[i].replica, sizeof members[i].replica, "%.58s-r%03u", m.from, i / 2);
				members[i].replica_index = i % 2;
				members[i].replica_size = 2;
			}
		}
		m.view.max_workers = is_max ? FTL_RDV_MAX_MEMBERS : 0; /* optional: present at max */
		if (is_max) { /* the optional benched member likewise */
			snprintf(m.view.benched.name, sizeof m.view.benched.name, "%s", members[n > 1 ? 1 : 0].name);
			m.view.benched.generation = UINT64_MAX - 1;
		}
		m.view.blob_len = is_max ? FTL_RDV_BLOB_MAX : 5;
		for (int i = 0; i < m.view.blob_len; i++)
			m.view.blob[i] = (uint8_t)(i * 7 + 1);
	}
	return m;
}

static inline bool rdv_member_equal(const ftl_rdv_member *a, const ftl_rdv_member *b)
{
	return !strcmp(a->name, b->name) && a->generation == b->generation && !strcmp(a->data_addr, b->data_addr) &&
	       !strcmp(a->replica, b->replica) && a->replica_index == b->replica_index &&
	       a->replica_size == b->replica_size;
}

static inline bool rdv_view_equal(const ftl_rdv_view *a, const ftl_rdv_view *b)
{
	if (a->epoch != b->epoch || a->lineage != b->lineage || a->n != b->n || a->max_workers != b->max_workers ||
	    strcmp(a->benched.name, b->benched.name) != 0 || a->benched.generation != b->benched.generation ||
	    a->blob_len != b->blob_len ||
	    a->blob_len > FTL_RDV_BLOB_MAX || memcmp(a->blob, b->blob, a->blob_len) != 0)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (!rdv_member_equal(&a->members[i], &b->members[i]))
			return false;
	return true;
}

static inline bool rdv_msg_equal(const rdv_msg *a, const rdv_msg *b)
{
	return a->type == b->type && !strcmp(a->from, b->from) && a->generation == b->generation &&
	       a->rebuild_epoch == b->rebuild_epoch && a->waive_epoch == b->waive_epoch &&
	       a->max_epoch == b->max_epoch && a->max_request == b->max_request &&
	       a->bench_epoch == b->bench_epoch && !strcmp(a->bench.name, b->bench.name) &&
	       a->bench.generation == b->bench.generation &&
	       a->epoch == b->epoch && a->view_digest == b->view_digest && a->lineage == b->lineage &&
	       a->view_size == b->view_size && a->steps == b->steps && !strcmp(a->data_addr, b->data_addr) &&
	       a->candidate_digest == b->candidate_digest && a->survivors_digest == b->survivors_digest &&
	       a->ballot.round == b->ballot.round && !strcmp(a->ballot.by, b->ballot.by) &&
	       a->accepted.round == b->accepted.round && !strcmp(a->accepted.by, b->accepted.by) &&
	       rdv_view_equal(&a->view, &b->view);
}

#endif
