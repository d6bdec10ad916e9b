/* Unit tests of the settings object (ftl/settings.h): ftl_settings_set refuses what the environment
 * refuses, in the same words (the table of setting_cases.h, every bad value of every setting); what it
 * takes alone but the agent cannot use is refused when the agent is made, again as the environment would
 * be; names with and without FTL_; unknown names; the environment as one layer under the program's own
 * keys; an agent made from settings alone; and config structs whose size the library cannot know. `test_settings NAME` runs the one test NAME. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl/execute.h"
#include "ftl/settings.h"
#include "setting_cases.h"

static const char *const valid[][2] = {
	{"FTL_NAME", "w0"}, {"FTL_BIND", "127.0.0.1:7946"}, {"FTL_GOSSIP_KEY", valid_key},
};

/* The environment path's verdict on var=value over the valid settings: "" when the agent is made, else the
 * message. stage_1 gets the message of the per-setting readers alone ("" when they take it). */
static void environment_verdict(const char *var, const char *value, const char *also_unset, char *stage_1,
				char *made, size_t len)
{
	clear_ftl_environment();
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		setenv(valid[i][0], valid[i][1], 1);
	if (also_unset)
		unsetenv(also_unset);
	setenv(var, value, 1);
	ftl_agent_config c;
	ftl_training_config t;
	ftl_agent_config_default(&c);
	ftl_training_config_default(&t);
	stage_1[0] = '\0';
	if (ftl_agent_config_from_env(&c) != FTL_OK || ftl_training_config_from_env(&t) != FTL_OK)
		snprintf(stage_1, len, "%s", ftl_error_message());
	ftl_agent *a = ftl_agent_new_from_env();
	snprintf(made, len, "%s", a ? "" : ftl_error_message());
	ftl_agent_delete(a);
	clear_ftl_environment();
}

/* The settings path's verdict on the same: the setter's message ("" when it takes the value), then the
 * agent's ("" when made). */
static void settings_verdict(const char *var, const char *value, const char *also_unset, char *set, char *made,
			     size_t len)
{
	ftl_settings *s = ftl_settings_new();
	assert_non_null(s);
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		if (!also_unset || strcmp(valid[i][0], also_unset) != 0)
			assert_int_equal(ftl_settings_set(s, valid[i][0], valid[i][1]), FTL_OK);
	ftl_err err = ftl_settings_set(s, var, value);
	snprintf(set, len, "%s", err ? ftl_error_message() : "");
	made[0] = '\0';
	if (!err) {
		ftl_agent *a = ftl_agent_new_from_settings(s, NULL, NULL);
		snprintf(made, len, "%s", a ? "" : ftl_error_message());
		ftl_agent_delete(a);
	}
	ftl_settings_delete(s);
}

static void expect_same_verdict(const char *var, const char *value, const char *also_unset)
{
	char env_1[512], env_made[512], set[512], made[512];
	environment_verdict(var, value, also_unset, env_1, env_made, sizeof(env_1));
	settings_verdict(var, value, also_unset, set, made, sizeof(set));
	if (!env_made[0])
		fail_msg("%s=\"%s\" was accepted through the environment", var, value);
	if (strcmp(set, env_1) != 0)
		fail_msg("%s=\"%s\": the setter said \"%s\", the environment's readers \"%s\"", var, value, set, env_1);
	if (!set[0] && strcmp(made, env_made) != 0)
		fail_msg("%s=\"%s\": making the agent said \"%s\", from the environment \"%s\"", var, value, made,
			 env_made);
}

static void test_set_refuses_every_bad_value_as_the_environment_does(void **state)
{
	for (size_t i = 0; i < N_SETTING_CASES; i++) {
		const setting_case *sc = &setting_cases[i];
		for (int k = 0; k < MAX_BAD && sc->bad[k]; k++)
			expect_same_verdict(sc->var, sc->bad[k], sc->also_unset);
		for (size_t k = 0; sc->is_number && k < N_BAD_NUMBERS; k++)
			expect_same_verdict(sc->var, bad_numbers[k], sc->also_unset);
	}
}

static void test_names_with_and_without_the_prefix_are_one_setting(void **state)
{
	ftl_settings *s = ftl_settings_new();
	assert_int_equal(ftl_settings_set(s, "min_workers", "2"), FTL_OK);
	assert_string_equal(ftl_settings_get(s, "FTL_MIN_WORKERS"), "2");
	assert_int_equal(ftl_settings_set(s, "FTL_MIN_WORKERS", "3"), FTL_OK);
	assert_string_equal(ftl_settings_get(s, "min_workers"), "3");
	assert_int_equal(ftl_settings_set(s, "min_workers", NULL), FTL_OK);
	assert_null(ftl_settings_get(s, "min_workers"));
	assert_null(ftl_settings_get(s, "seeds"));

	assert_int_equal(ftl_settings_set(s, "max_worker", "4"), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "FTL_MAX_WORKER is not an ftl setting (did you mean FTL_MAX_WORKERS?)"));
	static const char *const not_names[] = {"", "Min-Workers", "MIN_WORKERS", "ftl_", "FTL_", "min workers",
						"min_workers_", NAME_64 NAME_64};
	for (size_t i = 0; i < sizeof(not_names) / sizeof(not_names[0]); i++) {
		assert_int_equal(ftl_settings_set(s, not_names[i], "1"), FTL_ERR_INVALID);
		assert_null(ftl_settings_get(s, not_names[i]));
	}
	assert_int_equal(ftl_settings_set(NULL, "seeds", "a:1"), FTL_ERR_INVALID);
	/* a refused value leaves the earlier one */
	assert_int_equal(ftl_settings_set(s, "max_workers", "8"), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "max_workers", "eight"), FTL_ERR_INVALID);
	assert_string_equal(ftl_error_message(), "FTL_MAX_WORKERS=eight: expected a whole number from 1 to 4096");
	assert_string_equal(ftl_settings_get(s, "max_workers"), "8");
	ftl_settings_delete(s);
	ftl_settings_delete(NULL);
}

