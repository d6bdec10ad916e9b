/* The simulator of sim.h: a binary heap (base/heap.h) of timed events (datagram and frame deliveries,
 * push-pull legs, seed lookups, node ticks) over a set of ftl_node instances. A node's tick is scheduled only when its
 * deadline moves earlier; a tick that fires early is harmless (the node does only what is due) and
 * reschedules. */
#include "sim_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node/node_meta.h"
#include "rendezvous/rdv_msg.h"
#include "channel/seal.h"

/* A proof-of-death check's outcome on its way back to the node that asked (EV_CHECK_DONE's data). */
typedef struct check_done {
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uint64_t generation;
	ftl_swim_check_result result;
} check_done;

/* ---- the event queue (base/heap.h): earliest first, ties in push order so a run is deterministic ---- */

static int event_cmp(const void *x, const void *y)
{
	const sim_event *a = x, *b = y;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void heap_push(ftl_sim *sim, sim_event ev)
{
	ev.seq = sim->next_seq++;
	if (ftl_heap_push(&sim->events, &ev) != 0)
		abort();
}

static const sim_event *heap_peek(const ftl_sim *sim) { return ftl_heap_peek(&sim->events); }

/* ---- nodes ---- */

void ftl_sim_options_default(ftl_sim_options *o, int n, ftl_swim_profile profile)
{
	memset(o, 0, sizeof(*o));
	o->n = n;
	ftl_swim_config_profile(&o->config, profile);
	o->delay_us = 200;
	o->jitter_us = 100;
}

static int index_of_addr(const ftl_sim *sim, const char *addr)
{
	if (strncmp(addr, "sim:", 4) != 0)
		return -1;
	int i = atoi(addr + 4);
	return i >= 0 && i < sim->n_nodes ? i : -1;
}

int ftl_sim_index_of_name(const ftl_sim *sim, const char *name)
{
	if (name[0] != 'n')
		return -1;
	int i = atoi(name + 1);
	return i >= 0 && i < sim->n_nodes && strcmp(sim->nodes[i].name, name) == 0 ? i : -1;
}

static void schedule_tick(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	if (!nd->node || nd->is_paused)
		return;
	int64_t at = ftl_node_next_deadline(nd->node);
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
static void receive_sealed(ftl_node *n, int64_t now, const uint8_t *data, size_t len)
{
	uint8_t plain[FTL_UDP_PACKET_MAX];
	size_t plain_len;
	if (ftl_open_datagram(ftl_swim_keyring(ftl_node_swim(n)), data, len, plain, &plain_len) != 0)
		ftl_swim_count_drop(ftl_node_swim(n), FTL_DROP_KEYRING);
	else
		ftl_node_receive_datagram(n, now, plain, plain_len);
}

static void send_datagram(ftl_sim *sim, int from, const ftl_swim_output *out)
{
	int to = index_of_addr(sim, out->to_addr);
	if (to < 0) {
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
	if (!copy || ftl_seal_datagram(ftl_swim_keyring(ftl_node_swim(sim->nodes[from].node)), out->data, out->len, copy, &len) != 0)
		abort(); /* the core's budget leaves room for the seal */
	heap_push(sim, (sim_event){.at = sim->now + one_way_delay(sim, to, extra), .kind = EV_DATAGRAM,
				   .node = to, .life = sim->nodes[to].life, .len = len, .data = copy});
}

static bool is_connected(const ftl_sim *sim, int a, int b)
{
	return is_reachable(sim, a, b) && is_reachable(sim, b, a);
}

static void start_push_pull(ftl_sim *sim, int from, const ftl_swim_output *out)
{
	int to = index_of_addr(sim, out->to_addr);
	if (to < 0 || !is_connected(sim, from, to))
		return;
	sim_event ev = {.kind = EV_PP_REQUEST, .node = to, .from = from, .life = sim->nodes[to].life,
			.is_join = out->is_join};
	if (ftl_swim_push_pull_encode(ftl_node_swim(sim->nodes[from].node), out->is_join, &ev.data, &ev.len) != 0)
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
	int to = index_of_addr(sim, out->to_addr);
	check_done *d = calloc(1, sizeof(*d));
	if (!d)
		abort();
	snprintf(d->name, sizeof(d->name), "%s", out->to_name);
	snprintf(d->addr, sizeof(d->addr), "%s", out->to_addr);
	d->generation = out->generation;
	int64_t at = sim->now + out->timeout_us;
	d->result = FTL_CHECK_NO_ANSWER;
	if (to >= 0 && is_connected(sim, from, to)) {
		d->result = sim->nodes[to].node ? FTL_CHECK_ACCEPTED : FTL_CHECK_REFUSED;
		at = sim->now + one_way_delay(sim, to, 0) + one_way_delay(sim, from, 0);
		sim->stats.refusals += d->result == FTL_CHECK_REFUSED;
	}
	heap_push(sim, (sim_event){.at = at, .kind = EV_CHECK_DONE, .node = from, .life = sim->nodes[from].life,
				   .len = sizeof(*d), .data = (uint8_t *)d});
}

/* A rendezvous frame over TCP: delayed like a datagram, never lost, cut by a partition either way. */
static void send_frame(ftl_sim *sim, int from, const ftl_node_frame *f)
{
	int to = index_of_addr(sim, f->to_addr);
	if (to < 0 || !is_connected(sim, from, to)) {
		sim->stats.blocked++;
		return;
	}
	uint8_t *copy = malloc(f->msg.len);
	if (!copy)
		abort();
	memcpy(copy, f->msg.data, f->msg.len);
	heap_push(sim, (sim_event){.at = sim->now + one_way_delay(sim, to, 0), .kind = EV_FRAME, .node = to,
				   .life = sim->nodes[to].life, .len = f->msg.len, .data = copy});
}

/* True when this frame is the one after which the node is to crash (ftl_sim_crash_after_sends). */
static bool is_crash_point(sim_node *nd, const ftl_node_frame *f)
{
	rdv_msg m;
	bool is_it = false;
	if (nd->crash_type < 0 || rdv_decode(f->msg.data, f->msg.len, &m) != 0)
		return false;
	if ((int)m.type == nd->crash_type)
		is_it = --nd->crash_after <= 0;
	rdv_msg_free(&m);
	return is_it;
}

static void hand_out(ftl_sim *sim, int i, const ftl_node_event *ev)
{
	sim_node *nd = &sim->nodes[i];
	sim->stats.aborts += ev->is_abort;
	if (ev->kind == FTL_NODE_EVENT_VIEW) {
		ftl_sim_record_view(sim, i);
		return;
	}
	if (ev->kind != FTL_NODE_EVENT_MEMBER)
		return;
	if (ev->member.type != FTL_EVENT_SUSPECT)
		nd->membership_changed_us = sim->now;
	if (sim->cb)
		sim->cb(sim->cb_ctx, sim, i, &ev->member);
}

/* Takes everything a node produced after a call into it. */
static void drain(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	if (!nd->node)
		return;
	ftl_swim_output out;
	while (ftl_node_next_output(nd->node, &out)) {
		if (out.kind == FTL_OUTPUT_PACKET)
			send_datagram(sim, i, &out);
		else if (out.kind == FTL_OUTPUT_CHECK)
			start_check(sim, i, &out);
		else
			start_push_pull(sim, i, &out);
	}
	ftl_node_event ev;
	while (ftl_node_next_event(nd->node, &ev))
		hand_out(sim, i, &ev);
	ftl_node_frame f;
	while (nd->node && ftl_node_next_frame(nd->node, &f)) {
		bool is_last = is_crash_point(nd, &f);
		send_frame(sim, i, &f);
		ftl_node_frame_free(&f);
		if (is_last)
			ftl_sim_crash(sim, i);
	}
	schedule_tick(sim, i);
}

static ftl_err blob_cb(void *ctx, uint64_t epoch, uint8_t *blob, size_t cap, size_t *len)
{
	const sim_node *nd = ctx;
	int n = snprintf((char *)blob, cap, "%s@%llu", nd->name, (unsigned long long)epoch);
	*len = n < (int)cap ? (size_t)n : cap - 1;
	return FTL_OK;
}

/* Node i's metadata: its data address and, with replica_size, its replica (ftl_sim_options). */
static size_t pack_meta(const ftl_sim *sim, int i, uint8_t *out, size_t cap)
{
	ftl_rdv_member self = {0};
	ftl_copy_str(self.data_addr, sim->nodes[i].data_addr, sizeof self.data_addr);
	if (sim->opt.replica_size > 0) {
		snprintf(self.replica, sizeof self.replica, "r%d", i / (int)sim->opt.replica_size);
		self.replica_index = (uint32_t)i % sim->opt.replica_size;
		self.replica_size = sim->opt.replica_size;
	}
	return ftl_meta_pack(&self, NULL, 0, out, cap);
}

static void start_node(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	if (!nd->keyring)
		nd->keyring = sim->opt.is_insecure ? ftl_keyring_new_insecure("sim")
						   : ftl_keyring_new("sim", sim->key);
	if (!nd->keyring) {
		fprintf(stderr, "sim: keyring: %s\n", ftl_diag_message());
		abort();
	}
	uint8_t meta[FTL_META_MAX];
	size_t meta_len = sim->opt.is_training ? pack_meta(sim, (int)(nd - sim->nodes), meta, sizeof(meta)) : 0;
	nd->generation = ++sim->next_generation;
	ftl_node_options no = {
		.swim = {
			.name = nd->name,
			.generation = nd->generation,
			.addr = nd->addr,
			.meta = meta,
			.meta_len = (uint16_t)meta_len,
			.config = sim->opt.config,
			.keyring = nd->keyring,
			.seed = ftl_rng_next(&sim->net_rng),
		},
		.is_training = sim->opt.is_training,
		.data_addr = nd->data_addr,
		.rdv = sim->opt.rdv,
		.blob_cb = sim->opt.is_with_blob ? blob_cb : NULL,
		.blob_ctx = nd,
	};
	nd->node = ftl_node_new(&no, sim->now);
	if (!nd->node) {
		fprintf(stderr, "sim: node %d: %s\n", i, ftl_diag_message());
		abort();
	}
	nd->tick_at = INT64_MAX;
	nd->crash_type = -1;
	nd->view_digest = 0;
	nd->membership_changed_us = sim->now;
	/* It resolves its seeds as it starts, as the agent does. */
	heap_push(sim, (sim_event){.at = sim->now, .kind = EV_SEEDS, .node = i, .life = nd->life});
}

static void init_slot(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	memset(nd, 0, sizeof(*nd));
	snprintf(nd->name, sizeof(nd->name), "n%d", i);
	snprintf(nd->addr, sizeof(nd->addr), "sim:%d", i);
	/* Data addresses run against names and generations, so an order derived from them would show. */
	snprintf(nd->data_addr, sizeof(nd->data_addr), "10.%d.%d.1:29500", 200 - i / 200, 250 - i % 200);
	nd->tick_at = INT64_MAX;
	nd->crash_type = -1;
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
			if (sim->opt.is_training)
				a.meta_len = (uint16_t)pack_meta(sim, j, a.meta, sizeof(a.meta));
			ftl_node_add_known(sim->nodes[i].node, sim->now, &a);
		}
	}
}

ftl_sim *ftl_sim_new(const ftl_sim_options *o)
{
	ftl_sim *sim = calloc(1, sizeof(*sim));
	if (sim)
		ftl_heap_create(&sim->events, sizeof(sim_event), event_cmp);
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
	ftl_rng_seed(&sim->dns_rng, sim->opt.seed ^ 0x5eed5eed5eed5eedULL);
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
	if (!o->is_cold_start)
		converge(sim);
	for (int i = 0; i < o->n; i++)
		ftl_node_tick(sim->nodes[i].node, sim->now); /* the rendezvous hears of the members it was given */
	for (int i = 0; i < o->n; i++)
		drain(sim, i);
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
	sim_event ev;
	while (ftl_heap_pop(&sim->events, &ev))
		free_event(&ev);
	for (int i = 0; i < sim->n_nodes; i++) {
		clear_backlog(&sim->nodes[i]);
		free(sim->nodes[i].backlog);
		ftl_node_delete(sim->nodes[i].node);
		ftl_keyring_delete(sim->nodes[i].keyring);
	}
	free(sim->nodes);
	free(sim->records);
	ftl_heap_destroy(&sim->events);
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
	if (ev->kind == EV_FRAME) {
		sim->stats.frames++;
		ftl_node_receive_frame(nd->node, sim->now, ev->data, ev->len);
	} else {
		sim->stats.delivered++;
		receive_sealed(nd->node, sim->now, ev->data, ev->len);
	}
	drain(sim, ev->node);
}

static void push_pull_leg(ftl_sim *sim, sim_event *ev)
{
	sim_node *nd = &sim->nodes[ev->node];
	if (nd->is_paused)
		return; /* the connection times out */
	ftl_node_push_pull_merge(nd->node, sim->now, ev->data, ev->len, NULL);
	sim->stats.push_pulls++;
	if (ev->kind == EV_PP_REQUEST && sim->nodes[ev->from].node && is_reachable(sim, ev->node, ev->from)) {
		sim_event reply = {.kind = EV_PP_REPLY, .node = ev->from, .from = ev->node,
				   .life = sim->nodes[ev->from].life};
		if (ftl_swim_push_pull_encode(ftl_node_swim(nd->node), false, &reply.data, &reply.len) == 0) {
			reply.at = sim->now + one_way_delay(sim, ev->from, 0);
			heap_push(sim, reply);
		}
	}
	drain(sim, ev->node);
}

/* What DNS answers node i: the fixed seeds' addresses, or (a headless Service) up to FTL_SIM_DNS_ANSWER
 * running nodes, a fresh random sample each time. */
static size_t dns_answer(ftl_sim *sim, int i, const char **answer)
{
	size_t n = 0;
	if (sim->opt.n_seeds > 0) {
		for (int k = 0; k < sim->opt.n_seeds && k < FTL_SIM_MAX_SEEDS; k++)
			answer[n++] = sim->nodes[sim->opt.seeds[k]].addr;
		return n;
	}
	int seen = 0;
	for (int j = 0; j < sim->n_nodes; j++) { /* reservoir sampling over the running nodes */
		if (!sim->nodes[j].node)
			continue;
		if (n < FTL_SIM_DNS_ANSWER) {
			answer[n++] = sim->nodes[j].addr;
		} else {
			uint32_t r = ftl_rng_below(&sim->dns_rng, (uint32_t)seen + 1);
			if (r < FTL_SIM_DNS_ANSWER)
				answer[r] = sim->nodes[j].addr;
		}
		seen++;
	}
	return n;
}

/* Node i resolves its seeds and applies the node's seed rule; again when the node says (reseed_interval, or
 * sooner while it sees no one). */
static void resolve_seeds(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	if (!nd->is_paused) {
		const char *answer[FTL_SIM_DNS_ANSWER];
		size_t n = dns_answer(sim, i, answer);
		sim->stats.seed_joins += ftl_node_seeds_answered(nd->node, sim->now, answer, n);
		drain(sim, i);
	}
	if (sim->opt.reseed_interval_us > 0 && nd->node)
		heap_push(sim, (sim_event){.at = sim->now + ftl_node_seeds_next_wait_us(nd->node, sim->opt.reseed_interval_us),
					   .kind = EV_SEEDS, .node = i, .life = nd->life});
}

static void run_event(ftl_sim *sim, sim_event *ev)
{
	sim_node *nd = &sim->nodes[ev->node];
	sim->stats.events_run++;
	if (!nd->node || ev->life != nd->life) {
		if (ev->kind != EV_TICK)
			sim->stats.to_dead++;
		return;
	}
	switch (ev->kind) {
	case EV_TICK:
		if (ev->at != nd->tick_at || nd->is_paused)
			return; /* superseded by an earlier tick, or paused */
		nd->tick_at = INT64_MAX;
		ftl_node_tick(nd->node, sim->now);
		drain(sim, ev->node);
		break;
	case EV_DATAGRAM:
	case EV_FRAME:
		deliver(sim, ev);
		break;
	case EV_SEEDS:
		resolve_seeds(sim, ev->node);
		break;
	case EV_PP_REQUEST:
	case EV_PP_REPLY:
		push_pull_leg(sim, ev);
		break;
	case EV_CHECK_DONE: {
		const check_done *d = (const check_done *)ev->data;
		if (nd->is_paused)
			return; /* the check expires in the core */
		ftl_node_check_done(nd->node, sim->now, d->name, d->generation, d->addr, d->result);
		drain(sim, ev->node);
		break;
	}
	}
}

void ftl_sim_run_until(ftl_sim *sim, int64_t t_us)
{
	sim_event ev;
	while (heap_peek(sim) && heap_peek(sim)->at <= t_us && ftl_heap_pop(&sim->events, &ev)) {
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
ftl_node *ftl_sim_get_node(ftl_sim *sim, int i) { return sim->nodes[i].node; }
ftl_swim *ftl_sim_node(ftl_sim *sim, int i) { return sim->nodes[i].node ? ftl_node_swim(sim->nodes[i].node) : NULL; }
const ftl_rdv *ftl_sim_rdv(ftl_sim *sim, int i) { return sim->nodes[i].node ? ftl_node_rdv(sim->nodes[i].node) : NULL; }
const char *ftl_sim_name(const ftl_sim *sim, int i) { return sim->nodes[i].name; }
bool ftl_sim_is_running(const ftl_sim *sim, int i) { return sim->nodes[i].node != NULL; }

void ftl_sim_crash(ftl_sim *sim, int i)
{
	sim_node *nd = &sim->nodes[i];
	ftl_node_delete(nd->node);
	nd->node = NULL;
	nd->life++;
	nd->is_paused = false;
	nd->tick_at = INT64_MAX;
	nd->view_digest = 0;
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
	for (int k = 0; k < nd->n_backlog && nd->node; k++)
		deliver(sim, &nd->backlog[k]);
	clear_backlog(nd);
	if (nd->node) {
		ftl_node_tick(nd->node, sim->now);
		drain(sim, i);
	}
}

void ftl_sim_set_slow(ftl_sim *sim, int i, int64_t extra_delay_us) { sim->nodes[i].slow_us = extra_delay_us; }

void ftl_sim_leave(ftl_sim *sim, int i)
{
	if (!sim->nodes[i].node)
		return;
	ftl_node_leave(sim->nodes[i].node, sim->now);
	drain(sim, i);
}

void ftl_sim_hint(ftl_sim *sim, int observer, int subject)
{
	if (!sim->nodes[observer].node || sim->nodes[observer].is_paused)
		return;
	ftl_node_comm_failed(sim->nodes[observer].node, sim->now, sim->nodes[subject].name);
	drain(sim, observer);
}

void ftl_sim_restart(ftl_sim *sim, int i)
{
	if (sim->nodes[i].node)
		ftl_sim_crash(sim, i);
	start_node(sim, i);
	drain(sim, i);
}

void ftl_sim_crash_after_sends(ftl_sim *sim, int i, int msg_type, int k)
{
	sim->nodes[i].crash_type = msg_type;
	sim->nodes[i].crash_after = k;
}

void ftl_sim_request_rebuild(ftl_sim *sim, int i, uint64_t epoch)
{
	if (!sim->nodes[i].node)
		return;
	ftl_node_request_rebuild(sim->nodes[i].node, sim->now, epoch);
	drain(sim, i);
}

ftl_err ftl_sim_request_bench(ftl_sim *sim, int i, int benched)
{
	if (!sim->nodes[i].node || !sim->nodes[benched].node)
		return ftl_diag_set(FTL_ERR_INVALID, "sim: node %d or %d is not running", i, benched);
	ftl_err err = ftl_node_request_bench(sim->nodes[i].node, sim->now, sim->nodes[benched].name,
					     sim->nodes[benched].generation);
	drain(sim, i);
	return err;
}

ftl_err ftl_sim_request_max(ftl_sim *sim, int i, uint32_t max_workers)
{
	if (!sim->nodes[i].node)
		return ftl_diag_set(FTL_ERR_INVALID, "sim: node %d is not running: no job to scale", i);
	ftl_err err = ftl_node_request_max(sim->nodes[i].node, sim->now, max_workers);
	drain(sim, i);
	return err;
}

ftl_err ftl_sim_waive_quorum(ftl_sim *sim, int i)
{
	if (!sim->nodes[i].node)
		return ftl_diag_set(FTL_ERR_INVALID, "sim: node %d is not running: no quorum to reset", i);
	ftl_err err = ftl_node_waive_quorum(sim->nodes[i].node, sim->now);
	drain(sim, i);
	return err;
}

int ftl_sim_add_node_named(ftl_sim *sim, const char *name)
{
	if (sim->n_nodes == sim->opt.capacity)
		return -1;
	int i = sim->n_nodes++;
	init_slot(sim, i);
	if (name)
		snprintf(sim->nodes[i].name, sizeof(sim->nodes[i].name), "%s", name);
	start_node(sim, i);
	drain(sim, i);
	return i;
}

int ftl_sim_add_node(ftl_sim *sim) { return ftl_sim_add_node_named(sim, NULL); }

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
	ftl_swim *s = ftl_sim_node(sim, observer);
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
		n += i != except && sim->nodes[i].node != NULL;
	return n;
}

const ftl_sim_stats *ftl_sim_get_stats(const ftl_sim *sim) { return &sim->stats; }
uint64_t ftl_sim_seed(const ftl_sim *sim) { return sim->opt.seed; }
int64_t ftl_sim_now(const ftl_sim *sim) { return sim->now; }
