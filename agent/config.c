/* Agent settings: defaults, the FTL_* environment, and the checks that turn a bad setting into a
 * message naming it and saying what is expected. A setting that cannot work is refused at start (a seed
 * that is not host:port, or a seed list with no seed in it, would otherwise split the job into jobs of
 * one); so is an FTL_* variable that neither ftl nor the program knows (env_names.c). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/diag.h"
#include "base/sized.h"
#include "base/env_read.h"
#include "base/settings_store.h"

/* profile.h says why the member limit is four full views; membership cannot see the rendezvous' bound. */
_Static_assert(FTL_SWIM_MAX_MEMBERS_DEFAULT == 4 * FTL_RDV_MAX_MEMBERS, "the member limit is four full views");

/* The first size-stamped layout's size: when a field is added at the end, this stays the size before it. */
#define AGENT_CONFIG_OLDEST sizeof(ftl_agent_config)

static void defaults(ftl_agent_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	if (gethostname(cfg->name, sizeof(cfg->name) - 1) != 0 || !cfg->name[0])
		snprintf(cfg->name, sizeof(cfg->name), "ftl-node");
	snprintf(cfg->bind, sizeof(cfg->bind), "0.0.0.0:7946");
	snprintf(cfg->cluster, sizeof(cfg->cluster), "ftl");
	snprintf(cfg->profile, sizeof(cfg->profile), "train");
	snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
	cfg->reseed_interval_ms = 5000;
}

void ftl_agent_config_default_sized(ftl_agent_config *cfg, size_t size)
{
	ftl_agent_config full;
	defaults(&full);
	ftl_sized_fill(cfg, size, &full, sizeof(full));
}

ftl_err ftl_agent_config_widen(const ftl_agent_config *in, ftl_agent_config *full)
{
	defaults(full);
	return ftl_sized_widen(in, full, sizeof(*full), AGENT_CONFIG_OLDEST, "ftl_agent_config", "ftl_agent_config_default");
}

static ftl_err read_settings(ftl_agent_config *c, const ftl_settings *s)
{
	int64_t suspicion = c->suspicion_mult, retransmit = c->retransmit_mult;
	bool is_witness_on = !c->is_witness_off;
	if (ftl_setting_choice(s, "FTL_INSECURE", "0", "1", "1 (plaintext gossip) or 0", &c->is_insecure) ||
	    ftl_setting_choice(s, "FTL_WITNESS", "0", "1", "1 (watch this host's members, the default) or 0",
			       &is_witness_on))
		return FTL_ERR_INVALID;
	c->is_witness_off = !is_witness_on;
	if (ftl_setting_str(s, "FTL_NAME", c->name, sizeof(c->name)) ||
	    ftl_setting_str(s, "FTL_BIND", c->bind, sizeof(c->bind)) ||
	    ftl_setting_str(s, "FTL_ADVERTISE", c->advertise, sizeof(c->advertise)) ||
	    ftl_setting_str(s, "FTL_SEEDS", c->seeds, sizeof(c->seeds)) ||
	    ftl_setting_str(s, "FTL_CLUSTER", c->cluster, sizeof(c->cluster)) ||
	    ftl_setting_str(s, "FTL_GOSSIP_KEY", c->gossip_key, sizeof(c->gossip_key)) ||
	    ftl_setting_str(s, "FTL_GOSSIP_KEY_FILE", c->gossip_key_file, sizeof(c->gossip_key_file)) ||
	    ftl_setting_str(s, "FTL_PROFILE", c->profile, sizeof(c->profile)) ||
	    ftl_setting_str(s, "FTL_RUN_DIR", c->run_dir, sizeof(c->run_dir)) ||
	    ftl_setting_str(s, "FTL_LOG_LEVEL", c->log_level, sizeof(c->log_level)) ||
	    ftl_setting_str(s, "FTL_META", c->meta, sizeof(c->meta)) ||
	    ftl_setting_str(s, "FTL_METRICS_ADDR", c->metrics_addr, sizeof(c->metrics_addr)) ||
	    ftl_setting_int(s, "FTL_PROBE_INTERVAL_MS", &c->probe_interval_ms, 1, 600000) ||
	    ftl_setting_int(s, "FTL_PROBE_TIMEOUT_MS", &c->probe_timeout_ms, 1, 600000) ||
	    ftl_setting_int(s, "FTL_GOSSIP_INTERVAL_MS", &c->gossip_interval_ms, 1, 600000) ||
	    ftl_setting_int(s, "FTL_PUSH_PULL_INTERVAL_MS", &c->push_pull_interval_ms, 1, 86400000) ||
	    ftl_setting_int(s, "FTL_REAP_AFTER_MS", &c->reap_after_ms, 1, 86400000) ||
	    ftl_setting_int(s, "FTL_READY_INTERVAL_MS", &c->ready_interval_ms, 1, 600000) ||
	    ftl_setting_int(s, "FTL_RESEED_INTERVAL_MS", &c->reseed_interval_ms, 100, 3600000) ||
	    ftl_setting_int(s, "FTL_MAX_MEMBERS", &c->max_members, 2, 1 << 24) ||
	    ftl_setting_int(s, "FTL_SUSPICION_MULT", &suspicion, 1, 64) ||
	    ftl_setting_int(s, "FTL_RETRANSMIT_MULT", &retransmit, 1, 64))
		return FTL_ERR_INVALID;
	c->suspicion_mult = (int)suspicion;
	c->retransmit_mult = (int)retransmit;
	return FTL_OK;
}

