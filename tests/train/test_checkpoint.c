/* The checkpoint file format and directory (train/checkpoint_format.c, checkpoint_dir.c), and resume
 * through the registered state (checkpoint.c): a file loads only when it is whole and unaltered, and a
 * resume skips what does not verify and loads the newest that does. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "base/log.h"

/* A small image: two buffers and some save bytes, with a recognisable payload. */
static uint8_t *make_image(ftl_ckpt_header *h, size_t *len)
{
	memset(h, 0, sizeof(*h));
	h->version = FTL_CKPT_VERSION;
	h->sum_kind = FTL_CKPT_SUM_XXH3;
	h->job_id = 0x1234abcd5678ef90ULL;
	h->step = 1200;
	h->view_epoch = 7;
	h->data_epoch = 2;
	h->sample_pos = 4096;
	h->world_size = 4;
	h->n_buffers = 2;
	snprintf(h->names[0], sizeof(h->names[0]), "params");
	snprintf(h->names[1], sizeof(h->names[1]), "momentum");
	h->sizes[0] = 40;
	h->sizes[1] = 24;
	h->save_len = 5;
	*len = ftl_ckpt_file_bytes(h);
	uint8_t *image = malloc(*len);
	assert_non_null(image);
	ftl_ckpt_encode_header(h, image);
	size_t start = ftl_ckpt_payload_offset(h, 0);
	for (size_t i = start; i < *len - ftl_ckpt_sum_bytes(h->sum_kind); i++)
		image[i] = (uint8_t)(i * 31 + 7);
	ftl_ckpt_seal(h, image);
	return image;
}

static void test_encoded_image_verifies_and_reads_back_every_field(void **state)
{
	ftl_ckpt_header h, back;
	size_t len;
	uint8_t *image = make_image(&h, &len);
	assert_int_equal(len, 80 + 2 * 72 + 40 + 24 + 5 + 16);
	assert_int_equal(ftl_ckpt_verify(image, len, &back), 0);
	assert_int_equal(back.version, FTL_CKPT_VERSION);
	assert_int_equal(back.sum_kind, FTL_CKPT_SUM_XXH3);
	assert_true(back.job_id == 0x1234abcd5678ef90ULL);
	assert_int_equal(back.step, 1200);
	assert_int_equal(back.view_epoch, 7);
	assert_int_equal(back.data_epoch, 2);
	assert_int_equal(back.sample_pos, 4096);
	assert_int_equal(back.world_size, 4);
	assert_int_equal(back.save_len, 5);
	assert_string_equal(back.names[1], "momentum");
	assert_int_equal(back.sizes[0], 40);
	assert_int_equal(ftl_ckpt_payload_offset(&back, 2), 80 + 144 + 64);
	assert_int_equal(ftl_ckpt_same_shape(&back, &h), 0);
	free(image);
}

static void test_every_truncation_is_refused_as_truncated(void **state)
{
	ftl_ckpt_header h, back;
	size_t len;
	uint8_t *image = make_image(&h, &len);
	for (size_t cut = 0; cut < len; cut++) {
		assert_int_equal(ftl_ckpt_verify(image, cut, &back), FTL_ERR_INVALID);
		if (strncmp(ftl_diag_message(), "truncated", 9) != 0)
			fail_msg("%zu of %zu bytes: expected 'truncated', got '%s'", cut, len, ftl_diag_message());
	}
	free(image);
}

static void test_every_single_byte_flip_is_detected(void **state)
{
	ftl_ckpt_header h, back;
	size_t len;
	uint8_t *image = make_image(&h, &len);
	static const uint8_t flips[] = {0x01, 0x80, 0xff};
	for (size_t i = 0; i < len; i++) {
		for (size_t f = 0; f < sizeof(flips); f++) {
			image[i] ^= flips[f];
			if (ftl_ckpt_verify(image, len, &back) == 0)
				fail_msg("byte %zu ^ 0x%02x was not detected", i, flips[f]);
			image[i] ^= flips[f];
		}
	}
	assert_int_equal(ftl_ckpt_verify(image, len, &back), 0);
	/* A flip in the payload is the checksum's to catch. */
	image[len - ftl_ckpt_sum_bytes(h.sum_kind) - 1] ^= 1;
	assert_int_equal(ftl_ckpt_verify(image, len, &back), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "checksum mismatch"));
	free(image);
}

