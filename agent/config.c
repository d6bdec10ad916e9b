/* Agent settings: defaults, the FTL_* environment, and the checks that turn a bad setting into a
 * message naming it and saying what is expected. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "errfmt.h"
#include "keyring.h"

void ftl_agent_config_default(ftl_agent_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	if (gethostname(cfg->name, sizeof(cfg->name) - 1) != 0 || !cfg->name[0])
		snprintf(cfg->name, sizeof(cfg->name), "ftl-node");
	snprintf(cfg->bind, sizeof(cfg->bind), "0.0.0.0:7946");
	snprintf(cfg->cluster, sizeof(cfg->cluster), "ftl");
	snprintf(cfg->profile, sizeof(cfg->profile), "train");
	snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
	cfg->reseed_interval_ms = 5000;
}

static int env_str(const char *var, char *dst, size_t cap, char *err, size_t len)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	if (strlen(v) >= cap)
		return ftl_errf(err, len, "%s is too long (at most %zu bytes)", var, cap - 1);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}


int ftl_agent_config_from_env(ftl_agent_config *c, char *err, size_t len)
{
	int64_t suspicion = c->suspicion_mult, retransmit = c->retransmit_mult;
	const char *insecure = getenv("FTL_INSECURE");
	if (insecure && strcmp(insecure, "1") != 0 && strcmp(insecure, "0") != 0)
		return ftl_errf(err, len, "FTL_INSECURE=%s: expected 1 (plaintext gossip) or 0", insecure);
	if (insecure)
		c->is_insecure = strcmp(insecure, "1") == 0;
	if (env_str("FTL_NAME", c->name, sizeof(c->name), err, len) || env_str("FTL_BIND", c->bind, sizeof(c->bind), err, len) ||
	    env_str("FTL_ADVERTISE", c->advertise, sizeof(c->advertise), err, len) ||
	    env_str("FTL_SEEDS", c->seeds, sizeof(c->seeds), err, len) ||
	    env_str("FTL_CLUSTER", c->cluster, sizeof(c->cluster), err, len) ||
	    env_str("FTL_GOSSIP_KEY", c->gossip_key, sizeof(c->gossip_key), err, len) ||
	    env_str("FTL_GOSSIP_KEY_FILE", c->gossip_key_file, sizeof(c->gossip_key_file), err, len) ||
	    env_str("FTL_PROFILE", c->profile, sizeof(c->profile), err, len) ||
	    env_str("FTL_RUN_DIR", c->run_dir, sizeof(c->run_dir), err, len) ||
	    env_str("FTL_LOG_LEVEL", c->log_level, sizeof(c->log_level), err, len) ||
	    env_str("FTL_META", c->meta, sizeof(c->meta), err, len) ||
	    ftl_env_int("FTL_PROBE_INTERVAL_MS", &c->probe_interval_ms, 1, 600000, err, len) ||
	    ftl_env_int("FTL_PROBE_TIMEOUT_MS", &c->probe_timeout_ms, 1, 600000, err, len) ||
	    ftl_env_int("FTL_GOSSIP_INTERVAL_MS", &c->gossip_interval_ms, 1, 600000, err, len) ||
	    ftl_env_int("FTL_PUSH_PULL_INTERVAL_MS", &c->push_pull_interval_ms, 0, 86400000, err, len) ||
	    ftl_env_int("FTL_REAP_AFTER_MS", &c->reap_after_ms, 1, 86400000, err, len) ||
	    ftl_env_int("FTL_RESEED_INTERVAL_MS", &c->reseed_interval_ms, 100, 3600000, err, len) ||
	    ftl_env_int("FTL_SUSPICION_MULT", &suspicion, 1, 64, err, len) ||
	    ftl_env_int("FTL_RETRANSMIT_MULT", &retransmit, 1, 64, err, len))
		return -1;
	c->suspicion_mult = (int)suspicion;
	c->retransmit_mult = (int)retransmit;
	return 0;
}

/* Reads the key from FTL_GOSSIP_KEY or FTL_GOSSIP_KEY_FILE into key. */
static int load_key(const ftl_agent_config *c, uint8_t key[FTL_KEY_SIZE], char *err, size_t len)
{
	char text[128] = "";
	const char *what = "FTL_GOSSIP_KEY";
	if (c->gossip_key[0]) {
		snprintf(text, sizeof(text), "%s", c->gossip_key);
	} else {
		what = "FTL_GOSSIP_KEY_FILE";
		FILE *f = fopen(c->gossip_key_file, "r");
		if (!f)
			return ftl_errf(err, len, "FTL_GOSSIP_KEY_FILE=%s: cannot read it (%s)", c->gossip_key_file,
				    strerror(errno));
		if (!fgets(text, sizeof(text), f))
			text[0] = '\0';
		fclose(f);
		text[strcspn(text, " \r\n")] = '\0';
	}
	if (ftl_key_from_base64(text, key) != 0)
		return ftl_errf(err, len, "%s: expected the base64 of 32 bytes (make one with `ftlctl keygen`)", what);
	return 0;
}

