/* The simulator of sim.h: a binary heap of timed events (datagram deliveries, push-pull legs, node
 * ticks) over a set of ftl_swim instances. A node's tick is scheduled only when its deadline moves
 * earlier; a tick that fires early is harmless (the core does only what is due) and reschedules. */
#include "sim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rng.h"
#include "seal.h"

typedef enum ev_kind { EV_TICK, EV_DATAGRAM, EV_PP_REQUEST, EV_PP_REPLY, EV_REJOIN, EV_CHECK_DONE } ev_kind;

/* A proof-of-death check's outcome on its way back to the node that asked (EV_CHECK_DONE's data). */
typedef struct check_done {
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uint64_t generation;
	ftl_swim_check_result result;
} check_done;

typedef struct sim_event {
	int64_t at;
	uint64_t seq;       /* ties broken by insertion order: determinism */
	ev_kind kind;
	int node;           /* who handles it */
	int from;           /* who sent it (push-pull) */
	uint32_t life;      /* the node's life when scheduled (stale after a crash or restart) */
	bool is_join;
	size_t len;
	uint8_t *data;      /* owned */
} sim_event;

typedef struct link_override {
	int from, to;
	double loss;
	int64_t extra_delay_us;
} link_override;

typedef struct sim_node {
	ftl_swim *swim;
	ftl_keyring *keyring;
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uint64_t generation;
	uint32_t life;       /* bumped by crash and restart */
	int group;
	bool is_paused;
	int64_t slow_us;
	int64_t tick_at;     /* earliest tick scheduled; INT64_MAX when none */
	sim_event *backlog;  /* datagrams held while paused */
	int n_backlog;
} sim_node;

struct ftl_sim {
	ftl_sim_options opt;
	ftl_rng net_rng;
	int64_t now;
	uint64_t next_seq;
	sim_event *heap;
	size_t heap_len, heap_cap;
	sim_node *nodes;
	int n_nodes;
	bool blocked[FTL_SIM_MAX_GROUPS][FTL_SIM_MAX_GROUPS];
	link_override *links;
	int n_links;
	ftl_sim_event_cb cb;
	void *cb_ctx;
	uint8_t key[FTL_KEY_SIZE];
	ftl_sim_stats stats;
};

/* ---- heap ---- */

static bool before(const sim_event *a, const sim_event *b) { return a->at < b->at || (a->at == b->at && a->seq < b->seq); }

static void heap_push(ftl_sim *sim, sim_event ev)
{
	if (sim->heap_len == sim->heap_cap) {
		sim->heap_cap = sim->heap_cap ? sim->heap_cap * 2 : 1024;
		sim->heap = realloc(sim->heap, sim->heap_cap * sizeof(*sim->heap));
		if (!sim->heap)
			abort();
	}
	ev.seq = sim->next_seq++;
	size_t i = sim->heap_len++;
	while (i > 0 && before(&ev, &sim->heap[(i - 1) / 2])) {
		sim->heap[i] = sim->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	sim->heap[i] = ev;
}

static sim_event heap_pop(ftl_sim *sim)
{
	sim_event top = sim->heap[0], last = sim->heap[--sim->heap_len];
	size_t i = 0, n = sim->heap_len;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(&sim->heap[c + 1], &sim->heap[c]))
			c++;
		if (!before(&sim->heap[c], &last))
			break;
		sim->heap[i] = sim->heap[c];
		i = c;
	}
	if (n > 0)
		sim->heap[i] = last;
	return top;
}

/* ---- nodes ---- */

void ftl_sim_options_default(ftl_sim_options *o, int n, ftl_swim_profile profile)
{
	memset(o, 0, sizeof(*o));
	o->n = n;
	ftl_swim_config_profile(&o->config, profile);
	o->delay_us = 200;
	o->jitter_us = 100;
}

static int index_of_addr(const char *addr)
{
	if (strncmp(addr, "sim:", 4) != 0)
		return -1;
	return atoi(addr + 4);
}

