/* One name, one live process (membership/swim_name.c), on the simulator: a second process given a live
 * member's name at an address of its own is refused and told so within a probe interval, and the live member
 * stays alive in every view all along; a member that died or left can come back under its name at another
 * address, as a restart does (test_lifecycle.c covers the restart on the same address). */
#include "sim_test.h"

#include <string.h>

static const int N = 8;
static const int HOLDER = 2;

static ftl_sim *start(ftl_sim_options *o, ftl_watch *w)
{
	ftl_sim_options_default(o, N, FTL_PROFILE_TRAIN);
	o->capacity = N + 1;
	ftl_sim *sim = sim_start(o, N, FTL_PROFILE_TRAIN, w);
	ftl_sim_run_for(sim, 1 * SEC);
	return sim;
}

/* Every running node but the claimant and the holder sees the holder's own life alive (arg: the claimant). */
static int holder_alive_everywhere(ftl_sim *sim, int claimant)
{
	int n = 0;
	for (int i = 0; i < ftl_sim_size(sim); i++) {
		ftl_member_state st;
		n += i != claimant && i != HOLDER && ftl_sim_view(sim, i, HOLDER, &st) && st == FTL_MEMBER_ALIVE;
	}
	return n == ftl_sim_running_count(sim, claimant) - 1;
}

static int is_refused(ftl_sim *sim, int claimant) { return ftl_swim_name_taken(ftl_sim_node(sim, claimant)) != NULL; }

static uint64_t names_refused(ftl_sim *sim)
{
	uint64_t n = 0;
	for (int i = 0; i < ftl_sim_size(sim); i++)
		if (ftl_sim_node(sim, i))
			n += ftl_swim_get_stats(ftl_sim_node(sim, i))->names_refused;
	return n;
}

static void test_live_members_name_is_refused_and_the_member_never_displaced(void **state)
{
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = start(&o, &w);
	ftl_watch_reset(&w, HOLDER, FTL_EVENT_NAME_REFUSED);
	int claimant = ftl_sim_add_node_named(sim, ftl_sim_name(sim, HOLDER));
	assert_true(claimant >= 0);
	/* The join push-pull is refused, and the refusal is one datagram back: well within a probe interval. */
	int64_t bound = o.config.probe_interval_us;
	int64_t took = -1;
	for (int64_t t = 0; t <= 10 * bound; t += 10 * MS) {
		assert_true(holder_alive_everywhere(sim, claimant)); /* never displaced, not for a moment */
		if (took < 0 && is_refused(sim, claimant))
			took = t;
		ftl_sim_run_for(sim, 10 * MS);
	}
	const ftl_msg_name_taken *refusal = ftl_swim_name_taken(ftl_sim_node(sim, claimant));
	printf("claimant of %s refused after %.3f s (bound %.3f s) by %s, holder at %s; %d members refused it, "
	       "%llu claims counted\n", ftl_sim_name(sim, HOLDER), (double)took / 1e6, (double)bound / 1e6,
	       refusal ? refusal->from : "nobody", refusal ? refusal->addr : "-", ftl_watch_count(&w, sim),
	       (unsigned long long)names_refused(sim));
	assert_true(took >= 0 && took <= bound);
	assert_string_equal(refusal->addr, "sim:2"); /* the holder's address, as the error will name it */
	assert_true(ftl_watch_count(&w, sim) >= 1);  /* observable where it was refused (the agent's warning) */
	assert_true(names_refused(sim) >= 1);
	/* Refused, the claimant takes no part: nobody ever holds its life, and the holder lives on. */
	ftl_sim_run_for(sim, 10 * SEC);
	assert_int_equal(ftl_sim_count_seeing(sim, claimant, FTL_MEMBER_ALIVE), 0);
	assert_true(holder_alive_everywhere(sim, claimant));
	assert_int_equal(w.false_deaths, 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

/* The holder is gone (crashed and declared dead, or left); the same name at another address joins. */
static void come_back_elsewhere(bool is_left)
{
	ftl_sim_options o = {0};
	ftl_watch w;
	ftl_sim *sim = start(&o, &w);
	w.may_die[HOLDER] = true;
	if (is_left) {
		ftl_sim_leave(sim, HOLDER);
		ftl_sim_run_for(sim, 2 * SEC);
		ftl_sim_crash(sim, HOLDER); /* the process exits after its leave went out */
	} else {
		ftl_sim_crash(sim, HOLDER);
		ftl_sim_run_for(sim, ftl_swim_detection_bound_us(&o.config, N));
	}
	int claimant = ftl_sim_add_node_named(sim, ftl_sim_name(sim, HOLDER));
	int64_t took = sim_run_until_true(sim, 30 * SEC, 10 * MS, sim_all_alive, 0);
	printf("%s at another address after its predecessor %s: alive everywhere after %.3f s\n",
	       ftl_sim_name(sim, claimant), is_left ? "left" : "died", (double)took / 1e6);
	assert_true(took >= 0);
	assert_null(ftl_swim_name_taken(ftl_sim_node(sim, claimant)));
	assert_int_equal(ftl_sim_count_seeing(sim, claimant, FTL_MEMBER_ALIVE), N - 1);
	assert_int_equal(names_refused(sim), 0);
	ftl_watch_free(&w);
	ftl_sim_delete(sim);
}

static void test_dead_members_name_comes_back_at_another_address(void **state) { come_back_elsewhere(false); }

static void test_left_members_name_comes_back_at_another_address(void **state) { come_back_elsewhere(true); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_members_name_is_refused_and_the_member_never_displaced),
		cmocka_unit_test(test_dead_members_name_comes_back_at_another_address),
		cmocka_unit_test(test_left_members_name_comes_back_at_another_address),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
