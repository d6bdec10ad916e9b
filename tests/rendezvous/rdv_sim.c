/* The rendezvous simulator (see rdv_sim.h). */
#include "rdv_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdv_msg.h"
#include "rdv_view.h"
#include "rng.h"

typedef enum event_kind {
	EVENT_MESSAGE,   /* data to node `to` */
	EVENT_OBSERVE,   /* observer `to` looks at subject `from` again */
} event_kind;

typedef struct event {
	int64_t at_us;             /* when it happens */
	uint64_t seq;              /* ties broken by order of scheduling */
	event_kind kind;
	int to;                    /* the receiver, or the observer */
	int from;                  /* the sender, or the subject observed */
	uint8_t *data;             /* message bytes, owned */
	size_t len;
} event;

typedef struct sim_node {
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uint64_t generation;
	ftl_rdv *rdv;              /* NULL when down */
	bool has_left;             /* left gracefully (and is down) */
	int group;
	int crash_type;            /* rdv_msg_type to count for a crash mid-broadcast, -1 for none */
	int crash_after;           /* sends of that type left before the crash */
	int64_t membership_changed_us; /* last ftl_rdv_set_members that changed its snapshot */
} sim_node;

struct rdv_sim {
	rdv_sim_options o;
	ftl_rng rng;               /* loss, jitter and detection jitter, from the printed seed */
	int64_t now_us;            /* virtual time */
	uint64_t next_seq;         /* orders events scheduled for the same time */
	uint64_t next_generation;  /* each start or restart takes the next */
	sim_node nodes[RDV_SIM_MAX_NODES];
	int n;                     /* nodes[0..n) in use */
	bool seen[RDV_SIM_MAX_NODES][RDV_SIM_MAX_NODES];   /* observer sees subject alive */
	bool truth[RDV_SIM_MAX_NODES][RDV_SIM_MAX_NODES];  /* what it would see with no delay */
	bool blocked[RDV_SIM_MAX_GROUPS][RDV_SIM_MAX_GROUPS];
	event *heap;               /* pending messages and observations, a binary heap */
	size_t heap_len, heap_cap;
	rdv_sim_record *records;   /* every view taken, in order */
	int n_records, cap_records;
	uint64_t sent, lost;       /* messages, and those lost to loss, partitions or a dead receiver */
};

/* ---- the event heap, ordered by (at_us, seq) ---- */

static bool earlier(const event *a, const event *b)
{
	return a->at_us != b->at_us ? a->at_us < b->at_us : a->seq < b->seq;
}

static void heap_push(rdv_sim *sim, event ev)
{
	if (sim->heap_len == sim->heap_cap) {
		sim->heap_cap = sim->heap_cap ? 2 * sim->heap_cap : 256;
		sim->heap = realloc(sim->heap, sim->heap_cap * sizeof *sim->heap);
		if (sim->heap == NULL)
			abort();
	}
	ev.seq = sim->next_seq++;
	size_t i = sim->heap_len++;
	while (i > 0 && earlier(&ev, &sim->heap[(i - 1) / 2])) {
		sim->heap[i] = sim->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	sim->heap[i] = ev;
}

static event heap_pop(rdv_sim *sim)
{
	event top = sim->heap[0], last = sim->heap[--sim->heap_len];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= sim->heap_len)
			break;
		if (c + 1 < sim->heap_len && earlier(&sim->heap[c + 1], &sim->heap[c]))
			c++;
		if (!earlier(&sim->heap[c], &last))
			break;
		sim->heap[i] = sim->heap[c];
		i = c;
	}
	if (sim->heap_len > 0)
		sim->heap[i] = last;
	return top;
}

static int64_t random_below(rdv_sim *sim, int64_t n)
{
	return n <= 0 ? 0 : (int64_t)(ftl_rng_next(&sim->rng) % (uint64_t)n);
}

/* ---- membership oracle ---- */

static bool can_reach(const rdv_sim *sim, int a, int b)
{
	return !sim->blocked[sim->nodes[a].group][sim->nodes[b].group];
}

static bool truth_of(const rdv_sim *sim, int observer, int subject)
{
	const sim_node *s = &sim->nodes[subject];
	return s->rdv != NULL && can_reach(sim, observer, subject) && can_reach(sim, subject, observer);
}

