/* A stand-in for libFuzzer's main in ordinary builds (gcc, the normal ctest run), so that every fuzz
 * target also runs as a quick deterministic test: each seed in a corpus directory, then a fixed number of
 * pseudo-random mutations of the seeds (bit flips, byte sets, "interesting" MessagePack header bytes,
 * inserts, deletes, truncations, duplicated chunks). Same seed, same inputs, every run, so a failure
 * found here is reproduced by running it again; when a property check aborts, the input is also written
 * to replay-crash-<target> in the current directory, ready for the libFuzzer build.
 *
 *   usage: fuzz_<target> CORPUS_DIR [MUTATIONS]   (default 4000) */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_checks.h"

#define REPLAY_MAX_LEN 4096 /* as scripts/fuzz.sh's -max_len */
#define REPLAY_RANDOM_SEED UINT64_C(0xf71c0de5)

typedef struct input {
	uint8_t bytes[REPLAY_MAX_LEN];
	size_t len;
} input;

static uint64_t rng_state = REPLAY_RANDOM_SEED;

/* xorshift64*: small and deterministic. */
static uint64_t next_random(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static size_t random_below(size_t n)
{
	return n == 0 ? 0 : (size_t)(next_random() % n);
}

static int load_file(const char *path, input *in)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return -1;
	in->len = fread(in->bytes, 1, sizeof in->bytes, f);
	fclose(f);
	return 0;
}

static int only_files(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Loads every file of dir, in name order (so that runs are reproducible), into a malloc'd array. */
static input *load_corpus(const char *dir, size_t *count)
{
	struct dirent **names;
	input *corpus;
	int n = scandir(dir, &names, only_files, alphasort);
	if (n < 0) {
		perror(dir);
		return NULL;
	}
	corpus = calloc((size_t)n + 1, sizeof *corpus);
	*count = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
		if (corpus != NULL && load_file(path, &corpus[*count]) == 0)
			(*count)++;
		free(names[i]);
	}
	free(names);
	return corpus;
}

static void insert_bytes(input *in, size_t at, const uint8_t *bytes, size_t n)
{
	if (n > REPLAY_MAX_LEN - in->len)
		n = REPLAY_MAX_LEN - in->len;
	memmove(in->bytes + at + n, in->bytes + at, in->len - at);
	memcpy(in->bytes + at, bytes, n);
	in->len += n;
}

/* Applies one random mutation. */
static void mutate_once(input *in)
{
	/* Headers that make a decoder count, nest or size: fixmap/fixarray, nil, reserved, bin/str8,
	 * array/map16/32, and integer edges. */
	static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xc0, 0xc1, 0xc4,
					      0xd9, 0xdc, 0xdd, 0xde, 0xdf, 0xcf, 0xd3, 0xff};
	size_t at = random_below(in->len + 1);
	uint8_t byte = (uint8_t)next_random();

	switch (next_random() % 8) {
	case 0:
		if (at < in->len)
			in->bytes[at] ^= (uint8_t)(1u << (byte % 8));
		break;
	case 1:
		if (at < in->len)
			in->bytes[at] = byte;
		break;
	case 2:
		if (at < in->len)
			in->bytes[at] = interesting[byte % sizeof interesting];
		break;
	case 3:
		insert_bytes(in, at, &byte, 1);
		break;
	case 4: { /* delete a short range */
		size_t n = random_below(in->len - at + 1) % 16;
		memmove(in->bytes + at, in->bytes + at + n, in->len - at - n);
		in->len -= n;
		break;
	}
	case 5:
		in->len = at;
		break;
	case 6: { /* copy a chunk of the input somewhere else in it */
		uint8_t chunk[64];
		size_t from = random_below(in->len), n = random_below(sizeof chunk);
		if (n > in->len - from)
			n = in->len - from;
		memcpy(chunk, in->bytes + from, n);
		insert_bytes(in, at, chunk, n);
		break;
	}
	default: /* a big count or length */
		for (size_t i = at; i < in->len && i < at + 4; i++)
			in->bytes[i] = 0xff;
		break;
	}
}

static char crash_path[256];
static const input *current;

/* SIGABRT: the property checks' way out. Saves the input with async-signal-safe calls, then dies. */
static void save_current_cb(int sig)
{
	if (current != NULL) {
		int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			ssize_t ignored = write(fd, current->bytes, current->len);
			(void)ignored;
			close(fd);
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void run_one(const input *in)
{
	current = in;
	LLVMFuzzerTestOneInput(in->bytes, in->len);
	current = NULL;
}

int main(int argc, char **argv)
{
	static input mutant;
	long mutations = argc > 2 ? strtol(argv[2], NULL, 10) : 4000;
	size_t count;
	input *corpus;
	const char *slash = strrchr(argv[0], '/');
	const char *target_name = slash != NULL ? slash + 1 : argv[0];

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS]\n", argv[0]);
		return 2;
	}
	corpus = load_corpus(argv[1], &count);
	if (corpus == NULL || count == 0) {
		fprintf(stderr, "%s: no seeds in %s (build the fuzz_corpus target)\n", target_name, argv[1]);
		return 1;
	}
	snprintf(crash_path, sizeof crash_path, "replay-crash-%s", target_name);
	signal(SIGABRT, save_current_cb);
	for (size_t i = 0; i < count; i++)
		run_one(&corpus[i]);
	for (long i = 0; i < mutations; i++) {
		mutant = corpus[(size_t)i % count];
		for (int k = 1 + (int)random_below(4); k > 0; k--)
			mutate_once(&mutant);
		run_one(&mutant);
	}
	printf("%s: %zu seeds and %ld mutations (random seed 0x%llx) ran clean\n", target_name, count, mutations,
	       (unsigned long long)REPLAY_RANDOM_SEED);
	free(corpus);
	return 0;
}
