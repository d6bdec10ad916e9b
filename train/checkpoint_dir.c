/* The checkpoint directory: names, listing newest first, retention, and the temp files a writer that died
 * mid-write leaves behind. Finished files are ckpt-<step as 20 digits>-<job id as 16 hex digits>.ftl
 * (ckpt-<step>.ftl before job ids), so name order is step order and a listing needs no file to be opened;
 * temps are .ckpt-<step>.tmp-<pid> and never match that pattern, so a loader cannot pick one up.
 *
 * Whose files may be deleted: only a job's own. The job id in the name is the one in the header (the
 * writer builds both from the staged image), so retention knows a file's job without opening it. Two
 * jobs that share a directory (a new program started over an old one's checkpoints with
 * FTL_CHECKPOINT_FRESH=1, or a second run of the same program) never delete nor overwrite each other's
 * files, even at equal steps; files without a job id (version 1) are never deleted. */
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
#define JOB_DIGITS 16
#define TEMP_PREFIX ".ckpt-"

void ftl_ckpt_file_name(uint64_t step, uint64_t job_id, char *out, size_t len)
{
	if (job_id)
		snprintf(out, len, PREFIX "%0*llu-%0*llx" SUFFIX, STEP_DIGITS, (unsigned long long)step, JOB_DIGITS,
			 (unsigned long long)job_id);
	else
		snprintf(out, len, PREFIX "%0*llu" SUFFIX, STEP_DIGITS, (unsigned long long)step);
}

/* `digits` characters of p in base 10 or 16 (lower case, as written); false on any other character. */
static bool parse_digits(const char *p, int digits, int base, uint64_t *out)
{
	uint64_t v = 0;
	for (int i = 0; i < digits; i++) {
		int d = -1;
		if (p[i] >= '0' && p[i] <= '9')
			d = p[i] - '0';
		else if (base == 16 && p[i] >= 'a' && p[i] <= 'f')
			d = p[i] - 'a' + 10;
		if (d < 0)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return true;
}

bool ftl_ckpt_parse_file_name(const char *name, uint64_t *step, uint64_t *job_id)
{
	size_t pre = strlen(PREFIX), suf = strlen(SUFFIX), len = strlen(name);
	if (strncmp(name, PREFIX, pre) != 0 || !parse_digits(name + pre, STEP_DIGITS, 10, step))
		return false;
	const char *rest = name + pre + STEP_DIGITS;
	*job_id = 0;
	if (len == pre + STEP_DIGITS + suf)
		return strcmp(rest, SUFFIX) == 0;
	return len == pre + STEP_DIGITS + 1 + JOB_DIGITS + suf && rest[0] == '-' &&
	       parse_digits(rest + 1, JOB_DIGITS, 16, job_id) && *job_id != 0 &&
	       strcmp(rest + 1 + JOB_DIGITS, SUFFIX) == 0;
}

static int newest_first(const void *x, const void *y) { return -strcmp((const char *)x, (const char *)y); }

ftl_err ftl_ckpt_list(const char *dir, char (**names)[FTL_CKPT_NAME_MAX], size_t *n)
{
	*names = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot read the checkpoint directory %s: %s", dir, strerror(errno));
	size_t cap = 0;
	struct dirent *e;
	uint64_t step, job_id;
	while ((e = readdir(d))) {
		if (!ftl_ckpt_parse_file_name(e->d_name, &step, &job_id))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			char(*grown)[FTL_CKPT_NAME_MAX] = realloc(*names, cap * sizeof(**names));
			if (!grown) {
				closedir(d);
				free(*names);
				*names = NULL;
				return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory listing the checkpoint directory %s", dir);
			}
			*names = grown;
		}
		ftl_ckpt_file_name(step, job_id, (*names)[(*n)++], FTL_CKPT_NAME_MAX); /* the same name, rebuilt */
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(**names), newest_first);
	return FTL_OK;
}

int ftl_ckpt_retain(const char *dir, uint64_t job_id, int keep)
{
	char(*names)[FTL_CKPT_NAME_MAX];
	size_t n;
	int deleted = 0, mine = 0;
	if (job_id == 0 || ftl_ckpt_list(dir, &names, &n) != FTL_OK)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t step, file_job;
		if (!ftl_ckpt_parse_file_name(names[i], &step, &file_job) || file_job != job_id || ++mine <= keep)
			continue;
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

ftl_err ftl_ckpt_make_dir(const char *dir)
{
	char path[FTL_CKPT_DIR_MAX];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return ftl_diag_set(FTL_ERR_INVALID, "the path is longer than %d bytes", FTL_CKPT_DIR_MAX - 1);
	for (char *p = path + 1;; p++) {
		bool is_end = *p == '\0';
		if (*p != '/' && !is_end)
			continue;
		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return ftl_diag_set(FTL_ERR_SYSTEM, "cannot create the directory %s: %s", path, strerror(errno));
		if (is_end)
			break;
		*p = '/';
	}
	struct stat st;
	if (stat(path, &st) != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot create the directory: %s", strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot create the directory: it exists and is not a directory");
	return FTL_OK;
}
