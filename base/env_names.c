/* The one table of FTL_* variable names, and the refusal of a name it does not hold.
 *
 * Why: a misspelled setting (FTL_MAX_WORKER for FTL_MAX_WORKERS, FTL_SEED for FTL_SEEDS) used to be
 * warned about and ignored, and the worker ran with the default: with no seeds, a job of one that trained
 * alone and exited 0. Every variable that anything in this repository reads is listed below, grouped by
 * its reader; a program adds its own with ftl_env_add_known_name (ftl.add_known_setting in Python) before
 * ftl_agent_config_from_env, which refuses any other FTL_* name, naming the closest known one (edit
 * distance). ftl_env_warn_unknown, for a program that only wants to be told, warns and goes on. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "env_names.h"
#include "ftl/settings.h"
#include "log.h"

static const char *const known_names[] = {
	/* the agent (ftl_agent_config_from_env, include/ftl/agent.h) */
	"FTL_NAME", "FTL_BIND", "FTL_ADVERTISE", "FTL_SEEDS", "FTL_CLUSTER", "FTL_GOSSIP_KEY",
	"FTL_GOSSIP_KEY_FILE", "FTL_INSECURE", "FTL_PROFILE", "FTL_PROBE_INTERVAL_MS", "FTL_PROBE_TIMEOUT_MS",
	"FTL_GOSSIP_INTERVAL_MS", "FTL_PUSH_PULL_INTERVAL_MS", "FTL_REAP_AFTER_MS", "FTL_SUSPICION_MULT",
	"FTL_RETRANSMIT_MULT", "FTL_READY_INTERVAL_MS", "FTL_RESEED_INTERVAL_MS", "FTL_RUN_DIR", "FTL_LOG_LEVEL", "FTL_META",
	"FTL_METRICS_ADDR", "FTL_MAX_MEMBERS", "FTL_WITNESS",
	/* training (ftl_training_config_from_env, include/ftl/execute.h) */
	"FTL_MIN_WORKERS", "FTL_MAX_WORKERS", "FTL_SETTLE_MS", "FTL_MAX_RETRIES", "FTL_BELOW_MIN_TIMEOUT_MS",
	"FTL_COLLECTIVE_TIMEOUT_MS", "FTL_COMM", "FTL_CUDA_DEVICE", "FTL_CHECKPOINT_DIR", "FTL_CHECKPOINT_EVERY",
	"FTL_COMM_SHM", "FTL_COMM_SHM_SLOT_KB", "FTL_COMM_COMPRESS", "FTL_SLOW_POLICY",
	"FTL_CHECKPOINT_KEEP", "FTL_CHECKPOINT_BUSY", "FTL_CHECKPOINT_FRESH", "FTL_CHECKPOINT_CHECKSUM", "FTL_EXPECTED_WORKERS",
	"FTL_EXPECTED_WAIT_MS", "FTL_SPARES", "FTL_GLOBAL_BATCH", "FTL_MAX_BATCH_PER_RANK", "FTL_REPRODUCIBLE",
	"FTL_REPLICA", "FTL_REPLICA_INDEX", "FTL_REPLICA_SIZE",
	/* ftlctl */
	"FTL_CONTROL_SOCKET",
	/* examples/train_softmax.c and train_cuda.c (the examples and the demo set these on every worker) */
	"FTL_STEPS", "FTL_BATCH", "FTL_DATA_SIZE", "FTL_STEP_SLEEP_MS", "FTL_SAMPLE_SLEEP_US", "FTL_LOG_INDICES",
	"FTL_EXTRA_STATE_MB",
	"FTL_LR_SCALING", "FTL_LR_WARMUP_STEPS",
	/* examples/torch_digits.py */
	"FTL_OPTIMIZER", "FTL_LR", "FTL_DDP",
	/* examples/torch_char_gpt.py and torch_resnet_digits.py (examples/models/) */
	"FTL_WIDTH", "FTL_DEPTH", "FTL_CONTEXT", "FTL_TRAIN_SEED",
	/* the Python package (python/src/ftl/_lib.py) */
	"FTL_LIBRARY",
	/* the simulator and the scripts (scripts/, tests/sim): may be exported in a developer's shell */
	"FTL_SIM_SEED", "FTL_SIM_TRACE", "FTL_SIM_NODES", "FTL_SIM_TRIAL_SEED", "FTL_BUILD_DIR",
	"FTL_FUZZ_BUILD_DIR", "FTL_FUZZ_SECONDS", "FTL_VENV", "FTL_WERROR", "FTL_SANITIZE", "FTL_PYTHON",
	"FTL_BENCH_RANKS",
	/* the tests' own (tests/agent/test_training.py, tests/python/test_run.py): their workers inherit them */
	"FTL_TEST_SEED", "FTL_TRAIN_EXAMPLE",
	/* scripts/test-gpu.sh and scripts/fetch-gpu-debs.sh */
	"FTL_GPU_DEBS", "FTL_GPU_PREFIX", "FTL_GPU_FORCE_DEBS", "FTL_GPU_OUT", "FTL_GPU_BENCH", "FTL_GPU_PART_TIMEOUT",
	"FTL_GPU_ONLY",
};
#define N_KNOWN (sizeof(known_names) / sizeof(known_names[0]))

enum { ADDED_MAX = 64, CLOSEST_MAX_EDITS = 3, NAME_MAX_LEN = 64 };
static char added_names[ADDED_MAX][NAME_MAX_LEN + 1]; /* copies: a caller's string may not live on */
static int n_added;

