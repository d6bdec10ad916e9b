/* The intrusive list (base/list.h): both ends kept right whichever end owners join at and wherever they
 * leave from, since the agent's connection lists and its admission queues (oldest first) share it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/list.h"

typedef struct owner {
	int id;
	ftl_list_link link;
} owner;

/* The ids from first to last, and checks that walking back from last gives the same, reversed. */
static size_t ids(const ftl_list *l, int *out, size_t max)
{
	size_t n = 0;
	for (ftl_list_link *k = l->first; k && n < max; k = k->next)
		out[n++] = ftl_owner_of(k, owner, link)->id;
	size_t back = n;
	for (ftl_list_link *k = l->last; k; k = k->prev) {
		assert_true(back > 0);
		assert_int_equal(ftl_owner_of(k, owner, link)->id, out[--back]);
	}
	assert_int_equal(back, 0);
	return n;
}

static void expect(const ftl_list *l, const int *want, size_t n)
{
	int got[8];
	assert_int_equal(ids(l, got, 8), n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
}

static void test_both_ends_hold_as_owners_join_and_leave_anywhere(void **state)
{
	owner o[4] = {{.id = 0}, {.id = 1}, {.id = 2}, {.id = 3}};
	ftl_list l = {0};
	ftl_list_push_back(&l, &o[1].link);
	ftl_list_push_front(&l, &o[0].link);
	ftl_list_push_back(&l, &o[2].link);
	ftl_list_push_back(&l, &o[3].link);
	expect(&l, (int[]){0, 1, 2, 3}, 4);
	ftl_list_unlink(&l, &o[3].link); /* the last */
	expect(&l, (int[]){0, 1, 2}, 3);
	ftl_list_unlink(&l, &o[1].link); /* the middle */
	expect(&l, (int[]){0, 2}, 2);
	ftl_list_unlink(&l, &o[0].link); /* the first */
	expect(&l, (int[]){2}, 1);
	ftl_list_unlink(&l, &o[2].link); /* the only one */
	assert_null(l.first);
	assert_null(l.last);
	ftl_list_push_front(&l, &o[3].link); /* an empty list again takes either end */
	expect(&l, (int[]){3}, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_both_ends_hold_as_owners_join_and_leave_anywhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