static void give_members(rdv_sim *sim, int observer)
{
	ftl_rdv_member alive[RDV_SIM_MAX_NODES];
	const char *left[RDV_SIM_MAX_NODES];
	size_t n_alive = 0, n_left = 0;
	sim_node *o = &sim->nodes[observer];
	for (int j = 0; j < sim->n; j++) {
		sim_node *s = &sim->nodes[j];
		if (j == observer || sim->seen[observer][j]) {
			ftl_copy_str(alive[n_alive].name, s->name, FTL_NAME_MAX);
			ftl_copy_str(alive[n_alive].data_addr, s->addr, FTL_ADDR_MAX);
			alive[n_alive++].generation = s->generation;
		} else if (s->has_left) {
			left[n_left++] = s->name;
		}
	}
	o->membership_changed_us = sim->now_us;
	ftl_rdv_set_members(o->rdv, sim->now_us, alive, n_alive, left, n_left);
}

/* Schedules an observation wherever the truth changed; the observer sees the truth when it fires. */
static void truth_changed(rdv_sim *sim)
{
	for (int i = 0; i < sim->n; i++) {
		for (int j = 0; j < sim->n; j++) {
			bool t = i != j && sim->nodes[i].rdv != NULL && truth_of(sim, i, j);
			if (t == sim->truth[i][j])
				continue;
			sim->truth[i][j] = t;
			if (sim->nodes[i].rdv == NULL)
				continue;
			int64_t delay = t || sim->nodes[j].has_left
					? sim->o.join_us
					: sim->o.detect_us + random_below(sim, sim->o.detect_jitter_us);
			heap_push(sim, (event){.at_us = sim->now_us + delay, .kind = EVENT_OBSERVE, .to = i, .from = j});
		}
	}
}

/* ---- nodes and their outputs ---- */

static void record_views(rdv_sim *sim, int i)
{
	const ftl_rdv_view *v;
	sim_node *node = &sim->nodes[i];
	while (node->rdv != NULL && ftl_rdv_take_new_view(node->rdv, &v)) {
		if (sim->n_records == sim->cap_records) {
			sim->cap_records = sim->cap_records ? 2 * sim->cap_records : 256;
			sim->records = realloc(sim->records, (size_t)sim->cap_records * sizeof *sim->records);
			if (sim->records == NULL)
				abort();
		}
		rdv_sim_record *rec = &sim->records[sim->n_records++];
		*rec = (rdv_sim_record){.at_us = sim->now_us, .node = i, .epoch = v->epoch, .lineage = v->lineage,
					.digest = rdv_view_digest(v), .n = v->n,
					.rank = ftl_rdv_rank(node->rdv)};
		ftl_copy_str(rec->rank0, v->n > 0 ? v->members[0].name : "", FTL_NAME_MAX);
	}
}

static int node_by_name(const rdv_sim *sim, const char *name)
{
	for (int i = 0; i < sim->n; i++)
		if (strcmp(sim->nodes[i].name, name) == 0)
			return i;
	return -1;
}

static void crash(rdv_sim *sim, int i)
{
	ftl_rdv_delete(sim->nodes[i].rdv);
	sim->nodes[i].rdv = NULL;
	sim->nodes[i].crash_type = -1;
	truth_changed(sim);
}

/* True when this output is the one after which the node is to crash. */
static bool is_crash_point(sim_node *node, const ftl_rdv_output *out)
{
	rdv_msg m;
	const char *err;
	bool is_it = false;
	if (node->crash_type < 0 || rdv_decode(out->data, out->len, &m, &err) != 0)
		return false;
	if ((int)m.type == node->crash_type)
		is_it = --node->crash_after <= 0;
	rdv_msg_free(&m);
	return is_it;
}

static void send_one(rdv_sim *sim, int from, const ftl_rdv_output *out)
{
	int to = node_by_name(sim, out->to);
	sim->sent++;
	if (to < 0 || !can_reach(sim, from, to) ||
	    (sim->o.loss > 0 && ftl_rng_unit(&sim->rng) < sim->o.loss)) {
		sim->lost++;
		return;
	}
	event ev = {.at_us = sim->now_us + sim->o.delay_us + random_below(sim, sim->o.jitter_us),
		    .kind = EVENT_MESSAGE, .to = to, .from = from, .len = out->len};
	ev.data = malloc(out->len);
	memcpy(ev.data, out->data, out->len);
	heap_push(sim, ev);
}

