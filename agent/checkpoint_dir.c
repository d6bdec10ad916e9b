/* The checkpoint directory: names, listing newest first, retention, and the temp files a writer that died
 * mid-write leaves behind. Finished files are ckpt-<step as 20 digits>.ftl, so name order is step order
 * and a listing needs no file to be opened; temps are .ckpt-<step>.tmp-<pid> and never match that
 * pattern, so a loader cannot pick one up. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "ckpt-"
#define SUFFIX ".ftl"
#define STEP_DIGITS 20
#define TEMP_PREFIX ".ckpt-"

void ftl_ckpt_file_name(uint64_t step, char *out, size_t len)
{
	snprintf(out, len, PREFIX "%0*llu" SUFFIX, STEP_DIGITS, (unsigned long long)step);
}

bool ftl_ckpt_parse_file_name(const char *name, uint64_t *step)
{
	size_t pre = strlen(PREFIX), suf = strlen(SUFFIX);
	if (strlen(name) != pre + STEP_DIGITS + suf || strncmp(name, PREFIX, pre) != 0 ||
	    strcmp(name + pre + STEP_DIGITS, SUFFIX) != 0)
		return false;
	uint64_t v = 0;
	for (size_t i = pre; i < pre + STEP_DIGITS; i++) {
		if (name[i] < '0' || name[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	*step = v;
	return true;
}

static int newest_first(const void *x, const void *y) { return -strcmp((const char *)x, (const char *)y); }

int ftl_ckpt_list(const char *dir, char (**names)[FTL_CKPT_NAME_MAX], size_t *n)
{
	*names = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	size_t cap = 0;
	struct dirent *e;
	uint64_t step;
	while ((e = readdir(d))) {
		if (!ftl_ckpt_parse_file_name(e->d_name, &step))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			char(*grown)[FTL_CKPT_NAME_MAX] = realloc(*names, cap * sizeof(**names));
			if (!grown) {
				closedir(d);
				free(*names);
				*names = NULL;
				errno = ENOMEM;
				return -1;
			}
			*names = grown;
		}
		ftl_ckpt_file_name(step, (*names)[(*n)++], FTL_CKPT_NAME_MAX); /* the same name, rebuilt */
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(**names), newest_first);
	return 0;
}

int ftl_ckpt_retain(const char *dir, int keep)
{
	char(*names)[FTL_CKPT_NAME_MAX];
	size_t n;
	int deleted = 0;
	if (ftl_ckpt_list(dir, &names, &n) != 0)
		return 0;
	for (size_t i = (size_t)keep; i < n; i++) {
		char path[FTL_CKPT_PATH_MAX + 8];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		deleted += unlink(path) == 0;
	}
	free(names);
	return deleted;
}

int ftl_ckpt_remove_temps(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) != 0 || !strstr(e->d_name, ".tmp-"))
			continue;
		char path[FTL_CKPT_DIR_MAX + 256 + 8];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		removed += unlink(path) == 0;
	}
	closedir(d);
	return removed;
}

int ftl_ckpt_make_dir(const char *dir)
{
	char path[FTL_CKPT_DIR_MAX];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = path + 1;; p++) {
		bool is_end = *p == '\0';
		if (*p != '/' && !is_end)
			continue;
		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -1;
		if (is_end)
			break;
		*p = '/';
	}
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}