int ftl_agent_config_resolve(const ftl_agent_config *c, ftl_agent_settings *out, char *err, size_t len)
{
	memset(out, 0, sizeof(*out));
	if (!c->name[0] || strlen(c->name) >= FTL_NAME_MAX)
		return ftl_errf(err, len, "FTL_NAME: expected 1 to %d bytes", FTL_NAME_MAX - 1);
	if (!c->cluster[0])
		return ftl_errf(err, len, "FTL_CLUSTER: must not be empty");
	if (ftl_addr_parse_numeric(c->bind, &out->bind) != 0)
		return ftl_errf(err, len, "FTL_BIND=%s: expected a numeric ip:port such as 0.0.0.0:7946 or [::]:7946", c->bind);
	const char *adv = c->advertise[0] ? c->advertise : c->bind;
	struct sockaddr_storage a;
	if (ftl_addr_parse_numeric(adv, &a) != 0)
		return ftl_errf(err, len, "FTL_ADVERTISE=%s: expected a numeric ip:port that other nodes can reach", adv);
	if (ftl_addr_is_wildcard(&a))
		return ftl_errf(err, len,
			    "FTL_ADVERTISE: %s is a wildcard address; set FTL_ADVERTISE to this node's reachable "
			    "ip:port (on Kubernetes, the pod IP from the downward API)",
			    adv);
	ftl_addr_format((struct sockaddr *)&a, out->advertise, sizeof(out->advertise));
	ftl_swim_profile profile;
	if (ftl_swim_profile_from_name(c->profile, &profile) != 0)
		return ftl_errf(err, len, "FTL_PROFILE=%s: expected train, lan or local", c->profile);
	ftl_swim_config_profile(&out->swim, profile);
	if (c->probe_interval_ms)
		out->swim.probe_interval_us = c->probe_interval_ms * 1000;
	if (c->probe_timeout_ms)
		out->swim.probe_timeout_us = c->probe_timeout_ms * 1000;
	if (c->gossip_interval_ms)
		out->swim.gossip_interval_us = c->gossip_interval_ms * 1000;
	if (c->push_pull_interval_ms)
		out->swim.push_pull_interval_us = c->push_pull_interval_ms * 1000;
	if (c->reap_after_ms)
		out->swim.reap_after_us = c->reap_after_ms * 1000;
	if (c->suspicion_mult)
		out->swim.suspicion_mult = c->suspicion_mult;
	if (c->retransmit_mult)
		out->swim.retransmit_mult = c->retransmit_mult;
	const char *bad = ftl_swim_config_check(&out->swim);
	if (bad)
		return ftl_errf(err, len, "timing settings (FTL_PROFILE and FTL_*_MS overrides): %s", bad);
	if (c->is_insecure) {
		if (c->gossip_key[0] || c->gossip_key_file[0])
			return ftl_errf(err, len, "FTL_INSECURE=1 and a gossip key are both set: choose one");
		out->is_insecure = true;
	} else {
		if (!c->gossip_key[0] && !c->gossip_key_file[0])
			return ftl_errf(err, len,
				    "no gossip key: set FTL_GOSSIP_KEY (or FTL_GOSSIP_KEY_FILE) to the output of "
				    "`ftlctl keygen`, or FTL_INSECURE=1 for plaintext gossip");
		if (load_key(c, out->key, err, len) != 0)
			return -1;
	}
	if (ftl_log_setup(c->log_level, c->name) != 0)
		return ftl_errf(err, len, "FTL_LOG_LEVEL=%s: expected debug, info, warn or error", c->log_level);
	if (c->reseed_interval_ms < 100)
		return ftl_errf(err, len, "FTL_RESEED_INTERVAL_MS: expected at least 100");
	return 0;
}