/* Takes node i's outputs onto the network and its new views into the log. */
static void drain(rdv_sim *sim, int i)
{
	ftl_rdv_output out;
	sim_node *node = &sim->nodes[i];
	record_views(sim, i);
	while (node->rdv != NULL && ftl_rdv_next_output(node->rdv, &out)) {
		bool is_last = is_crash_point(node, &out);
		send_one(sim, i, &out);
		ftl_rdv_output_free(&out);
		if (is_last)
			crash(sim, i);
	}
}

void rdv_sim_drain(rdv_sim *sim, int i)
{
	drain(sim, i);
}

static int blob_cb(void *ctx, uint64_t epoch, uint8_t *blob, size_t cap)
{
	const sim_node *node = ctx;
	int len = snprintf((char *)blob, cap, "%s@%llu", node->name, (unsigned long long)epoch);
	return len < (int)cap ? len : (int)cap - 1;
}

static void start_node(rdv_sim *sim, int i)
{
	sim_node *node = &sim->nodes[i];
	const char *err;
	ftl_rdv_options ro = {.name = node->name, .generation = ++sim->next_generation, .data_addr = node->addr,
			      .config = sim->o.config, .blob_cb = sim->o.is_with_blob ? blob_cb : NULL, .blob_ctx = node};
	node->generation = ro.generation;
	node->has_left = false;
	node->crash_type = -1;
	node->rdv = ftl_rdv_new(&ro, &err);
	if (node->rdv == NULL) {
		fprintf(stderr, "rdv_sim: %s\n", err);
		abort();
	}
	for (int j = 0; j < sim->n; j++) /* a new generation is news to everyone, however it left */
		sim->seen[i][j] = sim->seen[j][i] = sim->truth[i][j] = sim->truth[j][i] = false;
	give_members(sim, i);
	drain(sim, i);
	truth_changed(sim);
}

/* ---- lifecycle and the clock ---- */

void rdv_sim_options_default(rdv_sim_options *o, int n)
{
	*o = (rdv_sim_options){
		.n = n,
		.config = {.min_workers = 1, .max_workers = (uint32_t)n + 16, .settle_us = 1000000,
			   .ready_interval_us = 100000},
		.delay_us = 1000,
		.jitter_us = 500,
		.join_us = 50000,
		.detect_us = 500000,
		.detect_jitter_us = 100000,
	};
}

rdv_sim *rdv_sim_new(const rdv_sim_options *o)
{
	rdv_sim *sim = calloc(1, sizeof *sim);
	const char *env = getenv("FTL_SIM_SEED");
	sim->o = *o;
	if (sim->o.seed == 0)
		sim->o.seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock();
	if (!sim->o.is_quiet)
		printf("rdv_sim: seed %llu (replay with FTL_SIM_SEED=%llu)\n", (unsigned long long)sim->o.seed,
		       (unsigned long long)sim->o.seed);
	ftl_rng_seed(&sim->rng, sim->o.seed);
	for (int i = 0; i < o->n; i++)
		rdv_sim_add_node(sim);
	return sim;
}

void rdv_sim_delete(rdv_sim *sim)
{
	for (int i = 0; i < sim->n; i++)
		ftl_rdv_delete(sim->nodes[i].rdv);
	while (sim->heap_len > 0)
		free(heap_pop(sim).data);
	free(sim->heap);
	free(sim->records);
	free(sim);
}

uint64_t rdv_sim_seed(const rdv_sim *sim) { return sim->o.seed; }
int64_t rdv_sim_now(const rdv_sim *sim) { return sim->now_us; }

static void handle(rdv_sim *sim, event *ev)
{
	sim_node *node = &sim->nodes[ev->to];
	if (node->rdv == NULL) {
		sim->lost += ev->kind == EVENT_MESSAGE;
	} else if (ev->kind == EVENT_MESSAGE) {
		ftl_rdv_receive(node->rdv, sim->now_us, ev->data, ev->len);
		drain(sim, ev->to);
	} else {
		bool t = truth_of(sim, ev->to, ev->from) && ev->to != ev->from;
		if (t != sim->seen[ev->to][ev->from]) {
			sim->seen[ev->to][ev->from] = t;
			give_members(sim, ev->to);
			drain(sim, ev->to);
		}
	}
	free(ev->data);
}