ftl_err ftl_agent_config_from_settings(ftl_agent_config *c, const ftl_settings *s)
{
	ftl_agent_config full;
	ftl_err err = ftl_agent_config_widen(c, &full);
	if (!err)
		err = read_settings(&full, s);
	if (!err)
		ftl_sized_narrow(&full, c);
	return err;
}

ftl_err ftl_agent_config_from_env(ftl_agent_config *c)
{
	ftl_settings *s = ftl_settings_new_from_environment();
	ftl_err err = s ? ftl_agent_config_from_settings(c, s) : ftl_error_code();
	ftl_settings_delete(s);
	return err;
}

/* The cluster key lets its holder join, read and forge gossip: a key file others can read is a leak. */
static void warn_if_key_file_is_shared(const ftl_logger *log, FILE *f, const char *path)
{
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
		ftl_log(log, FTL_LOG_WARN, "config",
			FTL_MSG("FTL_GOSSIP_KEY_FILE=%s has mode %04o: group or others can read or change the cluster "
				"key; chmod 600 it",
				path, (unsigned)(st.st_mode & 07777)),
			FTL_F_STR("file", path), FTL_F_UINT("mode", st.st_mode & 07777));
}

/* Reads the key from FTL_GOSSIP_KEY or FTL_GOSSIP_KEY_FILE into key. */
static ftl_err load_key(const ftl_agent_config *c, const ftl_logger *log, uint8_t key[FTL_KEY_SIZE])
{
	char text[128] = "";
	const char *what = "FTL_GOSSIP_KEY";
	if (c->gossip_key[0]) {
		snprintf(text, sizeof(text), "%s", c->gossip_key);
	} else {
		what = "FTL_GOSSIP_KEY_FILE";
		FILE *f = fopen(c->gossip_key_file, "re");
		if (!f)
			return ftl_diag_set_setting("FTL_GOSSIP_KEY_FILE", FTL_ERR_SYSTEM, "FTL_GOSSIP_KEY_FILE=%s: cannot read it (%s)", c->gossip_key_file,
				    strerror(errno));
		warn_if_key_file_is_shared(log, f, c->gossip_key_file);
		if (!fgets(text, sizeof(text), f))
			text[0] = '\0';
		fclose(f);
		text[strcspn(text, " \r\n")] = '\0';
	}
	if (ftl_key_from_base64(text, key) != FTL_OK) {
		ftl_diag_prefix("%s: ", what);
		return ftl_diag_about(what);
	}
	return FTL_OK;
}

/* A name is part of the control socket's path, of log lines and of JSON: letters, digits, '.', '_' and
 * '-' only (a Kubernetes pod name fits), not starting with '.', so it can never climb out of the run
 * directory or break a line. */
static const char name_rule[] = "1 to 63 of A-Z a-z 0-9 . _ - (not starting with '.')";

static bool is_valid_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= FTL_NAME_MAX || name[0] == '.')
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
					      : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* Each seed must be host:port with a port from 1 to 65535; the host may be a name that does not resolve
 * yet (seeds are re-resolved), but a typo in the syntax would leave this node alone for good. */