static void schedule_tick(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	if (!nd->swim || nd->is_paused)
		return;
	int64_t at = ftl_swim_next_deadline(nd->swim);
	if (at < sim->now)
		at = sim->now;
	if (at >= nd->tick_at)
		return;
	nd->tick_at = at;
	heap_push(sim, (sim_event){.at = at, .kind = EV_TICK, .node = i, .life = nd->life});
}

static double link_loss(ftl_sim *sim, int from, int to, int64_t *extra)
{
	double loss = sim->opt.loss;
	*extra = 0;
	for (int k = 0; k < sim->n_links; k++) {
		if (sim->links[k].from == from && sim->links[k].to == to) {
			loss = sim->links[k].loss;
			*extra = sim->links[k].extra_delay_us;
		}
	}
	return loss;
}

static bool is_reachable(const ftl_sim *sim, int from, int to)
{
	return !sim->blocked[sim->nodes[from].group][sim->nodes[to].group];
}

static int64_t one_way_delay(ftl_sim *sim, int to, int64_t extra)
{
	int64_t d = sim->opt.delay_us + extra + sim->nodes[to].slow_us;
	if (sim->opt.jitter_us > 0)
		d += (int64_t)ftl_rng_below(&sim->net_rng, (uint32_t)sim->opt.jitter_us);
	return d;
}

/* Datagrams travel sealed by the sender's keyring, as between agents (channel/seal.h), so key rotation
 * and a wrong key show in the simulation as they would on a network. */
static void receive_sealed(ftl_swim *s, int64_t now, const uint8_t *data, size_t len)
{
	uint8_t plain[FTL_UDP_PACKET_MAX];
	size_t plain_len;
	if (ftl_open_datagram(ftl_swim_keyring(s), data, len, plain, &plain_len) != 0)
		ftl_swim_count_drop(s, FTL_DROP_KEYRING);
	else
		ftl_swim_receive(s, now, plain, plain_len);
}

static void send_datagram(ftl_sim *sim, int from, const ftl_swim_output *out)
{
	int to = index_of_addr(out->to_addr);
	if (to < 0 || to >= sim->n_nodes) {
		sim->stats.to_dead++;
		return;
	}
	int64_t extra;
	double loss = link_loss(sim, from, to, &extra);
	if (!is_reachable(sim, from, to)) {
		sim->stats.blocked++;
		return;
	}
	if (loss > 0 && ftl_rng_unit(&sim->net_rng) < loss) {
		sim->stats.lost++;
		return;
	}
	uint8_t *copy = malloc(FTL_UDP_PACKET_MAX);
	size_t len;
	if (!copy || ftl_seal_datagram(ftl_swim_keyring(sim->nodes[from].swim), out->data, out->len, copy, &len) != 0)
		abort(); /* the core's budget leaves room for the seal */
	heap_push(sim, (sim_event){.at = sim->now + one_way_delay(sim, to, extra), .kind = EV_DATAGRAM,
				   .node = to, .life = sim->nodes[to].life, .len = len, .data = copy});
}

static void start_push_pull(ftl_sim *sim, int from, const ftl_swim_output *out)
{
	int to = index_of_addr(out->to_addr);
	if (to < 0 || to >= sim->n_nodes || !is_reachable(sim, from, to) || !is_reachable(sim, to, from))
		return;
	sim_event ev = {.kind = EV_PP_REQUEST, .node = to, .from = from, .life = sim->nodes[to].life,
			.is_join = out->is_join};
	if (ftl_swim_push_pull_encode(sim->nodes[from].swim, out->is_join, &ev.data, &ev.len) != 0)
		return;
	ev.at = sim->now + one_way_delay(sim, to, 0);
	heap_push(sim, ev);
}

/* A TCP connect to the checked address, as the kernels on both ends would answer it: a running node's
 * kernel accepts (paused or not: the listening socket stays open), a crashed node's address refuses
 * (its kernel is up, nothing listens), a partition or an address nobody holds is silent until the
 * timeout. Loss is ignored (TCP retransmits within the timeout). */
