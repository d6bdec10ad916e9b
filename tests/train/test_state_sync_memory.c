/* State sync under nccl never hands a host pointer to the device communicator and never a device pointer
 * to the host one (issue 14), proved with a comm double that classifies every pointer it is handed; and
 * registration refuses the wrong kind of memory for the backend with a message that says what to do; a
 * member whose global batch settings differ from rank 0's is refused over the host path (the other
 * differences a joiner can have: test_state_shape.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_comm.h"
#include "train/state_sync.h"

static char saved_here[40] = "optimizer state on rank 0";

static size_t save_cb(void *ctx, void *buf, size_t cap)
{
	size_t n = sizeof(saved_here);
	if (buf && cap >= n)
		memcpy(buf, saved_here, n);
	return n;
}

static void load_cb(void *ctx, const void *buf, size_t len) { (*(int *)ctx)++; }

/* A registry as a GPU job has it: device buffers (in the fake device range) of every word size, plus a host
 * buffer placed there behind registration's back, to show where state sync sends host memory. */
static void device_job(ftl_state_registry *r, int *loads)
{
	static double host_extra[3];
	memset(r, 0, sizeof(*r));
	r->backend = FTL_COMM_NCCL;
	const struct {
		const char *name;
		size_t offset, bytes;
	} dev[] = {{"params", 0, 1024}, {"bias", 1024, 12}, {"scale", 2048, 6}};
	for (int i = 0; i < 3; i++)
		r->buffers[r->n_buffers++] = (ftl_buffer_reg){.ptr = fake_device_memory + dev[i].offset,
							      .bytes = dev[i].bytes, .is_device = true};
	r->buffers[r->n_buffers++] = (ftl_buffer_reg){.name = "host_extra", .ptr = host_extra, .bytes = 20};
	r->save = save_cb;
	r->load = load_cb;
	r->cb_ctx = loads;
	r->step = 7;
	r->sample_pos = 128;
	r->job_id = 0x1234;
}

static fake_tape tape; /* rank 0's broadcasts, for the joiner */

static void sync_as(int rank)
{
	ftl_state_registry r;
	int loads = 0;
	device_job(&r, &loads);
	if (rank != 0) { /* a joiner: nothing of its own yet */
		r.step = r.sample_pos = r.job_id = 0;
		r.save = NULL;
	}
	fake_comm *data = fake_comm_new(FTL_COMM_NCCL, rank, 2), *ctrl = fake_comm_new(FTL_COMM_TCP, rank, 2);
	data->tape = ctrl->tape = &tape;
	ftl_comm_pair pair = {&data->base, &ctrl->base};
	uint64_t moved = 0;
	assert_int_equal(ftl_state_sync(&r, &pair, rank, 0, &moved), FTL_OK);
	assert_int_equal(data->host_pointers, 0);   /* no host pointer reached the device comm */
	assert_int_equal(ctrl->device_pointers, 0); /* no device pointer reached the host comm */
	assert_int_equal(data->device_pointers, 3); /* each device buffer once, in place */
	/* the header, the host buffer (words and tail) and the callback bytes went over the host path */
	assert_true(ctrl->host_pointers >= 4);
	assert_true(moved == 1024 + 12 + 6 + 20 + sizeof(saved_here));
	assert_int_equal(loads, rank == 0 ? 0 : 1);
	assert_true(r.has_state);
	assert_int_equal(r.step, 7); /* rank 0's position, on every rank */
	assert_int_equal(r.sample_pos, 128);
	assert_int_equal(r.job_id, 0x1234);
	ftl_comm_delete(&data->base);
	ftl_comm_delete(&ctrl->base);
}

static void test_state_sync_sends_each_kind_of_memory_to_its_own_comm_on_rank_0(void **state) { sync_as(0); }

static void test_state_sync_sends_each_kind_of_memory_to_its_own_comm_on_a_joiner(void **state)
{
	sync_as(1);
	assert_int_equal(tape.played, tape.n); /* it took everything rank 0 sent, in the same order */
	fake_tape_free(&tape);
}

