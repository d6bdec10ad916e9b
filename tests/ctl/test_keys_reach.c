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

static ctl_keys_progress reach(const char *reply_text, ctl_keys_step step, const char *key, char *how, size_t len)
{
	json_t *reply = json_loads(reply_text, 0, NULL);
	assert_non_null(reply);
	ctl_keys_progress progress = ctl_keys_reach(reply, step, key, how, len);
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

static void test_remove_waits_until_no_member_holds_a_key_this_one_does_not(void **state)
{
	char how[256];
	const char still_held[] =
		"{\"ok\":true,\"members\":3,\"keys\":[\"" NEW "\"],\"census\":["
		"{\"key\":\"" NEW "\",\"fingerprint\":\"bb\",\"holders\":3,\"primary_of\":3,\"lacking\":[]},"
		"{\"key\":null,\"fingerprint\":\"aa\",\"holders\":2,\"primary_of\":0,\"lacking\":[\"k1\"]}]}";
	const char gone[] = "{\"ok\":true,\"members\":3,\"keys\":[\"" NEW "\"],\"census\":["
			    "{\"key\":\"" NEW "\",\"fingerprint\":\"bb\",\"holders\":3,\"primary_of\":3,\"lacking\":[]}]}";
	assert_int_equal(reach(still_held, CTL_KEYS_REMOVE, OLD, how, sizeof how), CTL_KEYS_PENDING);
	assert_string_equal(how, "2/3 live members still hold a key this agent does not (1 such key)");
	assert_int_equal(reach(gone, CTL_KEYS_REMOVE, OLD, how, sizeof how), CTL_KEYS_REACHED);
	assert_string_equal(how, "no live member of 3 holds a key this agent does not");
}

static void test_an_agent_without_a_census_cannot_be_waited_on(void **state)
{
	char how[256];
	assert_int_equal(reach("{\"ok\":true,\"keys\":[\"" NEW "\"]}", CTL_KEYS_INSTALL, NEW, how, sizeof how),
			 CTL_KEYS_UNKNOWABLE);
	assert_non_null(strstr(how, "no key census"));
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
		cmocka_unit_test(test_remove_waits_until_no_member_holds_a_key_this_one_does_not),
		cmocka_unit_test(test_an_agent_without_a_census_cannot_be_waited_on),
		cmocka_unit_test(test_a_long_lacking_list_is_cut_at_the_line_length),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