static void test_other_format_version_is_refused_by_name(void **state)
{
	ftl_ckpt_header h, back;
	size_t len;
	uint8_t *image = make_image(&h, &len);
	image[8] = 3;
	ftl_ckpt_seal(&h, image); /* a well-formed file of another version */
	assert_int_equal(ftl_ckpt_verify(image, len, &back), FTL_ERR_INVALID);
	assert_string_equal(ftl_diag_message(), "format version 3, this build reads versions 1 and 2");
	free(image);
}

static void test_blake2b_file_verifies_and_every_flip_is_detected(void **state)
{
	ftl_ckpt_header h, back;
	size_t len;
	free(make_image(&h, &len));
	h.sum_kind = FTL_CKPT_SUM_BLAKE2B;
	len = ftl_ckpt_file_bytes(&h);
	uint8_t *image = calloc(1, len);
	ftl_ckpt_encode_header(&h, image);
	ftl_ckpt_seal(&h, image);
	assert_int_equal(len, 80 + 2 * 72 + 40 + 24 + 5 + 32);
	assert_int_equal(ftl_ckpt_verify(image, len, &back), 0);
	assert_int_equal(back.sum_kind, FTL_CKPT_SUM_BLAKE2B);
	image[300] ^= 4;
	assert_int_equal(ftl_ckpt_verify(image, len, &back), FTL_ERR_INVALID);
	assert_string_equal(ftl_diag_message(), "checksum mismatch (blake2b): the file is corrupt");
	free(image);
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A file as version 1 wrote it (64-byte fixed header, kind word 0, BLAKE2b): it still loads, job id 0. */
static void test_version_1_file_still_verifies(void **state)
{
	size_t len = 64 + 72 + 16 + 32;
	uint8_t *image = calloc(1, len);
	memcpy(image, "FTLCKPT", 8);
	put_le(image + 8, 1, 4);
	put_le(image + 12, 1, 4);
	put_le(image + 16, 700, 8);
	put_le(image + 56, 0, 8);
	memcpy(image + 64, "params", 6);
	put_le(image + 64 + 64, 16, 8);
	memset(image + 64 + 72, 0x5a, 16);
	ftl_ckpt_checksum(FTL_CKPT_SUM_BLAKE2B, image, len - 32, image + len - 32);
	ftl_ckpt_header back;
	assert_int_equal(ftl_ckpt_verify(image, len, &back), 0);
	assert_int_equal(back.version, 1);
	assert_int_equal(back.sum_kind, FTL_CKPT_SUM_BLAKE2B);
	assert_true(back.job_id == 0);
	assert_int_equal(back.step, 700);
	assert_int_equal(back.sizes[0], 16);
	assert_int_equal(ftl_ckpt_payload_offset(&back, 0), 64 + 72);
	image[64 + 72] ^= 1;
	assert_int_equal(ftl_ckpt_verify(image, len, &back), FTL_ERR_INVALID);
	free(image);
}

static void test_other_buffers_are_a_shape_mismatch(void **state)
{
	ftl_ckpt_header h, mine;
	size_t len;
	free(make_image(&h, &len));
	mine = h;
	mine.sizes[1] = 48;
	assert_int_equal(ftl_ckpt_same_shape(&h, &mine), FTL_ERR_INVALID);
	assert_string_equal(ftl_diag_message(), "shape mismatch: buffer 'momentum' is 24 bytes in the file, 48 registered");
	mine = h;
	snprintf(mine.names[0], sizeof(mine.names[0]), "weights");
	assert_int_equal(ftl_ckpt_same_shape(&h, &mine), FTL_ERR_INVALID);
	assert_non_null(strstr(ftl_diag_message(), "'params' in the file, 'weights' registered"));
	mine = h;
	mine.n_buffers = 3;
	assert_int_equal(ftl_ckpt_same_shape(&h, &mine), FTL_ERR_INVALID);
	assert_string_equal(ftl_diag_message(), "shape mismatch: 2 buffers in the file, 3 registered");
	mine = h;
	mine.save_len = 999; /* the save bytes are the callbacks' business, not the shape */
	assert_int_equal(ftl_ckpt_same_shape(&h, &mine), 0);
}

static void test_file_names_sort_by_step_and_temps_never_match(void **state)
{
	char name[FTL_CKPT_NAME_MAX];
	uint64_t step, job;
	ftl_ckpt_file_name(42, 0xabcdef0123456789ULL, name, sizeof(name));
	assert_string_equal(name, "ckpt-00000000000000000042-abcdef0123456789.ftl");
	assert_true(ftl_ckpt_parse_file_name(name, &step, &job));
	assert_int_equal(step, 42);
	assert_true(job == 0xabcdef0123456789ULL);
	ftl_ckpt_file_name(UINT64_MAX, UINT64_MAX, name, sizeof(name));
	assert_true(ftl_ckpt_parse_file_name(name, &step, &job));
	assert_true(step == UINT64_MAX && job == UINT64_MAX);
	ftl_ckpt_file_name(42, 0, name, sizeof(name)); /* version 1: no job id */
	assert_string_equal(name, "ckpt-00000000000000000042.ftl");
	assert_true(ftl_ckpt_parse_file_name(name, &step, &job));
	assert_true(step == 42 && job == 0);
	assert_false(ftl_ckpt_parse_file_name(".ckpt-42.tmp-1234", &step, &job));
	assert_false(ftl_ckpt_parse_file_name("ckpt-00000000000000000042.ftl.bak", &step, &job));
	assert_false(ftl_ckpt_parse_file_name("ckpt-0000000000000000004x.ftl", &step, &job));
	assert_false(ftl_ckpt_parse_file_name("ckpt-42.ftl", &step, &job));
	assert_false(ftl_ckpt_parse_file_name("ckpt-00000000000000000042-ABCDEF0123456789.ftl", &step, &job));
	assert_false(ftl_ckpt_parse_file_name("ckpt-00000000000000000042-0000000000000000.ftl", &step, &job));
	assert_false(ftl_ckpt_parse_file_name("ckpt-00000000000000000042-abc.ftl", &step, &job));
}

static char *temp_dir(void)
{
	char *dir = strdup("/tmp/ftl-ckpt-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void touch(const char *dir, const char *name, const void *data, size_t len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void remove_dir(char *dir)
{
	char cmd[1100];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

static void test_listing_is_newest_first_and_retention_keeps_exactly_k(void **state)
{
	char *dir = temp_dir();
	char name[FTL_CKPT_NAME_MAX];
	for (uint64_t step = 100; step <= 1000; step += 100) {
		ftl_ckpt_file_name(step, 7, name, sizeof(name));
		touch(dir, name, "x", 1);
	}
	touch(dir, ".ckpt-1100.tmp-99", "partial", 7);
	touch(dir, "notes.txt", "hi", 2);
	char(*names)[FTL_CKPT_NAME_MAX];
	size_t n;
	assert_int_equal(ftl_ckpt_list(dir, &names, &n), FTL_OK);
	assert_int_equal(n, 10);
	assert_string_equal(names[0], "ckpt-00000000000000001000-0000000000000007.ftl");
	assert_string_equal(names[9], "ckpt-00000000000000000100-0000000000000007.ftl");
	free(names);
	assert_int_equal(ftl_ckpt_retain(dir, 7, 3), 7);
	assert_int_equal(ftl_ckpt_list(dir, &names, &n), FTL_OK);
	assert_int_equal(n, 3);
	assert_string_equal(names[2], "ckpt-00000000000000000800-0000000000000007.ftl");
	free(names);
	assert_int_equal(ftl_ckpt_remove_temps(dir), 1);
	char path[1100];
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	assert_int_equal(access(path, F_OK), 0); /* not ours: left alone */
	remove_dir(dir);
}

/* ---- resume through the registered state ---- */

typedef struct fake_job {
	ftl_training_config cfg;
	ftl_state_registry r;
	ftl_checkpoints c;
	float params[16];
	double momentum[4];
	char extra[32]; /* what the save/load callbacks carry */
} fake_job;

static size_t save_extra(void *ctx, void *buf, size_t cap)
{
	fake_job *j = ctx;
	size_t n = strlen(j->extra) + 1;
	if (buf && cap >= n)
		memcpy(buf, j->extra, n);
	return n;
}

static void load_extra(void *ctx, const void *buf, size_t len)
{
	fake_job *j = ctx;
	snprintf(j->extra, sizeof(j->extra), "%.*s", (int)len, (const char *)buf);
}

static void job_init(fake_job *j, const char *dir)
{
	memset(j, 0, sizeof(*j));
	ftl_training_config_default(&j->cfg);
	snprintf(j->cfg.checkpoint_dir, sizeof(j->cfg.checkpoint_dir), "%s", dir);
	j->cfg.checkpoint_every = 10;
	j->cfg.checkpoint_wait = true;
	j->r.buffers[0] = (ftl_buffer_reg){.name = "params", .ptr = j->params, .bytes = sizeof(j->params)};
	j->r.buffers[1] = (ftl_buffer_reg){.name = "momentum", .ptr = j->momentum, .bytes = sizeof(j->momentum)};
	j->r.n_buffers = 2;
	j->r.save = save_extra;
	j->r.load = load_extra;
	j->r.cb_ctx = j;
	assert_int_equal(ftl_checkpoint_setup(&j->c, &j->cfg, ftl_logger_stderr()), FTL_OK);
}

/* Steps the fake job to `steps`, checkpointing every 10; the state after step s is a function of s. */
static void run_to(fake_job *j, uint64_t steps)
{
	while (j->r.step < steps) {
		j->r.step++;
		j->r.sample_pos = j->r.step * 64;
		for (int i = 0; i < 16; i++)
			j->params[i] = (float)(j->r.step * 100 + (uint64_t)i);
		j->momentum[0] = (double)j->r.step / 3.0;
		snprintf(j->extra, sizeof(j->extra), "rng-state-%llu", (unsigned long long)j->r.step);
		ftl_checkpoint_after_step(&j->c, &j->r, 5, 4);
	}
	ftl_ckpt_writer_flush(j->c.writer);
}

static fake_job *new_fake_job(const char *dir)
{
	fake_job *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	job_init(j, dir);
	return j;
}

static void fake_job_free(fake_job *j)
{
	ftl_checkpoint_teardown(&j->c);
	free(j);
}

/* Whether err contains every one of parts (a NULL-ended list); fails the test naming the missing one. */
static void expect_parts(const char *err, const char *const *parts)
{
	for (; *parts; parts++)
		if (!strstr(err, *parts))
			fail_msg("expected '%s' in the error: %s", *parts, err);
}

static void corrupt(const char *dir, uint64_t job_id, uint64_t step, off_t at)
{
	char name[FTL_CKPT_NAME_MAX], path[1100];
	ftl_ckpt_file_name(step, job_id, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x10;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

static void test_resume_loads_the_newest_that_verifies_with_step_sampler_and_callbacks(void **state)
{
	char *dir = temp_dir();
	fake_job *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	job_init(a, dir);
	run_to(a, 35); /* checkpoints at 10, 20, 30 */
	corrupt(dir, a->r.job_id, 30, 300); /* a payload byte of the newest */
	job_init(b, dir);
	assert_int_equal(ftl_checkpoint_resume(&b->c, &b->r), FTL_OK);
	assert_true(b->r.has_state);
	assert_true(b->r.job_id == a->r.job_id); /* the job goes on under its id */
	assert_int_equal(b->r.step, 20);
	assert_int_equal(b->r.sample_pos, 20 * 64);
	assert_true(b->params[15] == 2015.0f);
	assert_true(b->momentum[0] == 20 / 3.0);
	assert_string_equal(b->extra, "rng-state-20");
	json_t *st = ftl_checkpoint_status_json(&b->c);
	assert_int_equal(json_integer_value(json_object_get(st, "last_step")), 20);
	assert_string_equal(json_string_value(json_object_get(st, "writer")), "idle");
	json_decref(st);
	ftl_checkpoint_teardown(&a->c);
	ftl_checkpoint_teardown(&b->c);
	free(a);
	free(b);
	remove_dir(dir);
}

/* The file of `job_id` at `step` in dir, whole (NULL when absent). */
static char *file_bytes(const char *dir, uint64_t job_id, uint64_t step, size_t *len)
{
	char name[FTL_CKPT_NAME_MAX], path[1100];
	ftl_ckpt_file_name(step, job_id, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 16);
	*len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

/* Job a's checkpoints of steps 10, 20, 30, byte for byte, to compare after others ran in the dir. */
typedef struct snapshot {
	char *bytes[3];
	size_t len[3];
} snapshot;

static void take(snapshot *s, const char *dir, uint64_t job_id)
{
	for (int i = 0; i < 3; i++)
		assert_non_null(s->bytes[i] = file_bytes(dir, job_id, 10 * (uint64_t)(i + 1), &s->len[i]));
}

static void expect_unchanged(snapshot *s, const char *dir, uint64_t job_id)
{
	for (int i = 0; i < 3; i++) {
		size_t len;
		char *now = file_bytes(dir, job_id, 10 * (uint64_t)(i + 1), &len);
		if (!now)
			fail_msg("job %016llx's checkpoint of step %d was deleted", (unsigned long long)job_id, 10 * (i + 1));
		assert_true(len == s->len[i] && memcmp(now, s->bytes[i], len) == 0);
		free(now);
		free(s->bytes[i]);
	}
}

static float third_buffer[4];

static void register_one_more_buffer(fake_job *j)
{
	j->r.buffers[2] = (ftl_buffer_reg){.name = "bias", .ptr = third_buffer, .bytes = sizeof(third_buffer)};
	j->r.n_buffers = 3;
}

static void test_resume_with_one_more_buffer_stops_naming_dir_file_and_setting(void **state)
{
	char *dir = temp_dir();
	fake_job *a = new_fake_job(dir);
	run_to(a, 35);
	snapshot before;
	take(&before, dir, a->r.job_id);
	fake_job *b = new_fake_job(dir);
	register_one_more_buffer(b);
	assert_int_equal(ftl_checkpoint_resume(&b->c, &b->r), FTL_ERR_INVALID);
	char newest[FTL_CKPT_NAME_MAX];
	ftl_ckpt_file_name(30, a->r.job_id, newest, sizeof(newest));
	expect_parts(ftl_diag_message(),
		     (const char *const[]){dir, newest, "shape mismatch: 2 buffers in the file, 3 registered",
					   "FTL_CHECKPOINT_FRESH=1", NULL});
	assert_false(b->r.has_state);
	assert_int_equal(b->r.step, 0);
	assert_true(b->params[0] == 0.0f);
	expect_unchanged(&before, dir, a->r.job_id);
	fake_job_free(a);
	fake_job_free(b);
	remove_dir(dir);
}

static void test_all_corrupt_stops_and_keeps_files(void **state)
{
	char *dir = temp_dir();
	fake_job *a = new_fake_job(dir);
	run_to(a, 35);
	for (uint64_t step = 10; step <= 30; step += 10)
		corrupt(dir, a->r.job_id, step, 300);
	snapshot before;
	take(&before, dir, a->r.job_id);
	fake_job *b = new_fake_job(dir);
	assert_int_equal(ftl_checkpoint_resume(&b->c, &b->r), FTL_ERR_INVALID);
	expect_parts(ftl_diag_message(), (const char *const[]){"none of the 3 checkpoint(s)", dir, "checksum mismatch",
							     "FTL_CHECKPOINT_FRESH=1", NULL});
	assert_int_equal(b->r.step, 0);
	expect_unchanged(&before, dir, a->r.job_id);
	fake_job_free(a);
	fake_job_free(b);
	remove_dir(dir);
}

/* FTL_CHECKPOINT_FRESH=1 over another program's checkpoints: it starts from step 0 under a new job id,
 * writes and rotates its own files (past FTL_CHECKPOINT_KEEP, at the same steps as the old ones) without
 * touching one of the old job's; a later run of it, without the setting, resumes its own newest. */
static void test_fresh_start_never_deletes_nor_overwrites_another_jobs_files(void **state)
{
	char *dir = temp_dir();
	fake_job *a = new_fake_job(dir);
	run_to(a, 35);
	snapshot before;
	take(&before, dir, a->r.job_id);
	fake_job *b = new_fake_job(dir);
	register_one_more_buffer(b);
	b->cfg.checkpoint_fresh = true;
	assert_int_equal(ftl_checkpoint_resume(&b->c, &b->r), FTL_OK);
	assert_false(b->r.has_state);
	assert_true(b->r.job_id != 0 && b->r.job_id != a->r.job_id);
	run_to(b, 25); /* checkpoints at 10, 20: the old job's steps, and newer files of the old job exist */
	expect_unchanged(&before, dir, a->r.job_id);
	take(&before, dir, a->r.job_id);
	run_to(b, 60); /* 6 of its own, keep 3: retention runs */
	expect_unchanged(&before, dir, a->r.job_id);
	size_t len;
	char *f = file_bytes(dir, b->r.job_id, 20, &len);
	assert_null(f); /* its own old ones do go */
	assert_non_null(f = file_bytes(dir, b->r.job_id, 40, &len));
	free(f);
	fake_job *c = new_fake_job(dir);
	register_one_more_buffer(c);
	assert_int_equal(ftl_checkpoint_resume(&c->c, &c->r), FTL_OK);
	assert_true(c->r.has_state && c->r.job_id == b->r.job_id);
	assert_int_equal(c->r.step, 60);
	fake_job_free(a);
	fake_job_free(b);
	fake_job_free(c);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encoded_image_verifies_and_reads_back_every_field),
		cmocka_unit_test(test_every_truncation_is_refused_as_truncated),
		cmocka_unit_test(test_every_single_byte_flip_is_detected),
		cmocka_unit_test(test_other_format_version_is_refused_by_name),
		cmocka_unit_test(test_blake2b_file_verifies_and_every_flip_is_detected),
		cmocka_unit_test(test_version_1_file_still_verifies),
		cmocka_unit_test(test_other_buffers_are_a_shape_mismatch),
		cmocka_unit_test(test_file_names_sort_by_step_and_temps_never_match),
		cmocka_unit_test(test_listing_is_newest_first_and_retention_keeps_exactly_k),
		cmocka_unit_test(test_resume_loads_the_newest_that_verifies_with_step_sampler_and_callbacks),
		cmocka_unit_test(test_resume_with_one_more_buffer_stops_naming_dir_file_and_setting),
		cmocka_unit_test(test_all_corrupt_stops_and_keeps_files),
		cmocka_unit_test(test_fresh_start_never_deletes_nor_overwrites_another_jobs_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
