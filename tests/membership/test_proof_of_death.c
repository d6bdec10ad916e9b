/* Proof of death on one ftl_swim instance, the rules of swim_proof.c: a hint asks for one check of the
 * member's address; a refusal for that life at that address declares it dead at once, by refusal; an
 * accepted connection, silence, a check nobody asked for, a late answer, another address or another
 * life (a restart on the same port) change nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "membership/swim.h"

#define MS 1000LL

typedef struct fixture {
	ftl_keyring *kr;
	ftl_swim *s;
	ftl_swim_config cfg;
} fixture;

static int setup(void **state)
{
	static fixture f;
	f.kr = ftl_keyring_new_insecure("c");
	ftl_swim_options o = {.name = "me", .generation = 1, .addr = "10.0.0.1:7946", .keyring = f.kr, .seed = 3};
	ftl_swim_config_profile(&o.config, FTL_PROFILE_TRAIN);
	f.cfg = o.config;
	f.s = ftl_swim_new(&o, 0);
	ftl_msg_alive peer = {.generation = 7, .incarnation = 0};
	strcpy(peer.name, "w1");
	strcpy(peer.addr, "10.0.0.2:7946");
	assert_int_equal(ftl_swim_add_known(f.s, 0, &peer), 0);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	ftl_swim_delete(f->s);
	ftl_keyring_delete(f->kr);
	return 0;
}

/* Drains the outputs; returns how many checks were asked for and keeps the last one. */
static int checks_asked(ftl_swim *s, ftl_swim_output *check)
{
	ftl_swim_output out;
	int n = 0;
	while (ftl_swim_next_output(s, &out)) {
		if (out.kind == FTL_OUTPUT_CHECK) {
			*check = out;
			n++;
		}
	}
	return n;
}

/* A comm reset hinted at w1 at time t: exactly one check of it is asked for. */
static void hint_and_expect_one_check(fixture *f, int64_t t)
{
	ftl_swim_output check;
	ftl_swim_hint(f->s, t, "w1");
	assert_int_equal(checks_asked(f->s, &check), 1);
}

static bool dead_event(ftl_swim *s, ftl_swim_event *dead)
{
	ftl_swim_event ev;
	bool is_dead = false;
	while (ftl_swim_next_event(s, &ev)) {
		if (ev.type == FTL_EVENT_DEAD) {
			*dead = ev;
			is_dead = true;
		}
	}
	return is_dead;
}

static ftl_member_state state_of(ftl_swim *s, const char *name) { return ftl_swim_find(s, name)->state; }

static void test_a_hint_asks_for_one_check_of_the_members_own_address(void **state)
{
	fixture *f = *state;
	ftl_swim_output check;
	ftl_swim_hint(f->s, 10 * MS, "w1");
	ftl_swim_hint(f->s, 11 * MS, "w1"); /* a second reset while the first check runs asks nothing more */
	assert_int_equal(checks_asked(f->s, &check), 1);
	assert_string_equal(check.to_name, "w1");
	assert_string_equal(check.to_addr, "10.0.0.2:7946");
	assert_int_equal(check.generation, 7);
	assert_int_equal(check.timeout_us, f->cfg.probe_timeout_us);
}

static void test_a_refusal_declares_the_member_dead_at_once_by_refusal(void **state)
{
	fixture *f = *state;
	ftl_swim_event dead;
	hint_and_expect_one_check(f, 10 * MS);
	ftl_swim_check_done(f->s, 11 * MS, "w1", 7, "10.0.0.2:7946", FTL_CHECK_REFUSED);
	assert_int_equal(state_of(f->s, "w1"), FTL_MEMBER_DEAD);
	assert_true(dead_event(f->s, &dead));
	assert_int_equal(dead.reason, FTL_DEATH_REFUSED);
	assert_string_equal(dead.from, "me");
	assert_string_equal(ftl_death_reason_strs[dead.reason], "refused by its own address");
	assert_int_equal(ftl_swim_get_stats(f->s)->deaths_declared[FTL_DEATH_REFUSED], 1);
}

