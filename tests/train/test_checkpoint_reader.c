/* The public checkpoint reader (include/ftl/checkpoint.h): it hands out a file's buffers, job position and
 * save bytes exactly as written, takes a directory's newest file that verifies, and refuses a damaged file
 * with a message naming the file and the damage, never handing out a byte of it. Files are made with the
 * writer's own encoder (checkpoint_format.c) in a fresh temp directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/older_layout.h"

#include "ftl/checkpoint.h"
#include "train/checkpoint.h"

static char dir[64];

static const char weights[] = "0123456789abcdef", moments[] = "MOMENTS!", saved[] = "optimizer bytes";

/* Writes a checkpoint of `step` (buffers "weights" and "moments", the save bytes) into dir; its path in out. */
static void write_checkpoint(uint64_t step, char *out, size_t len)
{
	ftl_ckpt_header h = {.version = FTL_CKPT_VERSION, .sum_kind = FTL_CKPT_SUM_XXH3, .job_id = 0xabc, .step = step,
			     .view_epoch = 4, .data_epoch = 1, .sample_pos = 96, .world_size = 3, .n_buffers = 2,
			     .save_len = sizeof(saved), .sizes = {sizeof(weights), sizeof(moments)}};
	strcpy(h.names[0], "weights");
	strcpy(h.names[1], "moments");
	size_t bytes = ftl_ckpt_file_bytes(&h);
	uint8_t *image = malloc(bytes);
	ftl_ckpt_encode_header(&h, image);
	memcpy(image + ftl_ckpt_payload_offset(&h, 0), weights, sizeof(weights));
	memcpy(image + ftl_ckpt_payload_offset(&h, 1), moments, sizeof(moments));
	memcpy(image + ftl_ckpt_payload_offset(&h, 2), saved, sizeof(saved));
	ftl_ckpt_seal(&h, image);
	char name[FTL_CKPT_NAME_MAX];
	ftl_ckpt_file_name(step, h.job_id, name, sizeof(name));
	snprintf(out, len, "%s/%s", dir, name);
	FILE *f = fopen(out, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(image, 1, bytes, f), bytes);
	fclose(f);
	free(image);
}

/* Flips one byte of the file at `at` bytes from its end (1: the last byte). */
static void flip_byte(const char *path, long at)
{
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, -at, SEEK_END);
	int c = fgetc(f);
	fseek(f, -at, SEEK_END);
	fputc(c ^ 0x40, f);
	fclose(f);
}