/* The node whose deadline comes first, at or before t, or -1. */
static int first_due(const rdv_sim *sim, int64_t t, int64_t *at)
{
	int best = -1;
	for (int i = 0; i < sim->n; i++) {
		if (sim->nodes[i].rdv == NULL)
			continue;
		int64_t d = ftl_rdv_next_deadline(sim->nodes[i].rdv);
		if (d <= t && (best < 0 || d < *at)) {
			best = i;
			*at = d;
		}
	}
	return best;
}

void rdv_sim_run_until(rdv_sim *sim, int64_t t_us)
{
	for (;;) {
		int64_t limit = sim->heap_len > 0 && sim->heap[0].at_us < t_us ? sim->heap[0].at_us : t_us;
		int64_t at = 0;
		int due = first_due(sim, limit, &at);
		if (due >= 0) {
			if (at > sim->now_us)
				sim->now_us = at;
			ftl_rdv_tick(sim->nodes[due].rdv, sim->now_us);
			if (ftl_rdv_next_deadline(sim->nodes[due].rdv) <= sim->now_us) {
				fprintf(stderr, "rdv_sim: %s asks to be ticked again at once: a busy loop\n",
					sim->nodes[due].name);
				abort();
			}
			drain(sim, due);
			continue;
		}
		if (sim->heap_len == 0 || sim->heap[0].at_us > t_us)
			break;
		event ev = heap_pop(sim);
		if (ev.at_us > sim->now_us)
			sim->now_us = ev.at_us;
		handle(sim, &ev);
	}
	if (t_us > sim->now_us)
		sim->now_us = t_us;
}

void rdv_sim_run_for(rdv_sim *sim, int64_t dt_us)
{
	rdv_sim_run_until(sim, sim->now_us + dt_us);
}

/* ---- nodes ---- */

int rdv_sim_size(const rdv_sim *sim) { return sim->n; }
ftl_rdv *rdv_sim_node(rdv_sim *sim, int i) { return sim->nodes[i].rdv; }
const char *rdv_sim_name(const rdv_sim *sim, int i) { return sim->nodes[i].name; }
bool rdv_sim_is_up(const rdv_sim *sim, int i) { return sim->nodes[i].rdv != NULL; }

int rdv_sim_add_node(rdv_sim *sim)
{
	if (sim->n == RDV_SIM_MAX_NODES)
		return -1;
	int i = sim->n++;
	sim_node *node = &sim->nodes[i];
	memset(node, 0, sizeof *node);
	snprintf(node->name, sizeof node->name, "w%02d", i);
	/* Addresses run against the names and generations, so an order derived from them would show. */
	snprintf(node->addr, sizeof node->addr, "10.0.%d.%d:29500", 200 - i, 250 - i);
	start_node(sim, i);
	return i;
}

void rdv_sim_crash(rdv_sim *sim, int i)
{
	if (sim->nodes[i].rdv != NULL)
		crash(sim, i);
}

void rdv_sim_crash_after_sends(rdv_sim *sim, int i, int msg_type, int k)
{
	sim->nodes[i].crash_type = msg_type;
	sim->nodes[i].crash_after = k;
}

void rdv_sim_restart(rdv_sim *sim, int i)
{
	rdv_sim_crash(sim, i);
	start_node(sim, i);
}

void rdv_sim_leave(rdv_sim *sim, int i)
{
	if (sim->nodes[i].rdv == NULL)
		return;
	sim->nodes[i].has_left = true;
	crash(sim, i);
}

/* ---- network ---- */

void rdv_sim_set_group(rdv_sim *sim, int i, int group)
{
	sim->nodes[i].group = group;
	truth_changed(sim);
}

void rdv_sim_block(rdv_sim *sim, int a, int b, bool is_blocked)
{
	sim->blocked[a][b] = is_blocked;
	truth_changed(sim);
}

void rdv_sim_heal(rdv_sim *sim)
{
	memset(sim->blocked, 0, sizeof sim->blocked);
	for (int i = 0; i < sim->n; i++)
		sim->nodes[i].group = 0;
	truth_changed(sim);
}

void rdv_sim_set_loss(rdv_sim *sim, double loss) { sim->o.loss = loss; }

/* ---- observing ---- */

const rdv_sim_record *rdv_sim_records(const rdv_sim *sim, int *n)
{
	*n = sim->n_records;
	return sim->records;
}