static void start_check(ftl_sim *sim, int from, const ftl_swim_output *out)
{
	int to = index_of_addr(out->to_addr);
	check_done *d = calloc(1, sizeof(*d));
	if (!d)
		abort();
	snprintf(d->name, sizeof(d->name), "%s", out->to_name);
	snprintf(d->addr, sizeof(d->addr), "%s", out->to_addr);
	d->generation = out->generation;
	int64_t at = sim->now + out->timeout_us;
	d->result = FTL_CHECK_NO_ANSWER;
	if (to >= 0 && to < sim->n_nodes && is_reachable(sim, from, to) && is_reachable(sim, to, from)) {
		d->result = sim->nodes[to].swim ? FTL_CHECK_ACCEPTED : FTL_CHECK_REFUSED;
		at = sim->now + one_way_delay(sim, to, 0) + one_way_delay(sim, from, 0);
		sim->stats.refusals += d->result == FTL_CHECK_REFUSED;
	}
	heap_push(sim, (sim_event){.at = at, .kind = EV_CHECK_DONE, .node = from, .life = sim->nodes[from].life,
				   .len = sizeof(*d), .data = (uint8_t *)d});
}

/* Takes everything a node produced after a call into it. */
static void drain(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	if (!nd->swim)
		return;
	ftl_swim_output out;
	while (ftl_swim_next_output(nd->swim, &out)) {
		if (out.kind == FTL_OUTPUT_PACKET)
			send_datagram(sim, i, &out);
		else if (out.kind == FTL_OUTPUT_CHECK)
			start_check(sim, i, &out);
		else
			start_push_pull(sim, i, &out);
	}
	ftl_swim_event ev;
	while (ftl_swim_next_event(nd->swim, &ev))
		if (sim->cb)
			sim->cb(sim->cb_ctx, sim, i, &ev);
	schedule_tick(sim, i);
}

static ftl_swim *start_node(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	const char *err = NULL;
	if (!nd->keyring)
		nd->keyring = sim->opt.is_insecure ? ftl_keyring_new_insecure("sim", &err)
						   : ftl_keyring_new("sim", sim->key, &err);
	if (!nd->keyring) {
		fprintf(stderr, "sim: keyring: %s\n", err);
		abort();
	}
	ftl_swim_options so = {
		.name = nd->name,
		.generation = nd->generation,
		.addr = nd->addr,
		.config = sim->opt.config,
		.keyring = nd->keyring,
		.seed = ftl_rng_next(&sim->net_rng),
	};
	nd->swim = ftl_swim_new(&so, sim->now, &err);
	if (!nd->swim) {
		fprintf(stderr, "sim: node %d: %s\n", i, err);
		abort();
	}
	nd->tick_at = INT64_MAX;
	return nd->swim;
}

static int live_seed(ftl_sim *sim, int except)
{
	for (int j = 0; j < sim->n_nodes; j++)
		if (j != except && sim->nodes[j].swim && !sim->nodes[j].is_paused)
			return j;
	return -1;
}

static void join_through_seed(ftl_sim *sim, int i)
{
	int seed = live_seed(sim, i);
	if (seed >= 0) {
		const char *addr = sim->nodes[seed].addr;
		ftl_swim_join(sim->nodes[i].swim, &addr, 1);
	}
	drain(sim, i);
}

static void init_slot(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	memset(nd, 0, sizeof(*nd));
	snprintf(nd->name, sizeof(nd->name), "n%d", i);
	snprintf(nd->addr, sizeof(nd->addr), "sim:%d", i);
	nd->generation = 1;
	nd->tick_at = INT64_MAX;
}

static void converge(ftl_sim *sim)
{
	for (int i = 0; i < sim->n_nodes; i++) {
		for (int j = 0; j < sim->n_nodes; j++) {
			if (i == j)
				continue;
			ftl_msg_alive a = {.generation = sim->nodes[j].generation};
			strcpy(a.name, sim->nodes[j].name);
			strcpy(a.addr, sim->nodes[j].addr);
			ftl_swim_add_known(sim->nodes[i].swim, sim->now, &a);
		}
	}
}

