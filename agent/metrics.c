/* The /metrics text from a snapshot (the format and why a snapshot: metrics.h). Every family is written
 * by one of four helpers (a single value, a value per label, a histogram, the info line), so HELP and
 * TYPE lines and label escaping exist once. */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"

/* ---- the snapshot (loop thread) ---- */

void ftl_metrics_snapshot_take(ftl_agent *a, ftl_metrics_snapshot *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", a->cfg.name);
	snprintf(out->cluster, sizeof(out->cluster), "%s", a->cfg.cluster);
	for (int s = 0; s < FTL_MEMBER_STATE_MAX; s++)
		out->members[s] = ftl_swim_count(a->swim, (ftl_member_state)s);
	out->swim = *ftl_swim_get_stats(a->swim);
	out->keyring = *ftl_keyring_get_stats(a->keyring);
	memcpy(out->events, a->events_seen, sizeof(out->events));
	out->health = ftl_swim_health_score(a->swim);
	out->tcp_timeouts = a->tcp_timeouts;
	ftl_training *t = &a->train;
	out->is_training = t->is_enabled;
	if (!t->is_enabled)
		return;
	pthread_mutex_lock(&a->lock);
	out->view_epoch = t->view.epoch;
	out->rank = t->view.seq ? t->view.self_rank : -1;
	out->world_size = t->view.n;
	out->phase = t->phase;
	out->retries = t->status.retries;
	out->train = t->metrics;
	pthread_mutex_unlock(&a->lock);
	out->has_checkpoints = t->ckpt.writer != NULL;
	if (t->ckpt.writer)
		ftl_ckpt_writer_get_stats(t->ckpt.writer, &out->ckpt);
}

/* ---- the text ---- */

typedef struct text {
	char *buf;
	size_t len, cap;
	bool is_oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
	for (int tries = 0; tries < 2 && !t->is_oom; tries++) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->is_oom = true;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap * 2 > t->len + (size_t)n + 1 ? t->cap * 2 : t->len + (size_t)n + 1;
		char *bigger = realloc(t->buf, cap);
		if (!bigger)
			t->is_oom = true;
		else
			t->buf = bigger, t->cap = cap;
	}
}

/* A label value with \, " and newline escaped, as the format requires. */
static void put_label_value(text *t, const char *v)
{
	put(t, "\"");
	for (; *v; v++)
		put(t, "%s", *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : (char[]){*v, 0});
	put(t, "\"");
}

