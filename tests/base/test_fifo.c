/* base/fifo.c: items come out in the order they went in, across growth and the slide to the front, and a
 * queue drained as fast as it fills stops allocating. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/fifo.h"

static void test_items_come_out_in_order_across_growth_and_slides(void **state)
{
	ftl_fifo q;
	ftl_fifo_create(&q, sizeof(int));
	assert_null(ftl_fifo_pop(&q));
	int next_in = 0, next_out = 0;
	for (int round = 0; round < 200; round++) { /* push 7, pop 5: the queue grows and slides */
		for (int k = 0; k < 7; k++)
			*(int *)ftl_fifo_push(&q) = next_in++;
		for (int k = 0; k < 5; k++)
			assert_int_equal(*(int *)ftl_fifo_pop(&q), next_out++);
	}
	assert_int_equal(ftl_fifo_len(&q), 400);
	while (ftl_fifo_len(&q) > 0)
		assert_int_equal(*(int *)ftl_fifo_pop(&q), next_out++);
	assert_int_equal(next_out, next_in);
	assert_null(ftl_fifo_pop(&q));
	ftl_fifo_destroy(&q);
}

static void test_a_queue_drained_as_fast_as_it_fills_stops_growing(void **state)
{
	ftl_fifo q;
	ftl_fifo_create(&q, 100);
	for (int i = 0; i < 100000; i++) {
		for (int k = 0; k < 3; k++)
			assert_non_null(ftl_fifo_push(&q));
		for (int k = 0; k < 3; k++)
			assert_non_null(ftl_fifo_pop(&q));
	}
	assert_true(q.cap <= 16);
	ftl_fifo_destroy(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items_come_out_in_order_across_growth_and_slides),
		cmocka_unit_test(test_a_queue_drained_as_fast_as_it_fills_stops_growing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