ftl_sim *ftl_sim_new(const ftl_sim_options *o)
{
	ftl_sim *sim = calloc(1, sizeof(*sim));
	if (!sim)
		return NULL;
	sim->opt = *o;
	if (sim->opt.capacity < o->n)
		sim->opt.capacity = o->n;
	const char *env = getenv("FTL_SIM_SEED");
	if (env && *env)
		sim->opt.seed = strtoull(env, NULL, 0);
	else if (sim->opt.seed == 0)
		sim->opt.seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	if (!o->is_quiet)
		fprintf(stderr, "sim: seed=%" PRIu64 " (FTL_SIM_SEED=%" PRIu64 " replays this run)\n", sim->opt.seed,
			sim->opt.seed);
	ftl_rng_seed(&sim->net_rng, sim->opt.seed);
	for (int k = 0; k < FTL_KEY_SIZE; k++)
		sim->key[k] = (uint8_t)ftl_rng_next(&sim->net_rng);
	sim->nodes = calloc((size_t)sim->opt.capacity, sizeof(*sim->nodes));
	if (!sim->nodes) {
		free(sim);
		return NULL;
	}
	sim->n_nodes = o->n;
	for (int i = 0; i < o->n; i++) {
		init_slot(sim, i);
		start_node(sim, i);
	}
	if (o->is_cold_start) {
		for (int i = 1; i < o->n; i++)
			join_through_seed(sim, i);
	} else {
		converge(sim);
	}
	for (int i = 0; i < o->n; i++)
		drain(sim, i);
	if (o->rejoin_interval_us > 0)
		heap_push(sim, (sim_event){.at = o->rejoin_interval_us, .kind = EV_REJOIN});
	return sim;
}

static void free_event(sim_event *ev) { free(ev->data); }

static void clear_backlog(sim_node *nd)
{
	for (int k = 0; k < nd->n_backlog; k++)
		free_event(&nd->backlog[k]);
	nd->n_backlog = 0;
}

void ftl_sim_delete(ftl_sim *sim)
{
	if (!sim)
		return;
	while (sim->heap_len > 0) {
		sim_event ev = heap_pop(sim);
		free_event(&ev);
	}
	for (int i = 0; i < sim->n_nodes; i++) {
		clear_backlog(&sim->nodes[i]);
		free(sim->nodes[i].backlog);
		ftl_swim_delete(sim->nodes[i].swim);
		ftl_keyring_delete(sim->nodes[i].keyring);
	}
	free(sim->nodes);
	free(sim->heap);
	free(sim->links);
	free(sim);
}

/* ---- running ---- */

static void deliver(ftl_sim *sim, sim_event *ev)
{
	sim_node *nd = &sim->nodes[ev->node];
	if (nd->is_paused) {
		if (!nd->backlog)
			nd->backlog = calloc(FTL_SIM_PAUSE_BACKLOG, sizeof(*nd->backlog));
		if (nd->backlog && nd->n_backlog < FTL_SIM_PAUSE_BACKLOG) {
			nd->backlog[nd->n_backlog++] = *ev;
			ev->data = NULL;
		} else {
			sim->stats.lost++;
		}
		return;
	}
	sim->stats.delivered++;
	receive_sealed(nd->swim, sim->now, ev->data, ev->len);
	drain(sim, ev->node);
}

static void push_pull_leg(ftl_sim *sim, sim_event *ev)
{
	sim_node *nd = &sim->nodes[ev->node];
	if (nd->is_paused)
		return; /* the connection times out */
	ftl_swim_push_pull_merge(nd->swim, sim->now, ev->data, ev->len, NULL);
	sim->stats.push_pulls++;
	if (ev->kind == EV_PP_REQUEST && sim->nodes[ev->from].swim && is_reachable(sim, ev->node, ev->from)) {
		sim_event reply = {.kind = EV_PP_REPLY, .node = ev->from, .from = ev->node,
				   .life = sim->nodes[ev->from].life};
		if (ftl_swim_push_pull_encode(nd->swim, false, &reply.data, &reply.len) == 0) {
			reply.at = sim->now + one_way_delay(sim, ev->from, 0);
			heap_push(sim, reply);
		}
	}
	drain(sim, ev->node);
}