static ftl_err check_seeds(const char *seeds)
{
	char list[sizeof(((ftl_agent_config *)0)->seeds)];
	snprintf(list, sizeof(list), "%s", seeds);
	char *save = NULL;
	size_t n_seeds = 0;
	for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save), n_seeds++) {
		char host[128];
		int port;
		bool is_bare_v6 = tok[0] != '[' && strchr(tok, ':') != strrchr(tok, ':');
		if (is_bare_v6 || ftl_addr_split(tok, host, sizeof(host), &port) != 0 || port < 1)
			return ftl_diag_set_setting("FTL_SEEDS", FTL_ERR_INVALID,
					"FTL_SEEDS: \"%s\" is not host:port with a port from 1 to 65535 (write IPv6 "
					"as [fd00::7]:7946; separate seeds with commas)",
					tok);
	}
	/* Seeds given but none in them (",,," or blanks, a template that expanded to nothing) would make this
	 * worker the first of a job of its own: a job of one that trains alone and exits 0. */
	if (seeds[0] && n_seeds == 0)
		return ftl_diag_set_setting("FTL_SEEDS", FTL_ERR_INVALID,
				"FTL_SEEDS=\"%s\" holds no seed: give host:port entries separated by commas, or unset "
				"FTL_SEEDS for the first worker of a job",
				seeds);
	return FTL_OK;
}

/* The FTL_* variable behind each field a timing check can refuse, and the one it is checked against; a field
 * without one (a profile's value, or one checked before) blames FTL_PROFILE and the overrides. */
static const struct {
	const char *setting;
	const char *and_also;
} timing_variables[FTL_SWIM_FIELD_MAX] = {
	[FTL_SWIM_FIELD_PROBE_INTERVAL] = {"FTL_PROBE_INTERVAL_MS", NULL},
	[FTL_SWIM_FIELD_PROBE_TIMEOUT] = {"FTL_PROBE_TIMEOUT_MS", "FTL_PROBE_INTERVAL_MS"},
	[FTL_SWIM_FIELD_GOSSIP_INTERVAL] = {"FTL_GOSSIP_INTERVAL_MS", NULL},
	[FTL_SWIM_FIELD_RETRANSMIT_MULT] = {"FTL_RETRANSMIT_MULT", NULL},
	[FTL_SWIM_FIELD_SUSPICION_MULT] = {"FTL_SUSPICION_MULT", NULL},
	[FTL_SWIM_FIELD_PUSH_PULL_INTERVAL] = {"FTL_PUSH_PULL_INTERVAL_MS", NULL},
	[FTL_SWIM_FIELD_REAP_AFTER] = {"FTL_REAP_AFTER_MS", NULL},
	[FTL_SWIM_FIELD_MAX_MEMBERS] = {"FTL_MAX_MEMBERS", NULL},
};

/* The timing check's refusal of field: its variables, the profile and the check's sentence. */
static ftl_err refuse_timing(ftl_swim_field field, const char *profile, const char *why)
{
	const char *setting = timing_variables[field].setting, *also = timing_variables[field].and_also;
	if (setting == NULL)
		setting = "FTL_PROFILE", also = "the FTL_*_MS overrides";
	return ftl_diag_set_setting(setting, FTL_ERR_INVALID, "%s%s%s (with FTL_PROFILE=%s): %s", setting,
				    also ? " and " : "", also ? also : "", profile, why);
}