static void test_tcp_job_syncs_everything_over_its_one_comm(void **state)
{
	static float params[9];
	ftl_state_registry r = {.backend = FTL_COMM_TCP};
	assert_int_equal(ftl_state_register_buffer(&r, "params", params, sizeof(params), false), 0);
	fake_comm *c = fake_comm_new(FTL_COMM_TCP, 1, 2);
	ftl_comm_pair pair = {&c->base, &c->base};
	uint64_t moved = 0;
	assert_int_equal(ftl_state_sync(&r, &pair, 1, 0, &moved), FTL_OK);
	assert_int_equal(c->device_pointers, 0);
	/* the header (with the shape), "do you hold it?", 4 words of params, the padded tail word, the callback
	 * bytes' length (none) */
	assert_int_equal(c->calls, 5);
	assert_true(moved == sizeof(params));
	ftl_comm_delete(&c->base);
	ftl_state_free(&r);
}

static int saves;
static fake_tape *fake_taping; /* sync_survivor's comms record or play here when set */

static size_t counting_save_cb(void *ctx, void *buf, size_t cap)
{
	saves++;
	return save_cb(ctx, buf, cap);
}

/* Survivors of a kill: every rank holds rank 0's state (same step, position, job id and lineage), so after
 * the header and one "do you hold it?" nothing moves, the save callback never runs and nothing is loaded.
 * One rank whose state differs, or another lineage, and everything moves as for a joiner. */
static void sync_survivor(int rank, uint64_t lineage, int64_t peers_hold, uint64_t *moved, int *calls, int *loads)
{
	static float params[9];
	ftl_state_registry r = {.backend = FTL_COMM_TCP};
	assert_int_equal(ftl_state_register_buffer(&r, "params", params, sizeof(params), false), 0);
	r.has_state = true;
	r.step = 41;
	r.sample_pos = 640;
	r.job_id = 0x77;
	r.save = counting_save_cb;
	r.load = load_cb;
	r.cb_ctx = loads;
	fake_comm *c = fake_comm_new(FTL_COMM_TCP, rank, 3);
	c->peers_i64 = peers_hold;
	c->tape = fake_taping;
	ftl_comm_pair pair = {&c->base, &c->base};
	assert_int_equal(ftl_state_sync(&r, &pair, rank, lineage, moved), FTL_OK);
	*calls = c->calls;
	assert_int_equal(r.step, 41);
	ftl_comm_delete(&c->base);
	ftl_state_free(&r);
}

static void test_survivors_that_hold_rank_0s_state_move_nothing(void **state)
{
	uint64_t moved = 1;
	int calls = 0, loads = 0;
	saves = 0;
	for (int rank = 0; rank < 3; rank++) {
		sync_survivor(rank, 0xabc, 1, &moved, &calls, &loads);
		assert_int_equal(moved, 0);
		assert_int_equal(calls, 2); /* the header, the allreduce */
	}
	assert_int_equal(saves, 0);
	assert_int_equal(loads, 0);
	sync_survivor(0, 0xabc, 0, &moved, &calls, &loads); /* one rank says no: rank 0 sends it all */
	assert_true(moved == 9 * sizeof(float) + sizeof(saved_here));
	assert_true(saves > 0);
}

/* A rank whose state belongs to another lineage than rank 0's (a merge), or to none, says no even when its
 * step and position match, and takes everything rank 0 sends. */
static void test_another_lineage_or_none_takes_everything(void **state)
{
	static fake_tape lineage_tape;
	uint64_t lineages[] = {0xdef, 0};
	for (int k = 0; k < 2; k++) {
		uint64_t moved = 0;
		int calls = 0, loads = 0;
		fake_taping = &lineage_tape;
		sync_survivor(0, 0xabc, 0, &moved, &calls, &loads); /* rank 0 records what it sends */
		sync_survivor(1, lineages[k], 1, &moved, &calls, &loads);
		fake_taping = NULL;
		assert_true(moved == 9 * sizeof(float) + sizeof(saved_here));
		assert_int_equal(loads, 1);
		assert_int_equal(lineage_tape.played, lineage_tape.n);
		fake_tape_free(&lineage_tape);
	}
}