/* A program's own names are settings too once declared, and the library does not judge their values. */
static void test_program_names_are_taken_once_declared(void **state)
{
	ftl_settings *s = ftl_settings_new();
	assert_int_equal(ftl_settings_set(s, "my_lr", "0.1"), FTL_ERR_INVALID);
	assert_int_equal(ftl_env_add_known_name("FTL_MY_LR"), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "my_lr", "fast"), FTL_OK);
	assert_string_equal(ftl_settings_get(s, "FTL_MY_LR"), "fast");
	ftl_settings_delete(s);
}

/* The environment is one layer: loaded first, a program's keys win; its unknown names are refused. */
static void test_environment_loads_under_the_programs_keys(void **state)
{
	clear_ftl_environment();
	setenv("FTL_MIN_WORKERS", "2", 1);
	setenv("FTL_SEEDS", "127.0.0.1:7000", 1);
	ftl_settings *s = ftl_settings_new();
	assert_int_equal(ftl_settings_load_env(s), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "min_workers", "3"), FTL_OK);
	assert_string_equal(ftl_settings_get(s, "min_workers"), "3");
	assert_string_equal(ftl_settings_get(s, "seeds"), "127.0.0.1:7000");
	ftl_settings_delete(s);

	setenv("FTL_SEED", "127.0.0.1:7000", 1);
	s = ftl_settings_new();
	assert_int_equal(ftl_settings_load_env(s), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "FTL_SEED is not an ftl setting (did you mean FTL_SEEDS?)"));
	ftl_settings_delete(s);
	unsetenv("FTL_SEED");
	setenv("FTL_MAX_WORKERS", "many", 1);
	s = ftl_settings_new();
	assert_int_equal(ftl_settings_load_env(s), FTL_ERR_INVALID);
	assert_string_equal(ftl_error_message(), "FTL_MAX_WORKERS=many: expected a whole number from 1 to 4096");
	ftl_settings_delete(s);
	clear_ftl_environment();
}

/* Settings judged together are judged when the agent is made, so the order of the sets does not matter. */
static void test_settings_judged_together_wait_for_the_agent(void **state)
{
	clear_ftl_environment();
	ftl_settings *s = ftl_settings_new();
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		assert_int_equal(ftl_settings_set(s, valid[i][0], valid[i][1]), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "reproducible", "1"), FTL_OK);
	assert_null(ftl_agent_new_from_settings(s, NULL, NULL));
	assert_non_null(strstr(ftl_error_message(), "FTL_REPRODUCIBLE=1 needs FTL_GLOBAL_BATCH"));
	assert_int_equal(ftl_settings_set(s, "global_batch", "64"), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "max_batch_per_rank", "8"), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "min_workers", "3"), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "max_workers", "2"), FTL_OK);
	assert_null(ftl_agent_new_from_settings(s, NULL, NULL));
	assert_non_null(strstr(ftl_error_message(), "FTL_MIN_WORKERS/FTL_MAX_WORKERS"));
	assert_int_equal(ftl_settings_set(s, "max_workers", "4"), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "run_dir", "/tmp/ftl-settings-test"), FTL_OK);
	assert_int_equal(ftl_settings_set(s, "name", "w7"), FTL_OK);
	ftl_agent *a = ftl_agent_new_from_settings(s, NULL, NULL);
	ftl_settings_delete(s); /* the agent keeps nothing of it */
	assert_non_null(a);
	assert_string_equal(ftl_agent_control_path(a), "/tmp/ftl-settings-test/w7.sock");
	ftl_agent_delete(a);
}

/* Every call that takes a config struct refuses one that was never defaulted (struct_size 0), naming the
 * function to start from, instead of reading a layout it cannot know. */
static void test_config_structs_never_defaulted_are_refused(void **state)
{
	ftl_agent_config c;
	memset(&c, 0, sizeof(c));
	assert_null(ftl_agent_new(&c));
	assert_non_null(strstr(ftl_error_message(), "start from ftl_agent_config_default()"));
	ftl_settings *s = ftl_settings_new();
	assert_int_equal(ftl_agent_config_from_settings(&c, s), FTL_ERR_INVALID);
	ftl_training_config t;
	memset(&t, 0, sizeof(t));
	assert_int_equal(ftl_training_config_from_settings(&t, s), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "start from ftl_training_config_default()"));
	ftl_settings_delete(s);
	struct ftl_comm_config cc;
	memset(&cc, 0, sizeof(cc));
	cc.world_size = 1;
	ftl_comm *comm = NULL;
	assert_int_equal(ftl_comm_new(&cc, &comm), FTL_ERR_INVALID);
	assert_null(comm);
	assert_non_null(strstr(ftl_error_message(), "start from ftl_comm_config_init()"));
	ftl_comm_config_init(&cc);
	assert_int_equal(cc.struct_size, sizeof(cc));
	ftl_comm_new(&cc, &comm); /* no bootstrap: refused, but no longer for its size */
	assert_null(strstr(ftl_error_message(), "struct_size"));
	ftl_comm_delete(comm);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_refuses_every_bad_value_as_the_environment_does),
		cmocka_unit_test(test_names_with_and_without_the_prefix_are_one_setting),
		cmocka_unit_test(test_program_names_are_taken_once_declared),
		cmocka_unit_test(test_environment_loads_under_the_programs_keys),
		cmocka_unit_test(test_settings_judged_together_wait_for_the_agent),
		cmocka_unit_test(test_config_structs_never_defaulted_are_refused),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
