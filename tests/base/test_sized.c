/* Unit tests of the size-stamped config copies (base/sized.h) with two layouts of one struct, as a
 * program built against an older header and a library built against a newer one would have them: the
 * old struct gets the new fields' defaults and keeps its own values, a write back never passes its end,
 * and a struct of an unknown size (never defaulted, or from a newer header) is refused naming the fix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/sized.h"

typedef struct v1 {
	size_t struct_size;
	int a;
	char name[8];
} v1;

typedef struct v2 { /* v1 grown at its end */
	size_t struct_size;
	int a;
	char name[8];
	int64_t added;
} v2;

static void defaults(v2 *d)
{
	memset(d, 0, sizeof(*d));
	d->struct_size = sizeof(*d);
	d->a = 1;
	strcpy(d->name, "dflt");
	d->added = 42;
}

static void test_an_older_struct_gets_the_new_fields_defaults(void **state)
{
	v2 full;
	defaults(&full);
	struct {
		v1 old;
		uint64_t guard; /* what follows the caller's struct: never written */
	} caller;
	caller.guard = 0x5a5a5a5a5a5a5a5aull;
	ftl_sized_fill(&caller.old, sizeof(v1), &full, sizeof(full));
	assert_int_equal(caller.old.struct_size, sizeof(v1));
	assert_int_equal(caller.old.a, 1);
	assert_string_equal(caller.old.name, "dflt");
	assert_int_equal(caller.guard, 0x5a5a5a5a5a5a5a5aull);

	caller.old.a = 7;
	strcpy(caller.old.name, "mine");
	v2 wide;
	defaults(&wide);
	assert_int_equal(ftl_sized_widen(&caller.old, &wide, sizeof(wide), sizeof(v1), "v", "v_default"), FTL_OK);
	assert_int_equal(wide.a, 7);
	assert_string_equal(wide.name, "mine");
	assert_int_equal(wide.added, 42);
	assert_int_equal(wide.struct_size, sizeof(v2));

	wide.a = 9;
	wide.added = 99;
	ftl_sized_narrow(&wide, &caller.old);
	assert_int_equal(caller.old.a, 9);
	assert_int_equal(caller.old.struct_size, sizeof(v1));
	assert_int_equal(caller.guard, 0x5a5a5a5a5a5a5a5aull);
}

static void test_a_struct_of_an_unknown_size_is_refused(void **state)
{
	v2 wide, caller;
	defaults(&wide);
	memset(&caller, 0, sizeof(caller)); /* never defaulted */
	assert_int_equal(ftl_sized_widen(&caller, &wide, sizeof(wide), sizeof(v1), "v", "v_default"), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "v has struct_size 0"));
	assert_non_null(strstr(ftl_error_message(), "start from v_default()"));
	caller.struct_size = sizeof(v2) + 8; /* a newer header than this library */
	assert_int_equal(ftl_sized_widen(&caller, &wide, sizeof(wide), sizeof(v1), "v", "v_default"), FTL_ERR_INVALID);
	assert_int_equal(ftl_sized_widen(NULL, &wide, sizeof(wide), sizeof(v1), "v", "v_default"), FTL_ERR_INVALID);
	assert_int_equal(wide.a, 1); /* refused: nothing copied */
}

/* An output struct (ftl_get_job_status's kind): an old caller gets its fields and nothing past its end; one
 * whose struct_size is unset, or from a newer header, gets nothing written and an error naming the fix. */
static void test_an_output_struct_is_written_to_its_size_only(void **state)
{
	v2 full;
	defaults(&full);
	full.a = 5;
	struct {
		v1 old;
		uint64_t guard;
	} caller = {.old = {.struct_size = sizeof(v1)}, .guard = 0x5a5a5a5a5a5a5a5aull};
	assert_int_equal(ftl_sized_out(&full, &caller.old, sizeof(full), sizeof(v1), "v"), FTL_OK);
	assert_int_equal(caller.old.a, 5);
	assert_string_equal(caller.old.name, "dflt");
	assert_int_equal(caller.old.struct_size, sizeof(v1));
	assert_int_equal(caller.guard, 0x5a5a5a5a5a5a5a5aull);

	v1 unset = {0};
	assert_int_equal(ftl_sized_out(&full, &unset, sizeof(full), sizeof(v1), "v"), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_error_message(), "set struct_size = sizeof(v)"));
	assert_int_equal(unset.a, 0);
	v2 newer = {.struct_size = sizeof(v2) + 8};
	assert_int_equal(ftl_sized_out(&full, &newer, sizeof(full), sizeof(v1), "v"), FTL_ERR_INVALID);
	assert_int_equal(newer.a, 0);
	assert_int_equal(ftl_sized_out(&full, NULL, sizeof(full), sizeof(v1), "v"), FTL_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_older_struct_gets_the_new_fields_defaults),
		cmocka_unit_test(test_a_struct_of_an_unknown_size_is_refused),
		cmocka_unit_test(test_an_output_struct_is_written_to_its_size_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
