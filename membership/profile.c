/* Profile values and the formulas of profile.h. */
#include "profile.h"

#include <math.h>
#include <string.h>

#define MS 1000LL
#define SEC 1000000LL

const char *const ftl_swim_profile_strs[FTL_PROFILE_MAX] = {"lan", "local", "train"};

void ftl_swim_config_profile(ftl_swim_config *cfg, ftl_swim_profile profile)
{
	/* memberlist DefaultLANConfig */
	*cfg = (ftl_swim_config){
		.probe_interval_us = 1 * SEC,
		.probe_timeout_us = 500 * MS,
		.gossip_interval_us = 200 * MS,
		.gossip_nodes = 3,
		.indirect_checks = 3,
		.retransmit_mult = 4,
		.suspicion_mult = 4,
		.suspicion_max_mult = 6,
		.suspicion_confirmations = -1,
		.awareness_max = 8,
		.push_pull_interval_us = 30 * SEC,
		.gossip_to_dead_us = 30 * SEC,
		.reap_after_us = 30 * SEC,
		.ready_interval_us = 500 * MS,
		.max_members = FTL_SWIM_MAX_MEMBERS_DEFAULT,
	};
	switch (profile) {
	case FTL_PROFILE_LOCAL: /* memberlist DefaultLocalConfig */
		cfg->indirect_checks = 1;
		cfg->retransmit_mult = 2;
		cfg->suspicion_mult = 3;
		cfg->push_pull_interval_us = 15 * SEC;
		cfg->probe_timeout_us = 200 * MS;
		cfg->gossip_interval_us = 100 * MS;
		cfg->gossip_to_dead_us = 15 * SEC;
		cfg->reap_after_us = 15 * SEC;
		cfg->ready_interval_us = 200 * MS;
		break;
	case FTL_PROFILE_TRAIN:
		cfg->probe_interval_us = 100 * MS;
		cfg->probe_timeout_us = 40 * MS;
		cfg->gossip_interval_us = 30 * MS;
		cfg->gossip_nodes = 4;
		cfg->indirect_checks = 3;
		cfg->retransmit_mult = 8;
		cfg->suspicion_mult = 1;          /* min: one probe period (profile.h: why) */
		cfg->suspicion_max_mult = 9;      /* max: nine, as 3 x 3 was before confirmations were decoupled */
		cfg->suspicion_confirmations = 2;
		cfg->push_pull_interval_us = 10 * SEC;
		cfg->gossip_to_dead_us = 10 * SEC;
		cfg->reap_after_us = 30 * SEC;
		cfg->ready_interval_us = 200 * MS;
		break;
	default:
		break;
	}
}

ftl_err ftl_swim_profile_from_name(const char *name, ftl_swim_profile *profile)
{
	for (int i = 0; i < FTL_PROFILE_MAX; i++) {
		if (strcmp(name, ftl_swim_profile_strs[i]) == 0) {
			*profile = (ftl_swim_profile)i;
			return FTL_OK;
		}
	}
	return ftl_diag_set(FTL_ERR_INVALID, "%s: expected train, lan or local", name);
}

/* Sets *why and returns field: one refusal of ftl_swim_config_check. */
static ftl_swim_field refuse(const char **why, ftl_swim_field field, const char *text)
{
	*why = text;
	return field;
}

