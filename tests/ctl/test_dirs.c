/* Temporary directories and stale sockets for the control tests (see test_dirs.h). */
#include "test_dirs.h"

#include <stdarg.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void test_dir_make(char *dir, size_t dir_len)
{
	snprintf(dir, dir_len, "/tmp/ftl-ctl-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	remove(path);
	return 0;
}

void test_dir_remove(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void test_dir_make_stale_socket(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
	close(fd); /* the file stays; connecting to it is refused */
}