ftl_err ftl_agent_config_resolve(const ftl_agent_config *c, ftl_agent_settings *out)
{
	memset(out, 0, sizeof(*out));
	if (!is_valid_name(c->name))
		return ftl_diag_set_setting("FTL_NAME", FTL_ERR_INVALID, "FTL_NAME=%.*s: expected %s", FTL_NAME_MAX, c->name, name_rule);
	if (ftl_logger_init(&out->log, c->log_level, c->name, c->log_cb, c->log_user) != 0)
		return ftl_diag_set_setting("FTL_LOG_LEVEL", FTL_ERR_INVALID, "FTL_LOG_LEVEL=%s: expected debug, info, warn or error", c->log_level);
	if (!c->cluster[0])
		return ftl_diag_set_setting("FTL_CLUSTER", FTL_ERR_INVALID, "FTL_CLUSTER: must not be empty");
	if (ftl_addr_parse_numeric(c->bind, &out->bind) != 0)
		return ftl_diag_set_setting("FTL_BIND", FTL_ERR_INVALID,
				    "FTL_BIND=%s: expected a numeric ip:port such as 0.0.0.0:7946 or [::]:7946", c->bind);
	if (port_of(&out->bind) == 0)
		return ftl_diag_set_setting("FTL_BIND", FTL_ERR_INVALID,
				"FTL_BIND=%s: port 0 is not allowed (others reach this node at the bound port, and it "
				"would be advertised as 0); choose a port such as 7946",
				c->bind);
	if (check_seeds(c->seeds) != FTL_OK)
		return FTL_ERR_INVALID;
	if (c->metrics_addr[0] && (ftl_addr_parse_numeric(c->metrics_addr, &out->metrics) != 0 || port_of(&out->metrics) == 0))
		return ftl_diag_set_setting("FTL_METRICS_ADDR", FTL_ERR_INVALID,
				"FTL_METRICS_ADDR=%s: expected a numeric ip:port with a port that is not 0, such as "
				"0.0.0.0:9464 (where Prometheus scrapes GET /metrics), or unset for no metrics",
				c->metrics_addr);
	const char *adv = c->advertise[0] ? c->advertise : c->bind;
	struct sockaddr_storage a;
	if (ftl_addr_parse_numeric(adv, &a) != 0)
		return ftl_diag_set_setting("FTL_ADVERTISE", FTL_ERR_INVALID, "FTL_ADVERTISE=%s: expected a numeric ip:port that other nodes can reach", adv);
	if (ftl_addr_is_wildcard(&a))
		return ftl_diag_set_setting("FTL_ADVERTISE", FTL_ERR_INVALID,
			    "FTL_ADVERTISE: %s is a wildcard address; set FTL_ADVERTISE to this node's reachable "
			    "ip:port (on Kubernetes, the pod IP from the downward API)",
			    adv);
	ftl_addr_format((struct sockaddr *)&a, out->advertise, sizeof(out->advertise));
	ftl_swim_profile profile;
	if (ftl_swim_profile_from_name(c->profile, &profile) != FTL_OK) {
		ftl_diag_prefix("FTL_PROFILE=");
		return ftl_diag_about("FTL_PROFILE");
	}
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
	if (c->ready_interval_ms)
		out->swim.ready_interval_us = c->ready_interval_ms * 1000;
	if (c->suspicion_mult)
		out->swim.suspicion_mult = c->suspicion_mult;
	if (c->retransmit_mult)
		out->swim.retransmit_mult = c->retransmit_mult;
	if (c->max_members < 0 || c->max_members == 1 || c->max_members > (1 << 24))
		return ftl_diag_set_setting("FTL_MAX_MEMBERS", FTL_ERR_INVALID, "FTL_MAX_MEMBERS=%lld: expected 2 to %d (0 for the default, %d)",
				    (long long)c->max_members, 1 << 24, FTL_SWIM_MAX_MEMBERS_DEFAULT);
	if (c->max_members)
		out->swim.max_members = (int)c->max_members;
	const char *why;
	ftl_swim_field bad = ftl_swim_config_check(&out->swim, &why);
	if (bad != FTL_SWIM_FIELD_NONE)
		return refuse_timing(bad, c->profile, why);
	if (c->is_insecure) {
		if (c->gossip_key[0] || c->gossip_key_file[0])
			return ftl_diag_set_setting("FTL_INSECURE", FTL_ERR_INVALID, "FTL_INSECURE=1 and a gossip key are both set: choose one");
		out->is_insecure = true;
	} else {
		if (c->gossip_key[0] && c->gossip_key_file[0])
			return ftl_diag_set_setting("FTL_GOSSIP_KEY", FTL_ERR_INVALID,
					"FTL_GOSSIP_KEY and FTL_GOSSIP_KEY_FILE are both set: choose one (the file keeps "
					"the key out of the process environment)");
		if (!c->gossip_key[0] && !c->gossip_key_file[0])
			return ftl_diag_set_setting("FTL_GOSSIP_KEY", FTL_ERR_INVALID,
				    "no gossip key: set FTL_GOSSIP_KEY (or FTL_GOSSIP_KEY_FILE) to the output of "
				    "`ftlctl keygen`, or FTL_INSECURE=1 for plaintext gossip");
		ftl_err err = load_key(c, &out->log, out->key);
		if (err)
			return err;
	}
	if (c->reseed_interval_ms < 100)
		return ftl_diag_set_setting("FTL_RESEED_INTERVAL_MS", FTL_ERR_INVALID, "FTL_RESEED_INTERVAL_MS: expected at least 100");
	return FTL_OK;
}