/* Every known name, built-in then added, one per call: i from 0 until NULL. */
static const char *known_name_at(size_t i)
{
	if (i < N_KNOWN)
		return known_names[i];
	return i - N_KNOWN < (size_t)n_added ? added_names[i - N_KNOWN] : NULL;
}

static bool is_known(const char *name, size_t len)
{
	for (size_t i = 0; known_name_at(i); i++)
		if (strlen(known_name_at(i)) == len && strncmp(known_name_at(i), name, len) == 0)
			return true;
	return false;
}

/* Levenshtein distance of a[0..la) and b[0..lb), both at most NAME_MAX_LEN; O(la*lb) with one row. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t row[NAME_MAX_LEN + 1];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diagonal = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t above = row[j];
			size_t best = diagonal + (a[i - 1] != b[j - 1]);
			if (above + 1 < best)
				best = above + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diagonal = above;
		}
	}
	return row[lb];
}

static const char *closest(const char *name, size_t len)
{
	const char *best = NULL;
	size_t best_edits = CLOSEST_MAX_EDITS + 1;
	if (len > NAME_MAX_LEN)
		return NULL;
	for (size_t i = 0; known_name_at(i); i++) {
		const char *k = known_name_at(i);
		size_t edits = strlen(k) <= NAME_MAX_LEN ? edit_distance(name, len, k, strlen(k)) : best_edits;
		if (edits < best_edits) {
			best = k;
			best_edits = edits;
		}
	}
	return best;
}

ftl_err ftl_env_add_known_name(const char *name)
{
	if (!name || strncmp(name, "FTL_", 4) != 0 || strlen(name) > NAME_MAX_LEN || strchr(name, '='))
		return ftl_diag_set(FTL_ERR_INVALID,
				    "ftl_env_add_known_name: %s is not a variable name that starts with FTL_ (at most "
				    "%d bytes, no '=')",
				    name ? name : "(null)", NAME_MAX_LEN);
	if (is_known(name, strlen(name)))
		return FTL_OK;
	if (n_added == ADDED_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "ftl_env_add_known_name: already %d names added, the most there "
				    "can be", ADDED_MAX);
	memcpy(added_names[n_added++], name, strlen(name) + 1);
	return FTL_OK;
}

const char *ftl_env_closest_known_name(const char *name) { return closest(name, strlen(name)); }

extern char **environ;

/* The next FTL_* variable in the environment, from *e on, that no table knows (its length in *len), or
 * NULL; *e is left past it. */
static const char *next_unknown(char ***e, size_t *len)
{
	for (; *e && **e; (*e)++) {
		const char *var = **e;
		*len = strcspn(var, "=");
		if (strncmp(var, "FTL_", 4) == 0 && !is_known(var, *len)) {
			(*e)++;
			return var;
		}
	}
	return NULL;
}

int ftl_env_warn_unknown(void)
{
	const ftl_logger *log = ftl_logger_stderr();
	int unknown = 0;
	char **e = environ;
	size_t len;
	for (const char *var; (var = next_unknown(&e, &len)) != NULL; unknown++) {
		const char *near = closest(var, len);
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)len, var);
		if (near)
			ftl_log(log, FTL_LOG_WARN, "config",
				FTL_MSG("%s is not an ftl setting and is ignored; did you mean %s?", name, near),
				FTL_F_STR("variable", name), FTL_F_STR("closest", near));
		else
			ftl_log(log, FTL_LOG_WARN, "config",
				FTL_MSG("%s is not an ftl setting and is ignored (docs/reference/settings.md lists them)", name),
				FTL_F_STR("variable", name));
	}
	return unknown;
}

/* The refusal of the unknown name[0..len), with what else was unknown (more, may be ""). */
static ftl_err refuse_name(const char *name, size_t len, const char *more)
{
	const char *near = closest(name, len);
	char hint[96] = "";
	if (near)
		snprintf(hint, sizeof(hint), " (did you mean %s?)", near);
	char setting[64];
	snprintf(setting, sizeof setting, "%.*s", (int)len, name);
	return ftl_diag_set_setting(setting, FTL_ERR_INVALID,
			    "%.*s is not an ftl setting%s: correct or unset it (a program with FTL_* settings of "
			    "its own declares them with ftl_env_add_known_name, or ftl.add_known_setting in Python)%s",
			    (int)len, name, hint, more);
}

ftl_err ftl_env_refuse_if_unknown(const char *var)
{
	return is_known(var, strlen(var)) ? FTL_OK : refuse_name(var, strlen(var), "");
}

ftl_err ftl_env_refuse_unknown(void)
{
	char **e = environ;
	size_t len, others_len;
	const char *first = next_unknown(&e, &len);
	if (!first)
		return FTL_OK;
	int others = 0;
	char others_text[256] = "";
	for (const char *var; (var = next_unknown(&e, &others_len)) != NULL; others++) {
		size_t used = strlen(others_text);
		if (used + others_len + 3 < sizeof(others_text))
			snprintf(others_text + used, sizeof(others_text) - used, "%s%.*s", used ? ", " : "",
				 (int)others_len, var);
	}
	char more[320] = "";
	if (others)
		snprintf(more, sizeof(more), "; %d more unknown: %s", others, others_text);
	return refuse_name(first, len, more);
}