static void test_accepted_or_unanswered_checks_change_nothing(void **state)
{
	fixture *f = *state;
	ftl_swim_event dead;
	hint_and_expect_one_check(f, 10 * MS);
	ftl_swim_check_done(f->s, 11 * MS, "w1", 7, "10.0.0.2:7946", FTL_CHECK_ACCEPTED); /* paused: still accepts */
	hint_and_expect_one_check(f, 200 * MS);
	ftl_swim_check_done(f->s, 240 * MS, "w1", 7, "10.0.0.2:7946", FTL_CHECK_NO_ANSWER); /* partitioned */
	assert_int_not_equal(state_of(f->s, "w1"), FTL_MEMBER_DEAD);
	assert_false(dead_event(f->s, &dead));
}

static void test_a_refusal_nobody_asked_for_or_too_late_proves_nothing(void **state)
{
	fixture *f = *state;
	ftl_swim_check_done(f->s, 5 * MS, "w1", 7, "10.0.0.2:7946", FTL_CHECK_REFUSED); /* never asked */
	assert_int_equal(state_of(f->s, "w1"), FTL_MEMBER_ALIVE);
	hint_and_expect_one_check(f, 10 * MS);
	int64_t late = 10 * MS + 2 * f->cfg.probe_timeout_us + 1;
	ftl_swim_check_done(f->s, late, "w1", 7, "10.0.0.2:7946", FTL_CHECK_REFUSED);
	assert_int_equal(state_of(f->s, "w1"), FTL_MEMBER_ALIVE);
}

static void test_a_refusal_from_another_address_proves_nothing(void **state)
{
	fixture *f = *state;
	hint_and_expect_one_check(f, 10 * MS);
	ftl_swim_check_done(f->s, 11 * MS, "w1", 7, "10.0.0.9:7946", FTL_CHECK_REFUSED);
	assert_int_equal(state_of(f->s, "w1"), FTL_MEMBER_ALIVE);
}

static void test_a_restart_on_the_same_port_is_never_a_death_of_the_new_life(void **state)
{
	fixture *f = *state;
	ftl_swim_event ev;
	hint_and_expect_one_check(f, 10 * MS);
	/* The new process joins (generation 8) before the old life's check comes back refused. */
	ftl_msg_alive again = {.generation = 8, .incarnation = 0};
	strcpy(again.name, "w1");
	strcpy(again.addr, "10.0.0.2:7946");
	uint8_t plain[1400];
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, plain, sizeof(plain));
	ftl_msg m = {.type = FTL_MSG_ALIVE};
	m.u.alive = again;
	assert_int_equal(ftl_wire_packet_add(&p, &m), 0);
	ftl_swim_receive(f->s, 11 * MS, plain, ftl_wire_packet_finish(&p));
	assert_true(ftl_swim_next_event(f->s, &ev));
	assert_int_equal(ev.type, FTL_EVENT_JOIN);
	ftl_swim_check_done(f->s, 12 * MS, "w1", 7, "10.0.0.2:7946", FTL_CHECK_REFUSED);
	assert_int_equal(state_of(f->s, "w1"), FTL_MEMBER_ALIVE);
	assert_int_equal(ftl_swim_find(f->s, "w1")->generation, 8);
	assert_false(dead_event(f->s, &ev));
}

static void test_a_missed_direct_ack_asks_for_a_check(void **state)
{
	fixture *f = *state;
	ftl_swim_output check;
	int asked = 0;
	/* w1 never answers: by the end of the first probe of it, a check has been asked for. */
	for (int64_t t = 0; t <= 2 * f->cfg.probe_interval_us && asked == 0; t += MS) {
		ftl_swim_tick(f->s, t);
		asked += checks_asked(f->s, &check);
	}
	assert_int_equal(asked, 1);
	assert_string_equal(check.to_name, "w1");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_hint_asks_for_one_check_of_the_members_own_address),
		T(test_a_refusal_declares_the_member_dead_at_once_by_refusal),
		T(test_accepted_or_unanswered_checks_change_nothing),
		T(test_a_refusal_nobody_asked_for_or_too_late_proves_nothing),
		T(test_a_refusal_from_another_address_proves_nothing),
		T(test_a_restart_on_the_same_port_is_never_a_death_of_the_new_life),
		T(test_a_missed_direct_ack_asks_for_a_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