/* The seed rule of the agent: a node that sees fewer live members than the DNS answer rejoins. */
static void rejoin_round(ftl_sim *sim)
{
	int running = ftl_sim_running_count(sim, -1);
	for (int i = 0; i < sim->n_nodes; i++) {
		sim_node *nd = &sim->nodes[i];
		if (!nd->swim || nd->is_paused)
			continue;
		ftl_swim *s = nd->swim;
		if ((int)(ftl_swim_count(s, FTL_MEMBER_ALIVE) + ftl_swim_count(s, FTL_MEMBER_SUSPECT)) >= running)
			continue;
		for (int tries = 0; tries < 8; tries++) {
			int j = (int)ftl_rng_below(&sim->net_rng, (uint32_t)sim->n_nodes);
			ftl_member_state st;
			if (j == i || !sim->nodes[j].swim || (ftl_sim_view(sim, i, j, &st) && st == FTL_MEMBER_ALIVE))
				continue;
			const char *addr = sim->nodes[j].addr;
			ftl_swim_join(s, &addr, 1);
			drain(sim, i);
			break;
		}
	}
	heap_push(sim, (sim_event){.at = sim->now + sim->opt.rejoin_interval_us, .kind = EV_REJOIN});
}

static void run_event(ftl_sim *sim, sim_event *ev)
{
	sim_node *nd = &sim->nodes[ev->node];
	sim->stats.events_run++;
	if (ev->kind == EV_REJOIN) {
		rejoin_round(sim);
		return;
	}
	if (!nd->swim || ev->life != nd->life) {
		if (ev->kind != EV_TICK)
			sim->stats.to_dead++;
		return;
	}
	switch (ev->kind) {
	case EV_TICK:
		if (ev->at != nd->tick_at || nd->is_paused)
			return; /* superseded by an earlier tick, or paused */
		nd->tick_at = INT64_MAX;
		ftl_swim_tick(nd->swim, sim->now);
		drain(sim, ev->node);
		break;
	case EV_DATAGRAM:
		deliver(sim, ev);
		break;
	case EV_PP_REQUEST:
	case EV_PP_REPLY:
		push_pull_leg(sim, ev);
		break;
	case EV_CHECK_DONE: {
		const check_done *d = (const check_done *)ev->data;
		if (nd->is_paused)
			return; /* the check expires in the core */
		ftl_swim_check_done(nd->swim, sim->now, d->name, d->generation, d->addr, d->result);
		drain(sim, ev->node);
		break;
	}
	case EV_REJOIN:
		break;
	}
}

void ftl_sim_run_until(ftl_sim *sim, int64_t t_us)
{
	while (sim->heap_len > 0 && sim->heap[0].at <= t_us) {
		sim_event ev = heap_pop(sim);
		sim->now = ev.at;
		run_event(sim, &ev);
		free_event(&ev);
	}
	if (t_us > sim->now)
		sim->now = t_us;
}

void ftl_sim_run_for(ftl_sim *sim, int64_t dt_us) { ftl_sim_run_until(sim, sim->now + dt_us); }

void ftl_sim_on_event(ftl_sim *sim, ftl_sim_event_cb cb, void *ctx)
{
	sim->cb = cb;
	sim->cb_ctx = ctx;
}

/* ---- faults ---- */

int ftl_sim_size(const ftl_sim *sim) { return sim->n_nodes; }
int ftl_sim_capacity(const ftl_sim *sim) { return sim->opt.capacity; }
ftl_swim *ftl_sim_node(ftl_sim *sim, int i) { return sim->nodes[i].swim; }
const char *ftl_sim_name(const ftl_sim *sim, int i) { return sim->nodes[i].name; }
bool ftl_sim_is_running(const ftl_sim *sim, int i) { return sim->nodes[i].swim != NULL; }

void ftl_sim_crash(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	ftl_swim_delete(nd->swim);
	nd->swim = NULL;
	nd->life++;
	nd->is_paused = false;
	nd->tick_at = INT64_MAX;
	clear_backlog(nd);
}

void ftl_sim_pause(ftl_sim *sim, int i) { sim->nodes[i].is_paused = true; }

