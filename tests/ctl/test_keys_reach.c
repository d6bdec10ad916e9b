/* `ftlctl keys install|use|remove KEY --wait S` (ctl/keys_reach.c): when a key step has reached every live
 * member, decided from the census of a `keys list` reply. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "ctl/keys_reach.h"

#define OLD "b2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2w="
#define NEW "bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmU="

static json_t *parsed(const char *text)
{
	json_t *reply = json_loads(text, 0, NULL);
	assert_non_null(reply);
	return reply;
}

static ctl_keys_progress reach(const char *reply_text, ctl_keys_step step, const char *key, char *how, size_t len)
{
	json_t *reply = parsed(reply_text);
	ctl_keys_target t = {.step = step, .key = key};
	ctl_keys_progress progress = ctl_keys_reach(reply, &t, how, len);
	json_decref(reply);
	return progress;
}

static const char installed_on_two_of_three[] =
	"{\"ok\":true,\"members\":3,\"keys\":[\"" OLD "\",\"" NEW "\"],\"census\":["
	"{\"key\":\"" OLD "\",\"fingerprint\":\"aa\",\"holders\":3,\"primary_of\":3,\"lacking\":[]},"
	"{\"key\":\"" NEW "\",\"fingerprint\":\"bb\",\"holders\":2,\"primary_of\":0,\"lacking\":[\"k3\"]}]}";

static void test_install_waits_for_every_live_member_and_names_who_lacks_it(void **state)
{
	char how[256];
	assert_int_equal(reach(installed_on_two_of_three, CTL_KEYS_INSTALL, NEW, how, sizeof how), CTL_KEYS_PENDING);
	assert_string_equal(how, "2/3 live members hold it; lacking: k3");
	assert_int_equal(reach(installed_on_two_of_three, CTL_KEYS_INSTALL, OLD, how, sizeof how), CTL_KEYS_REACHED);
	assert_string_equal(how, "3/3 live members hold it");
}

static void test_use_waits_until_every_live_member_seals_with_it(void **state)
{
	char how[256];
	assert_int_equal(reach(installed_on_two_of_three, CTL_KEYS_USE, NEW, how, sizeof how), CTL_KEYS_PENDING);
	assert_string_equal(how, "0/3 live members seal with it");
	assert_int_equal(reach(installed_on_two_of_three, CTL_KEYS_USE, OLD, how, sizeof how), CTL_KEYS_REACHED);
}

static void test_a_key_not_installed_here_has_not_reached_anyone(void **state)
{
	char how[256];
	const char *other = "c29tZXNvbWVzb21lc29tZXNvbWVzb21lc29tZXNvbWU=";
	assert_int_equal(reach(installed_on_two_of_three, CTL_KEYS_INSTALL, other, how, sizeof how), CTL_KEYS_PENDING);
	assert_string_equal(how, "0/3 live members hold it");
}

/* The removed key is named by its fingerprint, read while this agent held it: another key that some member
 * holds and this one does not (an install begun elsewhere) does not hold the wait up. */
static void test_remove_waits_until_no_live_member_holds_the_removed_key(void **state)
{
	char how[256];
	json_t *before = parsed(installed_on_two_of_three);
	ctl_keys_target t = {.step = CTL_KEYS_REMOVE, .key = OLD};
	assert_true(ctl_keys_target_fingerprint(&t, before));
	assert_string_equal(t.fingerprint, "aa");
	json_t *still_held = parsed("{\"ok\":true,\"members\":3,\"unreported\":0,\"census\":["
				    "{\"key\":\"" NEW "\",\"fingerprint\":\"bb\",\"holders\":3,\"primary_of\":3},"
				    "{\"key\":null,\"fingerprint\":\"aa\",\"holders\":2,\"primary_of\":0}]}");
	json_t *gone = parsed("{\"ok\":true,\"members\":3,\"census\":["
			      "{\"key\":\"" NEW "\",\"fingerprint\":\"bb\",\"holders\":3,\"primary_of\":3},"
			      "{\"key\":null,\"fingerprint\":\"cc\",\"holders\":1,\"primary_of\":0}]}");
	assert_int_equal(ctl_keys_reach(still_held, &t, how, sizeof how), CTL_KEYS_PENDING);
	assert_string_equal(how, "2/3 live members hold it");
	assert_int_equal(ctl_keys_reach(gone, &t, how, sizeof how), CTL_KEYS_REACHED);
	assert_string_equal(how, "0/3 live members hold it");
	ctl_keys_target unknown = {.step = CTL_KEYS_REMOVE, .key = "c29tZXNvbWVzb21lc29tZXNvbWVzb21lc29tZXNvbWU="};
	assert_false(ctl_keys_target_fingerprint(&unknown, before));
	json_decref(before);
	json_decref(still_held);
	json_decref(gone);
}

static void test_a_census_that_cannot_tell_is_refused_before_anything_changes(void **state)
{
	char why[256];
	const char *cannot[][2] = {
		{"{\"ok\":true,\"keys\":[\"" NEW "\"]}", "no key census"},
		{"{\"ok\":true,\"members\":3,\"unreported\":1,\"census\":[]}", "1 live member(s) report no keys"},
		{"{\"ok\":true,\"members\":3,\"truncated\":true,\"census\":[]}", "more distinct keys"},
	};
	for (size_t i = 0; i < sizeof cannot / sizeof cannot[0]; i++) {
		json_t *reply = parsed(cannot[i][0]);
		assert_int_equal(ctl_keys_census_usable(reply, why, sizeof why), CTL_KEYS_UNKNOWABLE);
		assert_non_null(strstr(why, cannot[i][1]));
		char how[256];
		ctl_keys_target t = {.step = CTL_KEYS_INSTALL, .key = NEW};
		assert_int_equal(ctl_keys_reach(reply, &t, how, sizeof how), CTL_KEYS_UNKNOWABLE);
		json_decref(reply);
	}
	json_t *usable = parsed(installed_on_two_of_three);
	assert_int_equal(ctl_keys_census_usable(usable, why, sizeof why), CTL_KEYS_PENDING);
	json_decref(usable);
}

static void test_a_long_lacking_list_is_cut_at_the_line_length(void **state)
{
	char how[40];
	const char many[] = "{\"ok\":true,\"members\":9,\"census\":[{\"key\":\"" NEW "\",\"holders\":1,\"primary_of\":0,"
			    "\"lacking\":[\"worker-1\",\"worker-2\",\"worker-3\",\"worker-4\",\"worker-5\"]}]}";
	assert_int_equal(reach(many, CTL_KEYS_INSTALL, NEW, how, sizeof how), CTL_KEYS_PENDING);
	assert_int_equal(strlen(how), sizeof how - 1);
	assert_memory_equal(how, "1/9 live members hold it; lacking: work", sizeof how - 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_install_waits_for_every_live_member_and_names_who_lacks_it),
		cmocka_unit_test(test_use_waits_until_every_live_member_seals_with_it),
		cmocka_unit_test(test_a_key_not_installed_here_has_not_reached_anyone),
		cmocka_unit_test(test_remove_waits_until_no_live_member_holds_the_removed_key),
		cmocka_unit_test(test_a_census_that_cannot_tell_is_refused_before_anything_changes),
		cmocka_unit_test(test_a_long_lacking_list_is_cut_at_the_line_length),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
