/* The table of gossip counters and its two renderings (gossip_counters.h). */
#include "gossip_counters.h"

#include <stddef.h>
#include <string.h>

typedef struct counter {
	const char *key;       /* in the status JSON's counters */
	const char *metric;    /* the Prometheus family */
	const char *help;
	const char *direction; /* NULL, or this row's value of the family's direction label */
	size_t offset;         /* of its uint64_t in ftl_swim_stats */
	double scale;          /* the family's unit per count (0: 1) */
} counter;

#define AT(field) offsetof(ftl_swim_stats, field)

static const counter counters[] = {
	{"packets_sent", "ftl_gossip_packets_total", "Gossip UDP packets by direction.", "sent", AT(packets_sent), 0},
	{"packets_received", "ftl_gossip_packets_total", NULL, "received", AT(packets_received), 0},
	{"bytes_sent", "ftl_gossip_bytes_total", "Gossip UDP bytes by direction.", "sent", AT(bytes_sent), 0},
	{"bytes_received", "ftl_gossip_bytes_total", NULL, "received", AT(bytes_received), 0},
	{"probes", "ftl_gossip_probes_total", "Probes (pings) this agent sent.", NULL, AT(probes), 0},
	{"probes_failed", "ftl_gossip_probes_failed_total", "Probes that got no ack in time.", NULL, AT(probes_failed), 0},
	/* Two counters rather than a summary: rate(rtt) / rate(acks) is the mean round trip over any window. */
	{"probe_rtt_sum_us", "ftl_gossip_probe_rtt_seconds_total",
	 "Round trips of this agent's direct probes (ping to ack), summed.", NULL, AT(probe_rtt_sum_us), 1e-6},
	{"probe_acks", "ftl_gossip_probe_acks_total", "Direct acks of this agent's probes.", NULL, AT(probe_acks), 0},
	{"suspicions", "ftl_membership_suspicions_total",
	 "Members that became suspect here (this agent's probes or others' rumors).", NULL, AT(suspicions), 0},
	{"suspicions_refuted", "ftl_membership_suspicions_refuted_total",
	 "Suspected members that came back alive instead of dying.", NULL, AT(suspicions_refuted), 0},
	{"refutations", "ftl_gossip_refutations_total", "Suspicions of this agent it refuted (its incarnation raised).",
	 NULL, AT(refutations), 0},
	{"push_pulls", "ftl_gossip_push_pulls_total", "Full-state push-pull merges.", NULL, AT(push_pulls), 0},
	{"key_ops_applied", "ftl_gossip_key_ops_applied_total",
	 "Keyring changes applied here (this agent's and the cluster's).", NULL, AT(key_ops_applied), 0},
	{"key_ops_failed", "ftl_gossip_key_ops_failed_total", "Keyring changes that could not apply here.", NULL,
	 AT(key_ops_failed), 0},
	{"key_ops_stale", "ftl_gossip_key_ops_stale_total",
	 "Keyring changes older than the cluster's key version (replays), never applied.", NULL, AT(key_ops_stale), 0},
	{"alive_of_reaped", "ftl_membership_alive_of_reaped_total",
	 "Alive news of a life already reaped here, believed only once that life answers a ping.", NULL,
	 AT(alive_of_reaped), 0},
	{"revivals", "ftl_membership_revivals_total", "Reaped lives that answered and came back (a long partition).",
	 NULL, AT(revivals), 0},
	{"names_refused", "ftl_membership_names_refused_total",
	 "Claims of a live member's name by a second process at another address, refused.", NULL, AT(names_refused), 0},
	{"checks", "ftl_membership_checks_total", "Proof-of-death connects tried.", NULL, AT(checks), 0},
	{"checks_refused", "ftl_membership_checks_refused_total", "Proof-of-death connects refused (dead at once).", NULL,
	 AT(checks_refused), 0},
	{"witnessed", "ftl_membership_deaths_witnessed_total",
	 "Deaths a witness on the member's host reported (agent/witness.h).", NULL, AT(witnessed), 0},
};

static uint64_t value_of(const ftl_swim_stats *st, const counter *c)
{
	uint64_t v;
	memcpy(&v, (const char *)st + c->offset, sizeof(v));
	return v;
}

void ftl_gossip_counters_json(json_t *into, const ftl_swim_stats *st)
{
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		json_object_set_new(into, counters[i].key, json_integer((json_int_t)value_of(st, &counters[i])));
}

void ftl_gossip_counters_metrics(ftl_metrics_text *t, const ftl_swim_stats *st)
{
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		const counter *c = &counters[i];
		uint64_t v = value_of(st, c);
		if (!c->direction) {
			ftl_metrics_single(t, c->metric, "counter", c->help, c->scale ? (double)v * c->scale : (double)v);
			continue;
		}
		if (i == 0 || strcmp(counters[i - 1].metric, c->metric) != 0)
			ftl_metrics_family(t, c->metric, "counter", c->help);
		ftl_metrics_put(t, "%s{direction=\"%s\"} %llu\n", c->metric, c->direction, (unsigned long long)v);
	}
}
