/* A fresh temporary directory per test, removed with everything in it afterwards. */
#ifndef FTL_TESTS_TEST_DIRS_H
#define FTL_TESTS_TEST_DIRS_H

#include <stddef.h>

/* Creates /tmp/ftl-ctl-test-XXXXXX and writes its path into dir. */
void test_dir_make(char *dir, size_t dir_len);
/* rm -rf dir. */
void test_dir_remove(const char *dir);
/* Leaves a socket file at path that nothing listens on (an agent that died without cleaning up). */
void test_dir_make_stale_socket(const char *path);

#endif
