/* The checkpoint writer (train/checkpoint_writer.c): files become durable under their final name only
 * when whole, retention keeps exactly K, a busy writer skips or waits as configured, and a write that
 * fails (file too large, full disk, no permission) is reported and leaves the previous checkpoint intact.
 * A writer is made busy deterministically by a FIFO at the temp path it will open: it blocks there until
 * the test reads. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "base/log.h"

static char *temp_dir(void)
{
	char *dir = strdup("/tmp/ftl-ckpt-writer-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void remove_dir(char *dir)
{
	char cmd[1100];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

/* Stages a checkpoint of `step` with one buffer of `bytes` (filled from the step) and submits it. */
#define JOB 0x5eed5eed5eed5eedULL

static bool write_step_summed(ftl_ckpt_writer *w, uint64_t step, size_t bytes, ftl_ckpt_sum_kind kind)
{
	ftl_ckpt_header h = {.version = FTL_CKPT_VERSION, .sum_kind = kind, .job_id = JOB, .step = step,
			     .n_buffers = 1, .sizes = {bytes}};
	snprintf(h.names[0], sizeof(h.names[0]), "params");
	size_t len = ftl_ckpt_file_bytes(&h);
	uint8_t *image = ftl_ckpt_writer_begin(w, step, len);
	if (!image)
		return false;
	ftl_ckpt_encode_header(&h, image);
	uint8_t *payload = image + ftl_ckpt_payload_offset(&h, 0);
	for (size_t i = 0; i < bytes; i++)
		payload[i] = (uint8_t)(step + i * 7 + (i >> 13)); /* every chunk differs */
	ftl_ckpt_writer_submit(w, 0);
	return true;
}

static bool write_step(ftl_ckpt_writer *w, uint64_t step, size_t bytes)
{
	return write_step_summed(w, step, bytes, FTL_CKPT_SUM_XXH3);
}

