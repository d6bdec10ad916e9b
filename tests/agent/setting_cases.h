/* Every FTL_* setting of libftl and its bad values: the table that test_config.c runs through the
 * environment and test_settings.c through ftl_settings_set, so both readers are held to one list; and
 * the helpers both start from. */
#ifndef FTL_TESTS_SETTING_CASES_H
#define FTL_TESTS_SETTING_CASES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A gossip key that decodes (32 zero bytes): the valid settings both tests start from hold it. */
static const char valid_key[] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

extern char **environ;

/* Unsets every FTL_* variable, so a test starts from what it sets. */
static void clear_ftl_environment(void)
{
	for (char **e = environ; *e;) {
		if (strncmp(*e, "FTL_", 4) == 0) {
			char name[128];
			snprintf(name, sizeof(name), "%.*s", (int)(strcspn(*e, "=")), *e);
			unsetenv(name);
		} else {
			e++;
		}
	}
}

enum { MAX_BAD = 14 };
typedef struct setting_case {
	const char *var;
	bool is_number;                /* also refuses "", "garbage", "-1" and an overflowing number */
	const char *bad[MAX_BAD];      /* this setting's own bad values (out of range, malformed) */
	const char *also_unset;        /* a variable that must be unset for this one to be read */
} setting_case;

#define CHARS_50 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwx"
#define LONG_300 CHARS_50 CHARS_50 CHARS_50 CHARS_50 CHARS_50 CHARS_50 /* over every string setting's bound */
#define NAME_64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static const setting_case setting_cases[] = {
	{"FTL_NAME", false, {"", "../../escape", "a/b", "a\"b", "a b", "a\tb", "a\nb", ".hidden", "..", NAME_64}, NULL},
	{"FTL_BIND", false, {"", "garbage", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:-1", "127.0.0.1:99999",
			     "localhost:7946", "::::", "127.0.0.1:99999999999999999999"}, NULL},
	{"FTL_ADVERTISE", false, {"", "garbage", "0.0.0.0:7946", "10.0.0.1:99999", "10.0.0.1"}, NULL},
	{"FTL_SEEDS", false, {"", "127.0.0.1", "::::", "garbage", "1.2.3.4:99999", "1.2.3.4:0", "a:-1",
			      "h:7946,garbage", "fd00::7:7946", "[fd00::7]", "h:12x", ",,,", " , "}, NULL},
	{"FTL_CLUSTER", false, {"", NAME_64}, NULL},
	{"FTL_GOSSIP_KEY", false, {"", "garbage", "-1", "AAAA"}, NULL},
	{"FTL_GOSSIP_KEY_FILE", false, {"", "/nonexistent/key", LONG_300}, "FTL_GOSSIP_KEY"},
	{"FTL_INSECURE", false, {"", "yes", "2", "-1", "1"}, NULL}, /* 1 with a key set: choose one */
	{"FTL_PROFILE", false, {"", "fast", "-1"}, NULL},
	{"FTL_PROBE_INTERVAL_MS", true, {"0", "600001"}, NULL},
	{"FTL_PROBE_TIMEOUT_MS", true, {"0", "600001"}, NULL},
	{"FTL_GOSSIP_INTERVAL_MS", true, {"0", "600001"}, NULL},
	{"FTL_PUSH_PULL_INTERVAL_MS", true, {"0", "86400001"}, NULL},
	{"FTL_REAP_AFTER_MS", true, {"0", "86400001"}, NULL},
	{"FTL_READY_INTERVAL_MS", true, {"0", "600001"}, NULL},
	{"FTL_RESEED_INTERVAL_MS", true, {"0", "99", "3600001"}, NULL},
	{"FTL_SUSPICION_MULT", true, {"0", "65"}, NULL},
	{"FTL_RETRANSMIT_MULT", true, {"0", "65"}, NULL},
	{"FTL_MAX_MEMBERS", true, {"0", "1", "16777217"}, NULL},
	{"FTL_WITNESS", false, {"", "yes", "2", "off"}, NULL},
	{"FTL_RUN_DIR", false, {"", LONG_300}, NULL},
	{"FTL_LOG_LEVEL", false, {"", "loud", "-1"}, NULL},
	{"FTL_META", false, {"", LONG_300}, NULL},
	{"FTL_METRICS_ADDR", false, {"garbage", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", "localhost:9464", LONG_300}, NULL},
	{"FTL_MIN_WORKERS", true, {"0", "4097"}, NULL},
	{"FTL_MAX_WORKERS", true, {"0", "4097"}, NULL},
	{"FTL_SETTLE_MS", true, {"600001"}, NULL},
	{"FTL_MAX_RETRIES", true, {"1001"}, NULL},
	{"FTL_BELOW_MIN_TIMEOUT_MS", true, {"86400001"}, NULL},
	{"FTL_COLLECTIVE_TIMEOUT_MS", true, {"0", "3600001"}, NULL},
	{"FTL_CUDA_DEVICE", true, {"1025"}, NULL},
	{"FTL_COMM", false, {"", "mpi", "-1", "TCP"}, NULL},
	{"FTL_COMM_SHM", false, {"", "on", "AUTO", "1"}, NULL},
	{"FTL_COMM_SHM_SLOT_KB", true, {"3", "262145"}, NULL},
	{"FTL_CHECKPOINT_DIR", false, {"", LONG_300}, NULL},
	{"FTL_CHECKPOINT_EVERY", true, {"0", "1000000001"}, NULL},
	{"FTL_CHECKPOINT_KEEP", true, {"0", "1001"}, NULL},
	{"FTL_CHECKPOINT_BUSY", false, {"", "later", "-1"}, NULL},
	{"FTL_CHECKPOINT_FRESH", false, {"", "yes", "-1", "2"}, NULL},
	{"FTL_CHECKPOINT_CHECKSUM", false, {"", "crc32", "XXH3"}, NULL},
	{"FTL_EXPECTED_WORKERS", true, {"5000"}, NULL},
	{"FTL_EXPECTED_WAIT_MS", true, {"86400001"}, NULL},
	{"FTL_GLOBAL_BATCH", true, {"4294967296"}, NULL},
	{"FTL_MAX_BATCH_PER_RANK", true, {"4294967296"}, NULL},
	{"FTL_REPRODUCIBLE", true, {"2", "yes"}, NULL},
	{"FTL_COMM_COMPRESS", false, {"", "on", "1", "BF16", "fp16", "bf16ef", "bf16-EF"}, NULL},
	{"FTL_SLOW_POLICY", false, {"", "Rebalance", "Replace", "1"}, NULL},
};

/* What every number setting refuses besides its own bad values. */
static const char *const bad_numbers[] = {"", "garbage", "-1", "12x", "99999999999999999999", " 5"};
#define N_BAD_NUMBERS (sizeof(bad_numbers) / sizeof(bad_numbers[0]))
#define N_SETTING_CASES (sizeof(setting_cases) / sizeof(setting_cases[0]))

#endif