void ftl_sim_resume(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	if (!nd->is_paused)
		return;
	nd->is_paused = false;
	nd->tick_at = INT64_MAX;
	for (int k = 0; k < nd->n_backlog && nd->swim; k++) {
		sim->stats.delivered++;
		receive_sealed(nd->swim, sim->now, nd->backlog[k].data, nd->backlog[k].len);
	}
	clear_backlog(nd);
	if (nd->swim) {
		ftl_swim_tick(nd->swim, sim->now);
		drain(sim, i);
	}
}

void ftl_sim_set_slow(ftl_sim *sim, int i, int64_t extra_delay_us) { sim->nodes[i].slow_us = extra_delay_us; }

void ftl_sim_leave(ftl_sim *sim, int i)
{
	if (!sim->nodes[i].swim)
		return;
	ftl_swim_leave(sim->nodes[i].swim, sim->now);
	drain(sim, i);
}

void ftl_sim_hint(ftl_sim *sim, int observer, int subject)
{
	if (!sim->nodes[observer].swim || sim->nodes[observer].is_paused)
		return;
	ftl_swim_hint(sim->nodes[observer].swim, sim->now, sim->nodes[subject].name);
	drain(sim, observer);
}

void ftl_sim_restart(ftl_sim *sim, int i)
{
	if (sim->nodes[i].swim)
		ftl_sim_crash(sim, i);
	sim->nodes[i].generation++;
	start_node(sim, i);
	join_through_seed(sim, i);
}

int ftl_sim_add_node(ftl_sim *sim)
{
	if (sim->n_nodes == sim->opt.capacity)
		return -1;
	int i = sim->n_nodes++;
	init_slot(sim, i);
	start_node(sim, i);
	join_through_seed(sim, i);
	return i;
}

/* ---- network ---- */

void ftl_sim_set_loss(ftl_sim *sim, double loss) { sim->opt.loss = loss; }

void ftl_sim_set_link(ftl_sim *sim, int from, int to, double loss, int64_t extra_delay_us)
{
	for (int k = 0; k < sim->n_links; k++) {
		if (sim->links[k].from == from && sim->links[k].to == to) {
			sim->links[k].loss = loss;
			sim->links[k].extra_delay_us = extra_delay_us;
			return;
		}
	}
	link_override *links = realloc(sim->links, (size_t)(sim->n_links + 1) * sizeof(*links));
	if (!links)
		abort();
	sim->links = links;
	sim->links[sim->n_links++] = (link_override){from, to, loss, extra_delay_us};
}

void ftl_sim_set_group(ftl_sim *sim, int i, int group) { sim->nodes[i].group = group % FTL_SIM_MAX_GROUPS; }

void ftl_sim_block(ftl_sim *sim, int a, int b, bool is_blocked) { sim->blocked[a][b] = is_blocked; }

void ftl_sim_heal(ftl_sim *sim) { memset(sim->blocked, 0, sizeof(sim->blocked)); }

/* ---- views ---- */

bool ftl_sim_view(ftl_sim *sim, int observer, int subject, ftl_member_state *state)
{
	ftl_swim *s = sim->nodes[observer].swim;
	if (!s)
		return false;
	const ftl_member *m = ftl_swim_find(s, sim->nodes[subject].name);
	if (!m || m->generation != sim->nodes[subject].generation)
		return false;
	*state = m->state;
	return true;
}

int ftl_sim_count_seeing(ftl_sim *sim, int subject, ftl_member_state state)
{
	int n = 0;
	for (int i = 0; i < sim->n_nodes; i++) {
		ftl_member_state st;
		if (i != subject && ftl_sim_view(sim, i, subject, &st) && st == state)
			n++;
	}
	return n;
}

int ftl_sim_running_count(const ftl_sim *sim, int except)
{
	int n = 0;
	for (int i = 0; i < sim->n_nodes; i++)
		n += i != except && sim->nodes[i].swim != NULL;
	return n;
}

const ftl_sim_stats *ftl_sim_get_stats(const ftl_sim *sim) { return &sim->stats; }
uint64_t ftl_sim_seed(const ftl_sim *sim) { return sim->opt.seed; }
int64_t ftl_sim_now(const ftl_sim *sim) { return sim->now; }