/* Whether dir's checkpoint of `step` exists and verifies; its step is checked too. */
static bool verifies(const char *dir, uint64_t step)
{
	char name[FTL_CKPT_NAME_MAX], path[1100];
	ftl_ckpt_file_name(step, JOB, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	uint8_t *image = malloc((size_t)len);
	bool ok = image && fread(image, 1, (size_t)len, f) == (size_t)len;
	fclose(f);
	ftl_ckpt_header h;
	ok = ok && ftl_ckpt_verify(image, (size_t)len, &h) == 0 && h.step == step;
	free(image);
	return ok;
}

static int count_entries(const char *dir)
{
	char cmd[1100];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	FILE *p = popen(cmd, "r");
	int n = -1;
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

static ftl_ckpt_writer *writer(const char *dir, int keep, bool is_waiting)
{
	ftl_ckpt_writer *w = ftl_ckpt_writer_new(dir, keep, is_waiting, ftl_logger_stderr());
	if (!w)
		fail_msg("%s", ftl_diag_message());
	return w;
}

static void test_written_checkpoint_is_durable_whole_and_alone(void **state)
{
	char *dir = temp_dir();
	ftl_ckpt_writer *w = writer(dir, 3, false);
	assert_true(write_step(w, 100, 1 << 20));
	ftl_ckpt_writer_flush(w);
	assert_true(verifies(dir, 100));
	assert_int_equal(count_entries(dir), 1); /* no temp left behind */
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(w, &s);
	assert_int_equal(s.state, FTL_CKPT_WRITER_IDLE);
	assert_int_equal(s.written, 1);
	assert_int_equal(s.last_step, 100);
	assert_non_null(strstr(s.last_file, "ckpt-00000000000000000100-5eed5eed5eed5eed.ftl"));
	ftl_ckpt_writer_delete(w);
	remove_dir(dir);
}

/* Files of several write chunks (8 MiB) and an odd tail verify with either checksum: the one computed
 * alongside the write is the one a reader computes over the whole file. */
static void test_multi_chunk_files_verify_with_either_checksum(void **state)
{
	char *dir = temp_dir();
	ftl_ckpt_writer *w = writer(dir, 3, true);
	size_t bytes = (17u << 20) + 12345;
	assert_true(write_step_summed(w, 1, bytes, FTL_CKPT_SUM_XXH3));
	assert_true(write_step_summed(w, 2, bytes, FTL_CKPT_SUM_BLAKE2B));
	ftl_ckpt_writer_flush(w);
	assert_true(verifies(dir, 1));
	assert_true(verifies(dir, 2));
	ftl_ckpt_writer_delete(w);
	remove_dir(dir);
}

static void test_retention_keeps_exactly_k_newest(void **state)
{
	char *dir = temp_dir();
	ftl_ckpt_writer *w = writer(dir, 3, true);
	for (uint64_t step = 1; step <= 7; step++)
		assert_true(write_step(w, step * 10, 4096));
	ftl_ckpt_writer_flush(w);
	assert_int_equal(count_entries(dir), 3);
	assert_true(verifies(dir, 50) && verifies(dir, 60) && verifies(dir, 70));
	ftl_ckpt_writer_delete(w);
	remove_dir(dir);
}

static void test_delete_finishes_the_write_in_progress(void **state)
{
	char *dir = temp_dir();
	ftl_ckpt_writer *w = writer(dir, 3, false);
	assert_true(write_step(w, 5, 8 << 20));
	ftl_ckpt_writer_delete(w);
	assert_true(verifies(dir, 5));
	remove_dir(dir);
}

/* A FIFO where the writer's temp for `step` will be: its open blocks until someone reads. */
static char *block_writer_at(const char *dir, uint64_t step)
{
	char *fifo = malloc(1100);
	snprintf(fifo, 1100, "%s/.ckpt-%llu.tmp-%ld", dir, (unsigned long long)step, (long)getpid());
	assert_int_equal(mkfifo(fifo, 0600), 0);
	return fifo;
}

static void *drain_fifo(void *arg)
{
	int fd = open(arg, O_RDONLY);
	char buf[65536];
	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void test_busy_writer_skips_the_next_checkpoint_in_skip_mode(void **state)
{
	char *dir = temp_dir();
	ftl_ckpt_writer *w = writer(dir, 3, false);
	char *fifo = block_writer_at(dir, 10);
	assert_true(write_step(w, 10, 4096));
	assert_false(write_step(w, 20, 4096)); /* still writing 10: skipped, not queued */
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(w, &s);
	assert_int_equal(s.skipped, 1);
	assert_int_equal(s.state, FTL_CKPT_WRITER_WRITING);
	pthread_t t;
	pthread_create(&t, NULL, drain_fifo, fifo);
	ftl_ckpt_writer_flush(w); /* a FIFO cannot be fsynced: this write fails, which is fine here */
	pthread_join(t, NULL);
	assert_true(write_step(w, 30, 4096));
	ftl_ckpt_writer_flush(w);
	assert_true(verifies(dir, 30));
	ftl_ckpt_writer_delete(w);
	unlink(fifo);
	free(fifo);
	remove_dir(dir);
}

typedef struct delayed_drain {
	char *fifo;
	atomic_bool is_released; /* set by the drain thread, read by the test after the writer is done */
} delayed_drain;

static void *drain_later(void *arg)
{
	delayed_drain *d = arg;
	usleep(200 * 1000);
	atomic_store(&d->is_released, true);
	return drain_fifo(d->fifo);
}

static void test_busy_writer_makes_the_next_checkpoint_wait_in_wait_mode(void **state)
{
	char *dir = temp_dir();
	ftl_ckpt_writer *w = writer(dir, 3, true);
	delayed_drain d = {.fifo = block_writer_at(dir, 10)};
	assert_true(write_step(w, 10, 4096));
	pthread_t t;
	pthread_create(&t, NULL, drain_later, &d);
	assert_true(write_step(w, 20, 4096)); /* returns only once 10 is done */
	assert_true(atomic_load(&d.is_released));
	ftl_ckpt_writer_flush(w);
	pthread_join(t, NULL);
	assert_true(verifies(dir, 20));
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(w, &s);
	assert_int_equal(s.skipped, 0);
	ftl_ckpt_writer_delete(w);
	unlink(d.fifo);
	free(d.fifo);
	remove_dir(dir);
}

/* Writes a good checkpoint of step 1, then `break_it(dir)`, then tries step 2 of `bytes`: it must fail,
 * be reported with a reason containing `expect`, leave no temp, and leave step 1 intact. */
static void expect_failed_write_keeps_previous(const char *dir, void (*break_it)(const char *), size_t bytes,
					       const char *expect)
{
	ftl_ckpt_writer *w = writer(dir, 3, true);
	assert_true(write_step(w, 1, 4096));
	ftl_ckpt_writer_flush(w);
	break_it(dir);
	assert_true(write_step(w, 2, bytes));
	ftl_ckpt_writer_flush(w);
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(w, &s);
	assert_int_equal(s.state, FTL_CKPT_WRITER_FAILED);
	assert_int_equal(s.failed, 1);
	if (!strstr(s.last_error.message, expect))
		fail_msg("expected '%s' in the writer's error, got '%s'", expect, s.last_error.message);
	assert_int_equal(s.last_step, 1);
	ftl_ckpt_writer_delete(w);
	assert_true(verifies(dir, 1));
	assert_false(verifies(dir, 2));
	assert_int_equal(count_entries(dir), 1);
}

static void limit_file_size(const char *dir)
{
	signal(SIGXFSZ, SIG_IGN); /* write fails with EFBIG instead of killing us */
	struct rlimit r = {64 * 1024, 64 * 1024};
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &r), 0);
}

static void test_file_too_large_is_reported_and_keeps_previous(void **state)
{
	char *dir = temp_dir();
	pid_t pid = fork(); /* the file size limit stays in the child */
	if (pid == 0) {
		expect_failed_write_keeps_previous(dir, limit_file_size, 1 << 20, "File too large");
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	remove_dir(dir);
}

static void nothing(const char *dir) {}

static void test_full_disk_is_reported_and_keeps_previous(void **state)
{
	char *dir = temp_dir();
	if (mount("tmpfs", dir, "tmpfs", 0, "size=256k") != 0) {
		print_message("skipped: cannot mount a tmpfs here (%s); the file-size-limit test covers the failure path\n",
			      strerror(errno));
		remove_dir(dir);
		skip();
	}
	expect_failed_write_keeps_previous(dir, nothing, 512 * 1024, "no room for the checkpoint of step 2");
	umount(dir);
	remove_dir(dir);
}

/* A disk with room for one checkpoint but not two: the first is written, every later one fails (the new
 * file must be whole beside the old before the old goes), and the error says so with the sizes and the
 * free space, so the operator knows what to give it. */
static void test_disk_with_room_for_one_checkpoint_says_so_with_sizes(void **state)
{
	char *dir = temp_dir();
	if (mount("tmpfs", dir, "tmpfs", 0, "size=1536k") != 0) {
		print_message("skipped: cannot mount a tmpfs here (%s)\n", strerror(errno));
		remove_dir(dir);
		skip();
	}
	ftl_ckpt_writer *w = writer(dir, 3, true);
	assert_true(write_step(w, 1, 1 << 20));
	ftl_ckpt_writer_flush(w);
	assert_true(verifies(dir, 1));
	for (uint64_t step = 2; step <= 3; step++) {
		assert_true(write_step(w, step, 1 << 20));
		ftl_ckpt_writer_flush(w);
	}
	ftl_ckpt_writer_stats s;
	ftl_ckpt_writer_get_stats(w, &s);
	assert_int_equal(s.state, FTL_CKPT_WRITER_FAILED);
	assert_int_equal(s.written, 1);
	assert_int_equal(s.failed, 2);
	print_message("writer: %s\n", s.last_error.message);
	static const char *const says[] = {"no room for the checkpoint of step 3", "it needs 1.0 MiB",
					   "MiB free beside the 1 checkpoint(s) already there (1.0 MiB)",
					   "room for FTL_CHECKPOINT_KEEP + 1 = 4 checkpoints (4.0 MiB)"};
	for (size_t i = 0; i < sizeof(says) / sizeof(says[0]); i++)
		if (!strstr(s.last_error.message, says[i]))
			fail_msg("expected '%s' in '%s'", says[i], s.last_error.message);
	ftl_ckpt_writer_delete(w);
	assert_true(verifies(dir, 1));
	assert_int_equal(count_entries(dir), 1);
	umount(dir);
	remove_dir(dir);
}

static void make_read_only(const char *dir) { assert_int_equal(chmod(dir, 0555), 0); }

static void test_no_permission_is_reported_and_keeps_previous(void **state)
{
	if (geteuid() == 0) {
		print_message("skipped: root ignores directory permissions\n");
		skip();
	}
	char *dir = temp_dir();
	expect_failed_write_keeps_previous(dir, make_read_only, 4096, "Permission denied");
	chmod(dir, 0755);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_written_checkpoint_is_durable_whole_and_alone),
		cmocka_unit_test(test_multi_chunk_files_verify_with_either_checksum),
		cmocka_unit_test(test_retention_keeps_exactly_k_newest),
		cmocka_unit_test(test_delete_finishes_the_write_in_progress),
		cmocka_unit_test(test_busy_writer_skips_the_next_checkpoint_in_skip_mode),
		cmocka_unit_test(test_busy_writer_makes_the_next_checkpoint_wait_in_wait_mode),
		cmocka_unit_test(test_file_too_large_is_reported_and_keeps_previous),
		cmocka_unit_test(test_full_disk_is_reported_and_keeps_previous),
		cmocka_unit_test(test_disk_with_room_for_one_checkpoint_says_so_with_sizes),
		cmocka_unit_test(test_no_permission_is_reported_and_keeps_previous),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