static void family(text *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void single(text *t, const char *name, const char *type, const char *help, double value)
{
	family(t, name, type, help);
	put(t, "%s %.17g\n", name, value);
}

/* One series per label value: names[i] -> values[i], skipping names that are NULL or empty. */
static void per_label(text *t, const char *name, const char *type, const char *help, const char *label,
		      const char *const *names, const uint64_t *values, int n)
{
	family(t, name, type, help);
	for (int i = 0; i < n; i++) {
		if (!names[i] || !names[i][0])
			continue;
		put(t, "%s{%s=", name, label);
		put_label_value(t, names[i]);
		put(t, "} %llu\n", (unsigned long long)values[i]);
	}
}

static void histogram(text *t, const char *name, const char *help, const ftl_histogram *h)
{
	family(t, name, "histogram", help);
	for (int i = 0; i < h->n_bounds; i++)
		put(t, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], (unsigned long long)ftl_histogram_cumulative(h, i));
	put(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
	put(t, "%s_sum %.17g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
}

static void membership(text *t, const ftl_metrics_snapshot *s)
{
	family(t, "ftl_agent_info", "gauge", "This agent's name and cluster (always 1).");
	put(t, "ftl_agent_info{cluster=");
	put_label_value(t, s->cluster);
	put(t, ",name=");
	put_label_value(t, s->name);
	put(t, "} 1\n");
	per_label(t, "ftl_members", "gauge", "Members by state, as this agent sees them (itself included).", "state",
		  ftl_member_state_strs, s->members, FTL_MEMBER_STATE_MAX);
	static const char *const directions[] = {"sent", "received"};
	per_label(t, "ftl_gossip_packets_total", "counter", "Gossip UDP packets by direction.", "direction", directions,
		  (uint64_t[]){s->swim.packets_sent, s->swim.packets_received}, 2);
	per_label(t, "ftl_gossip_bytes_total", "counter", "Gossip UDP bytes by direction.", "direction", directions,
		  (uint64_t[]){s->swim.bytes_sent, s->swim.bytes_received}, 2);
	per_label(t, "ftl_gossip_messages_sent_total", "counter", "Primary gossip messages sent, by type.", "type",
		  ftl_msg_type_strs, s->swim.sent, FTL_MSG_TYPE_MAX);
	per_label(t, "ftl_gossip_messages_received_total", "counter",
		  "Gossip messages received (piggybacked included), by type.", "type", ftl_msg_type_strs,
		  s->swim.received, FTL_MSG_TYPE_MAX);
	per_label(t, "ftl_gossip_dropped_total", "counter", "Gossip messages dropped, by reason.", "reason",
		  ftl_swim_drop_strs, s->swim.dropped, FTL_DROP_MAX);
	per_label(t, "ftl_gossip_undecryptable_total", "counter",
		  "Packets the keyring could not open, by reason (wrong key, tampered, plaintext).", "reason",
		  ftl_keyring_drop_strs, s->keyring.dropped, FTL_KEYRING_DROP_MAX);
	single(t, "ftl_gossip_probes_total", "counter", "Probes (pings) this agent sent.", (double)s->swim.probes);
	single(t, "ftl_gossip_probes_failed_total", "counter", "Probes that got no ack in time.",
	       (double)s->swim.probes_failed);
	/* Two counters rather than a summary: rate(rtt) / rate(acks) is the mean round trip over any window. */
	single(t, "ftl_gossip_probe_rtt_seconds_total", "counter",
	       "Round trips of this agent's direct probes (ping to ack), summed.", (double)s->swim.probe_rtt_sum_us / 1e6);
	single(t, "ftl_gossip_probe_acks_total", "counter", "Direct acks of this agent's probes.",
	       (double)s->swim.probe_acks);
	single(t, "ftl_membership_suspicions_total", "counter",
	       "Members that became suspect here (this agent's probes or others' rumors).", (double)s->swim.suspicions);
	single(t, "ftl_membership_suspicions_refuted_total", "counter",
	       "Suspected members that came back alive instead of dying.", (double)s->swim.suspicions_refuted);
	single(t, "ftl_gossip_refutations_total", "counter",
	       "Suspicions of this agent it refuted (its incarnation raised).", (double)s->swim.refutations);
	single(t, "ftl_gossip_push_pulls_total", "counter", "Full-state push-pull merges.", (double)s->swim.push_pulls);
	single(t, "ftl_gossip_tcp_timeouts_total", "counter", "Push-pull TCP exchanges that timed out.",
	       (double)s->tcp_timeouts);
	single(t, "ftl_gossip_health_score", "gauge", "Lifeguard local health: 0 is healthy, higher stretches probes.",
	       (double)s->health);
	per_label(t, "ftl_membership_events_total", "counter",
		  "Membership changes seen here, by type (suspect: suspicions raised; alive: refuted).", "type",
		  ftl_swim_event_type_strs, s->events, FTL_EVENT_TYPE_MAX);
	per_label(t, "ftl_membership_deaths_total", "counter", "Deaths declared or accepted here, by path.", "reason",
		  ftl_death_reason_strs, s->swim.deaths_declared, FTL_DEATH_REASON_MAX);
	single(t, "ftl_membership_checks_total", "counter", "Proof-of-death connects tried.", (double)s->swim.checks);
	single(t, "ftl_membership_checks_refused_total", "counter", "Proof-of-death connects refused (dead at once).",
	       (double)s->swim.checks_refused);
}

static void training(text *t, const ftl_metrics_snapshot *s)
{
	const ftl_train_metrics *m = &s->train;
	single(t, "ftl_view_epoch", "gauge", "Epoch of the newest view this worker knows of (0: none).",
	       (double)s->view_epoch);
	single(t, "ftl_view_world_size", "gauge", "Members of the newest view.", (double)s->world_size);
	single(t, "ftl_view_rank", "gauge", "This worker's rank in the newest view (-1: not a member).", (double)s->rank);
	uint64_t is_phase[FTL_RDV_PHASE_MAX] = {0};
	is_phase[s->phase] = 1;
	per_label(t, "ftl_view_phase", "gauge", "The rendezvous phase: 1 for the current one, 0 for the others.",
		  "phase", ftl_rdv_phase_strs, is_phase, FTL_RDV_PHASE_MAX);
	per_label(t, "ftl_view_changes_total", "counter", "Views this worker adopted, by cause.", "cause",
		  ftl_view_cause_strs, m->views, FTL_VIEW_CAUSE_MAX);
	single(t, "ftl_training_steps_total", "counter", "Steps this worker completed.", (double)m->steps);
	single(t, "ftl_training_retries_total", "counter", "Steps run again after a failure.", (double)s->retries);
	single(t, "ftl_training_step_failures_total", "counter", "Runs of the step that failed.",
	       (double)m->step_failures);
	histogram(t, "ftl_training_step_duration_seconds", "Time in the step function, for completed steps.",
		  &m->step_seconds);
	histogram(t, "ftl_training_recovery_duration_seconds",
		  "From the first sign of a failure (failed collective or step, member of the view dead or gone) "
		  "to the next completed step.",
		  &m->recovery_seconds);
	histogram(t, "ftl_allreduce_duration_seconds", "Completed ftl_allreduce calls.", &m->allreduce_seconds);
	single(t, "ftl_allreduce_bytes_total", "counter", "Bytes this rank contributed to completed allreduces.",
	       (double)m->allreduce_bytes);
	histogram(t, "ftl_state_sync_duration_seconds", "Completed state syncs from rank 0.", &m->sync_seconds);
	single(t, "ftl_state_sync_bytes_total", "counter", "Bytes moved by completed state syncs.", (double)m->sync_bytes);
}

static void checkpoints(text *t, const ftl_metrics_snapshot *s)
{
	const ftl_ckpt_writer_stats *c = &s->ckpt;
	single(t, "ftl_checkpoints_written_total", "counter", "Checkpoints made durable by this process.",
	       (double)c->written);
	single(t, "ftl_checkpoints_skipped_total", "counter", "Checkpoints skipped (the previous write still running).",
	       (double)c->skipped);
	single(t, "ftl_checkpoint_failures_total", "counter", "Checkpoint writes that failed.", (double)c->failed);
	single(t, "ftl_checkpoint_last_write_duration_seconds", "gauge",
	       "The last write: seal, write, fsync, rename, fsync of the directory.", (double)c->last_write_us / 1e6);
	single(t, "ftl_checkpoint_last_size_bytes", "gauge", "Size of the last checkpoint written.",
	       (double)c->last_bytes);
	single(t, "ftl_checkpoint_last_step", "gauge", "Step of the last durable checkpoint.", (double)c->last_step);
}

char *ftl_metrics_render(const ftl_metrics_snapshot *s, size_t *len)
{
	text t = {.cap = 16384};
	t.buf = malloc(t.cap);
	if (!t.buf)
		return NULL;
	membership(&t, s);
	if (s->is_training)
		training(&t, s);
	if (s->has_checkpoints)
		checkpoints(&t, s);
	if (t.is_oom) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf;
}