int rdv_sim_conflicts(const rdv_sim *sim)
{
	int conflicts = 0;
	for (int i = 0; i < sim->n_records; i++) {
		const rdv_sim_record *a = &sim->records[i];
		bool is_first = true;
		for (int j = 0; j < i && is_first; j++)
			is_first = sim->records[j].epoch != a->epoch || sim->records[j].digest != a->digest;
		for (int j = 0; j < i && is_first; j++) {
			const rdv_sim_record *b = &sim->records[j];
			if (b->epoch == a->epoch && b->lineage == a->lineage && b->digest != a->digest) {
				printf("rdv_sim: CONFLICT at epoch %llu: %s holds %u members led by %s, %s holds %u led by %s\n",
				       (unsigned long long)a->epoch, sim->nodes[a->node].name, a->n, a->rank0,
				       sim->nodes[b->node].name, b->n, b->rank0);
				conflicts++;
				break;
			}
		}
	}
	return conflicts;
}

int rdv_sim_lineages(const rdv_sim *sim)
{
	int n = 0;
	for (int i = 0; i < sim->n_records; i++) {
		bool is_new = true;
		for (int j = 0; j < i && is_new; j++)
			is_new = sim->records[j].lineage != sim->records[i].lineage;
		n += is_new;
	}
	return n;
}

int rdv_sim_epochs_since(const rdv_sim *sim, int64_t t_us)
{
	int n = 0;
	for (int i = 0; i < sim->n_records; i++) {
		bool is_new = sim->records[i].at_us >= t_us;
		for (int j = 0; j < i && is_new; j++)
			is_new = sim->records[j].epoch != sim->records[i].epoch;
		n += is_new;
	}
	return n;
}

int64_t rdv_sim_first_taken(const rdv_sim *sim, uint64_t epoch)
{
	for (int i = 0; i < sim->n_records; i++)
		if (sim->records[i].epoch == epoch)
			return sim->records[i].at_us;
	return -1;
}

int64_t rdv_sim_all_members_took(rdv_sim *sim, uint64_t epoch)
{
	int64_t last = -1;
	for (int i = 0; i < sim->n; i++) {
		const ftl_rdv *r = sim->nodes[i].rdv;
		if (r == NULL || ftl_rdv_rank(r) < 0 || ftl_rdv_current(r)->epoch != epoch)
			continue;
		for (int k = sim->n_records - 1; k >= 0; k--) {
			if (sim->records[k].node == i && sim->records[k].epoch == epoch) {
				last = sim->records[k].at_us > last ? sim->records[k].at_us : last;
				break;
			}
		}
	}
	return last;
}

int64_t rdv_sim_last_membership_change(const rdv_sim *sim, int observer)
{
	return sim->nodes[observer].membership_changed_us;
}

/* Every member of v is up, in the generation named. */
static bool is_all_up(const rdv_sim *sim, const ftl_rdv_view *v)
{
	for (uint32_t k = 0; k < v->n; k++) {
		int i = node_by_name(sim, v->members[k].name);
		if (i < 0 || sim->nodes[i].rdv == NULL || sim->nodes[i].generation != v->members[k].generation)
			return false;
	}
	return true;
}

bool rdv_sim_converged(rdv_sim *sim)
{
	const ftl_rdv_view *first = NULL;
	for (int i = 0; i < sim->n; i++) {
		const ftl_rdv *r = sim->nodes[i].rdv;
		if (r == NULL)
			continue;
		const ftl_rdv_view *v = ftl_rdv_current(r);
		ftl_rdv_phase p = ftl_rdv_get_phase(r);
		if (v->epoch == 0 || (p != FTL_RDV_TRAINING && p != FTL_RDV_SPARE))
			return false;
		if (first != NULL && rdv_view_digest(v) != rdv_view_digest(first))
			return false;
		first = first ? first : v;
	}
	return first != NULL && is_all_up(sim, first);
}

int64_t rdv_sim_run_until_converged(rdv_sim *sim, int64_t limit_us)
{
	int64_t start = sim->now_us;
	while (sim->now_us - start <= limit_us) {
		if (rdv_sim_converged(sim))
			return sim->now_us - start;
		rdv_sim_run_for(sim, 10000);
	}
	return -1;
}

uint64_t rdv_sim_sent(const rdv_sim *sim) { return sim->sent; }
uint64_t rdv_sim_lost(const rdv_sim *sim) { return sim->lost; }