ftl_swim_field ftl_swim_config_check(const ftl_swim_config *c, const char **why)
{
	*why = NULL;
	if (c->probe_interval_us <= 0)
		return refuse(why, FTL_SWIM_FIELD_PROBE_INTERVAL, "probe_interval must be positive (for example 1s)");
	if (c->probe_timeout_us <= 0 || c->probe_timeout_us >= c->probe_interval_us)
		return refuse(why, FTL_SWIM_FIELD_PROBE_TIMEOUT,
			      "probe_timeout must be positive and shorter than probe_interval");
	if (c->gossip_interval_us <= 0)
		return refuse(why, FTL_SWIM_FIELD_GOSSIP_INTERVAL, "gossip_interval must be positive (for example 200ms)");
	if (c->gossip_nodes < 1 || c->gossip_nodes > 16)
		return refuse(why, FTL_SWIM_FIELD_GOSSIP_NODES, "gossip_nodes must be between 1 and 16");
	if (c->indirect_checks < 0 || c->indirect_checks > 16)
		return refuse(why, FTL_SWIM_FIELD_INDIRECT_CHECKS, "indirect_checks must be between 0 and 16");
	if (c->retransmit_mult < 1 || c->retransmit_mult > 64)
		return refuse(why, FTL_SWIM_FIELD_RETRANSMIT_MULT, "retransmit_mult must be between 1 and 64");
	if (c->suspicion_mult < 1 || c->suspicion_mult > 64)
		return refuse(why, FTL_SWIM_FIELD_SUSPICION_MULT, "suspicion_mult must be between 1 and 64");
	if (c->suspicion_max_mult < 1 || c->suspicion_max_mult > 64)
		return refuse(why, FTL_SWIM_FIELD_SUSPICION_MAX_MULT, "suspicion_max_mult must be between 1 and 64");
	if (c->suspicion_confirmations < -1 || c->suspicion_confirmations > 16)
		return refuse(why, FTL_SWIM_FIELD_SUSPICION_CONFIRMATIONS,
			      "suspicion_confirmations must be -1 (memberlist's suspicion_mult - 2) or between 0 and 16");
	if (c->awareness_max < 1 || c->awareness_max > 64)
		return refuse(why, FTL_SWIM_FIELD_AWARENESS_MAX, "awareness_max must be between 1 and 64");
	if (c->push_pull_interval_us < 0)
		return refuse(why, FTL_SWIM_FIELD_PUSH_PULL_INTERVAL, "push_pull_interval must be zero (off) or positive");
	if (c->gossip_to_dead_us < 0)
		return refuse(why, FTL_SWIM_FIELD_GOSSIP_TO_DEAD, "gossip_to_dead must not be negative");
	if (c->reap_after_us < 0)
		return refuse(why, FTL_SWIM_FIELD_REAP_AFTER, "reap_after must not be negative");
	if (c->max_members < 2)
		return refuse(why, FTL_SWIM_FIELD_MAX_MEMBERS, "max_members must be at least 2 (this node and one other)");
	return FTL_SWIM_FIELD_NONE;
}

static int ceil_log10(int n) { return (int)ceil(log10((double)n)); }

int ftl_swim_retransmit_limit(const ftl_swim_config *cfg, int n)
{
	int scale = ceil_log10(n + 1);
	return cfg->retransmit_mult * (scale < 1 ? 1 : scale);
}

int64_t ftl_swim_suspicion_min_us(const ftl_swim_config *cfg, int n)
{
	double node_scale = n > 1 ? log10((double)n) : 0.0;
	if (node_scale < 1.0)
		node_scale = 1.0;
	return (int64_t)((double)cfg->suspicion_mult * node_scale * (double)cfg->probe_interval_us);
}

int64_t ftl_swim_suspicion_max_us(const ftl_swim_config *cfg, int n)
{
	return cfg->suspicion_max_mult * ftl_swim_suspicion_min_us(cfg, n);
}

int ftl_swim_suspicion_confirmations(const ftl_swim_config *cfg, int n)
{
	if (cfg->suspicion_confirmations >= 0)
		return cfg->suspicion_confirmations;
	int k = cfg->suspicion_mult - 2;
	if (n - 2 < k || k < 0)
		k = 0;
	return k;
}

int64_t ftl_swim_push_pull_interval_us(const ftl_swim_config *cfg, int n)
{
	if (n <= 32)
		return cfg->push_pull_interval_us;
	int doublings = (int)ceil(log2((double)n) - log2(32.0));
	return cfg->push_pull_interval_us * (1 + doublings);
}

/* The dead rumor reaching everyone: one gossip interval per transmission of the retransmit limit. */
static int64_t spread_us(const ftl_swim_config *cfg, int n)
{
	return (int64_t)ftl_swim_retransmit_limit(cfg, n) * cfg->gossip_interval_us;
}

int64_t ftl_swim_detection_bound_us(const ftl_swim_config *cfg, int n)
{
	return (FTL_FIRST_PROBE_PERIODS + 1) * cfg->probe_interval_us + ftl_swim_suspicion_max_us(cfg, n) +
	       spread_us(cfg, n);
}

int64_t ftl_swim_refusal_bound_us(const ftl_swim_config *cfg, int n)
{
	return FTL_FIRST_PROBE_PERIODS * cfg->probe_interval_us + cfg->probe_timeout_us +
	       ftl_swim_hinted_refusal_bound_us(cfg, n);
}

int64_t ftl_swim_hinted_refusal_bound_us(const ftl_swim_config *cfg, int n)
{
	return cfg->probe_timeout_us + spread_us(cfg, n);
}
