/* The joined node's own rules, on three nodes wired by hand (every output delivered at once, time moved in
 * 1 ms steps): the member feed gives the rendezvous only members that train; a death of a view member and a
 * new view carry the abort verdict, a death of a bystander does not; the seed rule joins only what it does
 * not see alive; a comm hint makes the node check the peer at once; a leave ends with FTL_NODE_EVENT_LEFT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "membership/swim.h" /* the parts themselves (ftl_node_swim, ftl_node_rdv) */
#include "node/node.h"
#include "node/node_meta.h"
#include "rendezvous/rendezvous.h"

#define MS 1000LL
#define NODES 3

typedef struct wire {
	ftl_node *nodes[NODES];   /* NULL: crashed */
	ftl_keyring *keyring;
	int64_t now;
	int aborts[NODES];        /* events with is_abort, per node */
	int views[NODES];
	int left[NODES];
	char last_why[NODES][160];
	int dead_seen[NODES];
	int checks[NODES];        /* proof-of-death checks asked for */
	int joins[NODES];         /* join push-pulls started */
	bool is_host_lost[NODES]; /* crashed with its host: checks get no answer (no refusal proves the death) */
} wire;

static int index_of(const char *addr) { return addr[0] == 'n' && addr[1] - '0' < NODES ? addr[1] - '0' : -1; }

static void pump_one(wire *w, int i);

static void deliver_push_pull(wire *w, int from, const ftl_swim_output *out)
{
	int to = index_of(out->to_addr);
	w->joins[from] += out->is_join;
	if (to < 0 || !w->nodes[to])
		return;
	uint8_t *frame;
	size_t len;
	assert_int_equal(ftl_swim_push_pull_encode(ftl_node_swim(w->nodes[from]), out->is_join, &frame, &len), 0);
	ftl_node_push_pull_merge(w->nodes[to], w->now, frame, len, NULL);
	free(frame);
	assert_int_equal(ftl_swim_push_pull_encode(ftl_node_swim(w->nodes[to]), false, &frame, &len), 0);
	ftl_node_push_pull_merge(w->nodes[from], w->now, frame, len, NULL);
	free(frame);
}

/* Delivers everything node i has to send, and counts what it decided. */
static void pump_one(wire *w, int i)
{
	ftl_node *n = w->nodes[i];
	if (!n)
		return;
	ftl_swim_output out;
	while (ftl_node_next_output(n, &out)) {
		int to = index_of(out.to_addr);
		if (out.kind == FTL_OUTPUT_PACKET && to >= 0 && w->nodes[to])
			ftl_node_receive_datagram(w->nodes[to], w->now, out.data, out.len);
		else if (out.kind == FTL_OUTPUT_PUSH_PULL)
			deliver_push_pull(w, i, &out);
		else if (out.kind == FTL_OUTPUT_CHECK) {
			w->checks[i]++;
			if (to < 0 || !w->is_host_lost[to])
				ftl_node_check_done(n, w->now, out.to_name, out.generation, out.to_addr,
						    to >= 0 && w->nodes[to] ? FTL_CHECK_ACCEPTED : FTL_CHECK_REFUSED);
		}
	}
	ftl_node_frame f;
	while (ftl_node_next_frame(n, &f)) {
		int to = index_of(f.to_addr);
		if (to >= 0 && w->nodes[to])
			ftl_node_receive_frame(w->nodes[to], w->now, f.msg.data, f.msg.len);
		ftl_node_frame_free(&f);
	}
	ftl_node_event ev;
	while (ftl_node_next_event(n, &ev)) {
		if (ev.is_abort) {
			w->aborts[i]++;
			snprintf(w->last_why[i], sizeof(w->last_why[i]), "%s", ev.why);
		}
		w->views[i] += ev.kind == FTL_NODE_EVENT_VIEW;
		w->left[i] += ev.kind == FTL_NODE_EVENT_LEFT;
		w->dead_seen[i] += ev.kind == FTL_NODE_EVENT_MEMBER && ev.member.type == FTL_EVENT_DEAD;
	}
}

static void run_for(wire *w, int64_t dt)
{
	for (int64_t end = w->now + dt; w->now < end; w->now += MS) {
		for (int round = 0; round < 4; round++)
			for (int i = 0; i < NODES; i++)
				pump_one(w, i);
		for (int i = 0; i < NODES; i++)
			if (w->nodes[i] && ftl_node_next_deadline(w->nodes[i]) <= w->now)
				ftl_node_tick(w->nodes[i], w->now);
	}
}

