/* base/heap.c: whatever the order items go in, they come out least first, ties in the order the
 * comparison gives them (here a sequence number, as a simulator breaks ties between events at one time);
 * items larger than the swap's chunk move whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/heap.h"
#include "membership/rng.h"

typedef struct event {
	int64_t at;
	uint64_t seq;
	uint8_t payload[300]; /* larger than the swap's chunk */
} event;

static int by_time_then_seq(const void *pa, const void *pb)
{
	const event *a = pa, *b = pb;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void test_items_come_out_least_first_ties_by_sequence(void **state)
{
	ftl_heap h;
	ftl_heap_create(&h, sizeof(event), by_time_then_seq);
	ftl_rng rng;
	ftl_rng_seed(&rng, 42);
	event e;
	assert_false(ftl_heap_pop(&h, &e));
	assert_null(ftl_heap_peek(&h));
	for (uint64_t i = 0; i < 5000; i++) {
		e = (event){.at = ftl_rng_below(&rng, 100), .seq = i};
		memset(e.payload, (int)(i & 0xff), sizeof(e.payload));
		assert_int_equal(ftl_heap_push(&h, &e), 0);
	}
	event prev = {.at = -1};
	size_t n = 0;
	while (ftl_heap_len(&h) > 0) {
		const event *least = ftl_heap_peek(&h);
		int64_t at = least->at;
		assert_true(ftl_heap_pop(&h, &e));
		assert_int_equal(e.at, at);
		assert_true(by_time_then_seq(&prev, &e) < 0);
		assert_int_equal(e.payload[0], e.seq & 0xff);
		assert_int_equal(e.payload[sizeof(e.payload) - 1], e.seq & 0xff);
		prev = e;
		n++;
	}
	assert_int_equal(n, 5000);
	ftl_heap_destroy(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items_come_out_least_first_ties_by_sequence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