static int make_dir(void **unused)
{
	(void)unused;
	snprintf(dir, sizeof(dir), "/tmp/ftl-test-ckpt-reader-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **unused)
{
	(void)unused;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void test_reader_hands_out_what_was_written(void **unused)
{
	(void)unused;
	char path[FTL_CKPT_PATH_MAX];
	write_checkpoint(12, path, sizeof(path));
	ftl_checkpoint_reader *r;
	assert_int_equal(ftl_checkpoint_reader_new(path, &r), FTL_OK);
	assert_string_equal(ftl_checkpoint_reader_file(r), path);
	ftl_checkpoint_info info = {.struct_size = sizeof info};
	ftl_checkpoint_reader_info(r, &info);
	assert_int_equal(info.step, 12);
	assert_int_equal(info.data_epoch, 1);
	assert_int_equal(info.sample_pos, 96);
	assert_int_equal(info.world_size, 3);
	assert_int_equal(info.job_id, 0xabc);
	assert_int_equal(info.n_buffers, 2);
	struct { /* the info as a program built against 0.3.2 has it (tests/older_layout.h) */
		struct {
			size_t struct_size;
			uint64_t step, data_epoch, sample_pos, view_epoch;
			uint32_t world_size, n_buffers;
			uint64_t job_id, state_bytes;
		} s;
		unsigned char guard[OLDER_LAYOUT_GUARD];
	} info_0_3_2;
	older_layout_prepare(&info_0_3_2, sizeof info_0_3_2.s);
	assert_int_equal(ftl_checkpoint_reader_info(r, (ftl_checkpoint_info *)&info_0_3_2), FTL_OK);
	assert_int_equal(info_0_3_2.s.step, 12);
	assert_int_equal(info_0_3_2.s.job_id, 0xabc);
	assert_true(older_layout_guard_is_untouched(&info_0_3_2, sizeof info_0_3_2.s));
	const char *name;
	const void *data;
	uint64_t bytes;
	assert_int_equal(ftl_checkpoint_reader_buffer(r, 1, &name, &data, &bytes), FTL_OK);
	assert_string_equal(name, "moments");
	assert_int_equal(bytes, sizeof(moments));
	assert_memory_equal(data, moments, sizeof(moments));
	assert_int_equal(ftl_checkpoint_reader_buffer(r, 2, &name, &data, &bytes), FTL_ERR_INVALID);
	const void *state = ftl_checkpoint_reader_state(r, &bytes);
	assert_int_equal(bytes, sizeof(saved));
	assert_memory_equal(state, saved, sizeof(saved));
	ftl_checkpoint_reader_delete(r);
	unlink(path);
}

static void test_a_corrupted_file_is_refused_naming_it(void **unused)
{
	(void)unused;
	char path[FTL_CKPT_PATH_MAX];
	write_checkpoint(7, path, sizeof(path));
	flip_byte(path, 20); /* in the save bytes, before the 16-byte checksum */
	ftl_checkpoint_reader *r = (ftl_checkpoint_reader *)1;
	assert_int_equal(ftl_checkpoint_reader_new(path, &r), FTL_ERR_INVALID);
	assert_null(r);
	assert_non_null(strstr(ftl_diag_message(), path));
	assert_non_null(strstr(ftl_diag_message(), "checksum mismatch (xxh3): the file is corrupt"));
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(ftl_checkpoint_reader_new(path, &r), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "truncated: 100 bytes"));
	unlink(path);
}

static void test_a_directory_gives_its_newest_file_that_verifies(void **unused)
{
	(void)unused;
	char older[FTL_CKPT_PATH_MAX], newer[FTL_CKPT_PATH_MAX];
	write_checkpoint(10, older, sizeof(older));
	write_checkpoint(20, newer, sizeof(newer));
	ftl_checkpoint_reader *r;
	ftl_checkpoint_info info = {.struct_size = sizeof info};
	assert_int_equal(ftl_checkpoint_reader_new(dir, &r), FTL_OK);
	ftl_checkpoint_reader_info(r, &info);
	assert_int_equal(info.step, 20);
	ftl_checkpoint_reader_delete(r);

	flip_byte(newer, 1);
	assert_int_equal(ftl_checkpoint_reader_new(dir, &r), FTL_OK);
	ftl_checkpoint_reader_info(r, &info);
	assert_int_equal(info.step, 10);
	assert_string_equal(ftl_checkpoint_reader_file(r), older);
	ftl_checkpoint_reader_delete(r);

	flip_byte(older, 1);
	assert_int_equal(ftl_checkpoint_reader_new(dir, &r), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "none of the 2 checkpoint(s)"));
	assert_non_null(strstr(ftl_diag_message(), newer));
	unlink(older);
	unlink(newer);
}

static void test_an_empty_directory_or_a_missing_path_is_said(void **unused)
{
	(void)unused;
	ftl_checkpoint_reader *r;
	assert_int_equal(ftl_checkpoint_reader_new(dir, &r), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "no checkpoint in"));
	char missing[FTL_CKPT_PATH_MAX];
	snprintf(missing, sizeof(missing), "%s/nothing-here.ftl", dir);
	assert_int_equal(ftl_checkpoint_reader_new(missing, &r), FTL_ERR_SYSTEM);
	assert_non_null(strstr(ftl_diag_message(), "nothing-here.ftl: cannot open"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reader_hands_out_what_was_written, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_a_corrupted_file_is_refused_naming_it, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_a_directory_gives_its_newest_file_that_verifies, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_an_empty_directory_or_a_missing_path_is_said, make_dir, remove_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