/* Nodes 0 and 1 train; node 2 is a plain member (no data address). Node 1 and 2 join through node 0. */
static void start(wire *w)
{
	memset(w, 0, sizeof(*w));
	w->keyring = ftl_keyring_new_insecure("test");
	assert_non_null(w->keyring);
	for (int i = 0; i < NODES; i++) {
		char name[8], addr[8], data[32];
		uint8_t meta[64];
		snprintf(name, sizeof(name), "w%d", i);
		snprintf(addr, sizeof(addr), "n%d", i);
		snprintf(data, sizeof(data), "10.0.0.%d:29500", i);
		bool is_training = i < 2;
		ftl_rdv_member self = {0};
		ftl_copy_str(self.data_addr, data, sizeof self.data_addr);
		size_t meta_len = is_training ? ftl_meta_pack(&self, NULL, 0, meta, sizeof(meta)) : 0;
		ftl_node_options o = {
			.swim = {.name = name, .generation = (uint64_t)i + 1, .addr = addr, .meta = meta,
				 .meta_len = (uint16_t)meta_len, .keyring = w->keyring, .seed = (uint64_t)i + 7},
			.is_training = is_training,
			.data_addr = data,
			.rdv = {.min_workers = 1, .max_workers = 8, .settle_us = 100 * MS, .ready_interval_us = 50 * MS},
		};
		ftl_swim_config_profile(&o.swim.config, FTL_PROFILE_TRAIN);
		w->nodes[i] = ftl_node_new(&o, 0);
		assert_non_null(w->nodes[i]);
	}
	const char *seed = "n0";
	assert_int_equal(ftl_node_seeds_answered(w->nodes[1], 0, &seed, 1), 1);
	assert_int_equal(ftl_node_seeds_answered(w->nodes[2], 0, &seed, 1), 1);
	run_for(w, 2000 * MS);
}

static void stop(wire *w)
{
	for (int i = 0; i < NODES; i++)
		ftl_node_delete(w->nodes[i]);
	ftl_keyring_delete(w->keyring);
}

static void test_member_feed_gives_the_rendezvous_only_training_members(void **state)
{
	wire w;
	start(&w);
	for (int i = 0; i < 2; i++) {
		const ftl_rdv *r = ftl_node_rdv(w.nodes[i]);
		assert_int_equal(ftl_rdv_get_phase(r), FTL_RDV_TRAINING);
		assert_int_equal(ftl_rdv_current(r)->n, 2);
		assert_string_equal(ftl_rdv_current(r)->members[1].data_addr, "10.0.0.1:29500");
		assert_int_equal(ftl_node_rank_in_view(w.nodes[i], "w2"), -1);
		assert_true(w.views[i] >= 1);
	}
	assert_null(ftl_node_rdv(w.nodes[2])); /* not training: membership only */
	assert_int_equal(ftl_swim_count(ftl_node_swim(w.nodes[2]), FTL_MEMBER_ALIVE), 3);
	stop(&w);
}

static void test_death_of_a_view_member_aborts_and_a_bystanders_does_not(void **state)
{
	wire w;
	start(&w);
	int aborts = w.aborts[0];
	ftl_node_delete(w.nodes[2]); /* the plain member crashes: no communicator depends on it */
	w.nodes[2] = NULL;
	run_for(&w, 5000 * MS);
	assert_true(w.dead_seen[0] >= 1);
	assert_int_equal(w.aborts[0], aborts);

	ftl_node_delete(w.nodes[1]); /* a member of the view is lost with its host: nothing proves its death */
	w.nodes[1] = NULL;
	w.is_host_lost[1] = true;
	int views = w.views[0];
	run_for(&w, 5000 * MS);
	assert_int_equal(w.aborts[0], aborts + 1);
	assert_string_equal(w.last_why[0], "member w1 of the view is gone");
	/* One of two is no majority: no new view, the survivor waits for quorum. */
	assert_int_equal(w.views[0], views);
	assert_int_equal(ftl_rdv_get_phase(ftl_node_rdv(w.nodes[0])), FTL_RDV_WAITING_FOR_QUORUM);
	stop(&w);
}

static void test_a_proven_death_leaves_the_quorum_count(void **state)
{
	wire w;
	start(&w);
	int aborts = w.aborts[0], views = w.views[0];
	ftl_node_delete(w.nodes[1]); /* a member of the view crashes; its address refuses the check: proven */
	w.nodes[1] = NULL;
	run_for(&w, 5000 * MS);
	/* The survivor is the whole of what can answer: a view of one, the communicator aborted for the death
	 * and for the new view. */
	assert_int_equal(w.aborts[0], aborts + 2);
	assert_int_equal(w.views[0], views + 1);
	assert_int_equal(ftl_rdv_current(ftl_node_rdv(w.nodes[0]))->n, 1);
	assert_int_equal(ftl_rdv_get_phase(ftl_node_rdv(w.nodes[0])), FTL_RDV_TRAINING);
	stop(&w);
}

static void test_seed_rule_joins_only_what_it_does_not_see_alive(void **state)
{
	wire w;
	start(&w);
	const char *answer[] = {"n0", "n1", "n2", "n7", "n7"}; /* self, two alive, an unknown one twice */
	int joins = w.joins[0];
	assert_int_equal(ftl_node_seeds_answered(w.nodes[0], w.now, answer, 5), 1);
	pump_one(&w, 0);
	assert_int_equal(w.joins[0], joins + 1);
	assert_int_equal(ftl_node_seeds_answered(w.nodes[0], w.now, answer, 3), 0); /* healthy: nothing sent */
	stop(&w);
}

