/* The life lock's file (witness_life.h). Only glibc is known to keep a robust mutex's futex word first in
 * pthread_mutex_t, where the kernel's robust-list walk marks it; the static assert below holds us to it. */
#include "witness_life.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/diag.h"

#define LIFE_MAGIC 0x6566696c2d6c7466ull /* "ftl-life" */
#define LIFE_VERSION 1

_Static_assert(offsetof(pthread_mutex_t, __data.__lock) == 0, "the robust futex word must open pthread_mutex_t");

void ftl_life_path(char out[FTL_LIFE_PATH_MAX], const char *name, uint64_t generation)
{
	uint8_t key[FTL_NAME_MAX + sizeof(generation)];
	size_t len = strnlen(name, FTL_NAME_MAX - 1);
	memcpy(key, name, len);
	memcpy(key + len, &generation, sizeof(generation));
	XXH128_hash_t h = XXH3_128bits(key, len + sizeof(generation));
	snprintf(out, FTL_LIFE_PATH_MAX, FTL_LIFE_DIR "/ftl-life-%u-%016llx%016llx", (unsigned)geteuid(),
		 (unsigned long long)h.high64, (unsigned long long)h.low64);
}

_Atomic uint32_t *ftl_life_word(ftl_life *l) { return (_Atomic uint32_t *)(void *)&l->lock; }

static void wake_everyone(ftl_life *l)
{
	syscall(SYS_futex, (uint32_t *)(void *)&l->lock, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static ftl_life *map_file(int fd)
{
	void *p = mmap(NULL, sizeof(ftl_life), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* fd's life lock, mapped, when the file is one we trust: a regular file of our uid, mode 0600 or tighter,
 * of a life lock's size. Closes fd (-1: NULL). */
static ftl_life *map_if_ours(int fd)
{
	if (fd < 0)
		return NULL;
	struct stat st;
	ftl_life *l = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0 &&
	    st.st_size == (off_t)sizeof(ftl_life))
		l = map_file(fd);
	close(fd);
	return l;
}

static ftl_err init_locked(ftl_life *l, const char *name, uint64_t generation)
{
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	int rc = pthread_mutex_init(&l->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	if (rc == 0)
		rc = pthread_mutex_lock(&l->lock);
	if (rc != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "life lock: %s", strerror(rc));
	l->magic = LIFE_MAGIC;
	l->version = LIFE_VERSION;
	l->generation = generation;
	strncpy(l->name, name, FTL_NAME_MAX - 1);
	return FTL_OK;
}

ftl_life *ftl_life_create(const char *name, uint64_t generation)
{
	char path[FTL_LIFE_PATH_MAX], tmp[FTL_LIFE_PATH_MAX + 24];
	ftl_life_path(path, name, generation);
	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)syscall(SYS_gettid));
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		ftl_diag_set(FTL_ERR_SYSTEM, "life lock %s: %s", tmp, strerror(errno));
		return NULL;
	}
	ftl_life *l = ftruncate(fd, sizeof(ftl_life)) == 0 ? map_file(fd) : NULL;
	close(fd);
	if (!l) {
		ftl_diag_set(FTL_ERR_SYSTEM, "life lock %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return NULL;
	}
	if (init_locked(l, name, generation) != FTL_OK) {
		munmap(l, sizeof(*l));
		unlink(tmp);
		return NULL;
	}
	if (rename(tmp, path) != 0) { /* a stranger's file at our path (the directory is sticky) */
		ftl_diag_set(FTL_ERR_SYSTEM, "life lock %s: %s", path, strerror(errno));
		pthread_mutex_unlock(&l->lock);
		munmap(l, sizeof(*l));
		unlink(tmp);
		return NULL;
	}
	return l;
}

void ftl_life_release(ftl_life *l)
{
	if (!l)
		return;
	char path[FTL_LIFE_PATH_MAX];
	ftl_life_path(path, l->name, l->generation);
	unlink(path);
	atomic_store(&l->is_leaving, 1);
	pthread_mutex_unlock(&l->lock);
	wake_everyone(l); /* the unlock wakes one waiter, and each watcher process waits on its own */
	munmap(l, sizeof(*l));
}

ftl_life *ftl_life_open(const char *name, uint64_t generation)
{
	char path[FTL_LIFE_PATH_MAX];
	ftl_life_path(path, name, generation);
	ftl_life *l = map_if_ours(open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW));
	if (l && (l->magic != LIFE_MAGIC || l->version != LIFE_VERSION || l->generation != generation ||
		  strncmp(l->name, name, FTL_NAME_MAX) != 0)) {
		ftl_life_unmap(l);
		l = NULL;
	}
	return l;
}

void ftl_life_unmap(ftl_life *l)
{
	if (l)
		munmap(l, sizeof(*l));
}

/* A life lock whose owner died where no watcher saw it (the last worker on a host, killed) stays behind:
 * remove such files of ours, which the kernel marked, so /dev/shm does not fill over months of kills. */
void ftl_life_sweep(void)
{
	DIR *d = opendir(FTL_LIFE_DIR);
	if (!d)
		return;
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "ftl-life-%u-", (unsigned)geteuid());
	for (struct dirent *e; (e = readdir(d));) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		ftl_life *l = map_if_ours(openat(dirfd(d), e->d_name, O_RDWR | O_CLOEXEC | O_NOFOLLOW));
		if (l && (atomic_load(ftl_life_word(l)) & FUTEX_OWNER_DIED))
			unlinkat(dirfd(d), e->d_name, 0);
		ftl_life_unmap(l);
	}
	closedir(d);
}