/* A member whose fixed global batch differs from rank 0's is refused at the sync with both named; the
 * settings go over the host path, never the device comm. */
static void test_global_batch_unlike_rank_0s_is_refused_naming_both(void **state)
{
	fake_tape settings = {0};
	uint64_t moved = 0;
	for (int rank = 0; rank < 2; rank++) {
		ftl_state_registry r = {.backend = FTL_COMM_NCCL, .batch = {.global_batch = rank ? 100 : 64}};
		fake_comm *data = fake_comm_new(FTL_COMM_NCCL, rank, 2), *ctrl = fake_comm_new(FTL_COMM_TCP, rank, 2);
		data->tape = ctrl->tape = &settings;
		ftl_comm_pair pair = {&data->base, &ctrl->base};
		ftl_err e = ftl_state_sync(&r, &pair, rank, 0, &moved);
		assert_int_equal(e, rank == 0 ? FTL_OK : FTL_ERR_REFUSED);
		assert_int_equal(data->calls, 0);
		ftl_comm_delete(&data->base);
		ftl_comm_delete(&ctrl->base);
	}
	assert_non_null(strstr(ftl_diag_message(), "FTL_GLOBAL_BATCH=100"));
	assert_non_null(strstr(ftl_diag_message(), "but 64, 0, 0 in the job"));
	fake_tape_free(&settings);
}

static void test_host_buffer_under_nccl_is_refused_at_registration(void **state)
{
	static float host[4];
	ftl_state_registry r = {.backend = FTL_COMM_NCCL};
	assert_int_equal(ftl_state_register_buffer(&r, "params", host, sizeof(host), false), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "ftl_register_buffer 'params'"));
	assert_non_null(strstr(ftl_diag_message(), "FTL_COMM=nccl"));
	assert_int_equal(r.n_buffers, 0);
}

static void test_device_buffer_under_tcp_is_refused_at_registration(void **state)
{
	ftl_state_registry r = {.backend = FTL_COMM_TCP};
	assert_int_equal(ftl_state_register_buffer(&r, "params", fake_device_memory, 64, true), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "a device buffer under FTL_COMM=tcp"));
	assert_int_equal(r.n_buffers, 0);
}

static void test_device_buffer_under_nccl_is_taken_when_cuda_cannot_tell(void **state)
{
	if (ftl_buffer_is_device_memory(fake_device_memory) >= 0)
		skip(); /* a machine with CUDA knows the fake range is host memory: the flag is not trusted there */
	ftl_state_registry r = {.backend = FTL_COMM_NCCL};
	assert_int_equal(ftl_state_register_buffer(&r, "params", fake_device_memory, 64, true), 0);
	/* an odd size cannot be broadcast in device words */
	assert_int_equal(ftl_state_register_buffer(&r, "odd", fake_device_memory + 64, 7, true), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "must be even"));
	assert_int_equal(r.n_buffers, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_sync_sends_each_kind_of_memory_to_its_own_comm_on_rank_0),
		cmocka_unit_test(test_state_sync_sends_each_kind_of_memory_to_its_own_comm_on_a_joiner),
		cmocka_unit_test(test_tcp_job_syncs_everything_over_its_one_comm),
		cmocka_unit_test(test_survivors_that_hold_rank_0s_state_move_nothing),
		cmocka_unit_test(test_another_lineage_or_none_takes_everything),
		cmocka_unit_test(test_global_batch_unlike_rank_0s_is_refused_naming_both),
		cmocka_unit_test(test_host_buffer_under_nccl_is_refused_at_registration),
		cmocka_unit_test(test_device_buffer_under_tcp_is_refused_at_registration),
		cmocka_unit_test(test_device_buffer_under_nccl_is_taken_when_cuda_cannot_tell),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