/* Seeds are asked again soon while the node sees no one (its seed may not have been up yet), at the reseed
 * interval while it sees a member, soon again once it is left alone, and never in a hurry while leaving. */
static void test_seeds_are_asked_again_soon_only_while_the_node_is_alone(void **state)
{
	const int64_t interval = 2000 * MS;
	wire w;
	start(&w);
	assert_int_equal(ftl_node_seeds_next_wait_us(w.nodes[0], interval), interval);
	ftl_node_delete(w.nodes[1]);
	ftl_node_delete(w.nodes[2]);
	w.nodes[1] = w.nodes[2] = NULL;
	run_for(&w, 5000 * MS); /* both declared dead: node 0 is alone */
	const int64_t alone[] = {250 * MS, 500 * MS, 1000 * MS, 2000 * MS, 2000 * MS};
	for (size_t k = 0; k < sizeof(alone) / sizeof(alone[0]); k++)
		assert_int_equal(ftl_node_seeds_next_wait_us(w.nodes[0], interval), alone[k]);
	ftl_node_leave(w.nodes[0], w.now); /* leaving: nobody to hurry for */
	assert_int_equal(ftl_node_seeds_next_wait_us(w.nodes[0], interval), interval);
	stop(&w);
}

static void test_comm_hint_checks_the_peer_at_once_and_never_kills_alone(void **state)
{
	wire w;
	start(&w);
	int checks = w.checks[0];
	ftl_node_comm_failed(w.nodes[0], w.now, "w1");
	run_for(&w, 50 * MS);
	assert_true(w.checks[0] > checks);
	ftl_member_state st = ftl_swim_find(ftl_node_swim(w.nodes[0]), "w1")->state;
	assert_int_equal(st, FTL_MEMBER_ALIVE); /* it answered: the hint alone proves nothing */
	stop(&w);
}

static void test_leave_ends_with_a_left_event(void **state)
{
	wire w;
	start(&w);
	int aborts = w.aborts[0];
	ftl_node_leave(w.nodes[1], w.now);
	run_for(&w, 3000 * MS);
	assert_int_equal(w.left[1], 1);
	assert_true(ftl_node_has_left(w.nodes[1]));
	/* the leave itself aborts nothing (the leaver's last calls may still be finishing elsewhere): the view
	 * without it does, once; a leave costs no quorum */
	assert_int_equal(w.aborts[0], aborts + 1);
	assert_string_equal(w.last_why[0], "a new view was committed");
	assert_int_equal(ftl_rdv_current(ftl_node_rdv(w.nodes[0]))->n, 1);
	stop(&w);
}

/* The shell reads members through the node, never membership's table: ftl_node_member_at gives every
 * member once (us included) up to the snapshot's count, a name finds its row, and the key census names the
 * live members that lack a key. */
static void test_members_are_read_as_the_nodes_rows(void **state)
{
	wire w;
	start(&w);
	ftl_node_snapshot snap;
	ftl_node_read(w.nodes[0], &snap);
	assert_int_equal(snap.n_members, NODES);
	bool is_seen[NODES] = {false};
	ftl_node_member m;
	for (uint32_t i = 0; i < snap.n_members; i++) {
		assert_true(ftl_node_member_at(w.nodes[0], i, &m));
		int k = m.name[1] - '0';
		assert_false(is_seen[k]);
		is_seen[k] = true;
		assert_int_equal(index_of(m.addr), k);
		assert_int_equal(m.state, FTL_MEMBER_ALIVE);
		assert_int_equal(m.generation, (uint64_t)k + 1);
		assert_int_equal(m.meta_len > 0, k < 2); /* the training members gossip their data address */
	}
	assert_false(ftl_node_member_at(w.nodes[0], snap.n_members, &m));
	assert_true(ftl_node_find_member(w.nodes[0], "w2", &m));
	assert_string_equal(m.addr, "n2");
	assert_false(ftl_node_find_member(w.nodes[0], "w9", &m));
	const uint8_t unknown_key_fp[FTL_KEY_FP_SIZE] = {0x5a};
	const char *names[NODES];
	assert_int_equal(ftl_node_key_lacking(w.nodes[0], unknown_key_fp, names, NODES), NODES);
	stop(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_member_feed_gives_the_rendezvous_only_training_members),
		cmocka_unit_test(test_death_of_a_view_member_aborts_and_a_bystanders_does_not),
		cmocka_unit_test(test_a_proven_death_leaves_the_quorum_count),
		cmocka_unit_test(test_seed_rule_joins_only_what_it_does_not_see_alive),
		cmocka_unit_test(test_seeds_are_asked_again_soon_only_while_the_node_is_alone),
		cmocka_unit_test(test_comm_hint_checks_the_peer_at_once_and_never_kills_alone),
		cmocka_unit_test(test_leave_ends_with_a_left_event),
		cmocka_unit_test(test_members_are_read_as_the_nodes_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
