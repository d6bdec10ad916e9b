/* Seeds: host:port names re-resolved through DNS every reseed interval (a Kubernetes headless Service
 * answers with every pod). Each answer goes to the node's seed rule (node/node_seeds.c), which decides whom
 * to join, and when to ask again (soon while it sees no one); this file only asks DNS, on the loop,
 * without blocking it. */
#include "agent_internal.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/log.h"

typedef struct seed_lookup {
	uv_getaddrinfo_t req;
	ftl_agent *a;
	int port;
	size_t index; /* the seed's place in FTL_SEEDS, for its count of failed lookups */
	char name[128];
} seed_lookup;

/* The seed's run of failed lookups; seeds past the last slot share it. */
static uint32_t *failures_of(ftl_agent *a, size_t index)
{
	size_t slots = sizeof(a->seeds.lookups_failed) / sizeof(a->seeds.lookups_failed[0]);
	return &a->seeds.lookups_failed[index < slots ? index : slots - 1];
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	seed_lookup *l = req->data;
	ftl_agent *a = l->a;
	a->seeds.lookups_in_flight--;
	if (status < 0) {
		/* A Service with no pod behind it yet fails every lookup of a lone node's quick retries: of a run
		 * of failures of one seed, the 1st, 2nd, 4th, 8th ... is logged. */
		uint32_t n = ++*failures_of(a, l->index);
		if ((n & (n - 1)) == 0)
			ftl_log(&a->set.log, FTL_LOG_WARN, "seeds",
				FTL_MSG("cannot resolve seed %s: %s (%u failed lookups in a row)", l->name,
					uv_strerror(status), n),
				FTL_F_STR("seed", l->name), FTL_F_STR("error", uv_strerror(status)), FTL_F_UINT("failed", n));
		free(l);
		return;
	}
	*failures_of(a, l->index) = 0;
	size_t answers = 0;
	char addrs[32][FTL_ADDR_MAX];
	const char *answer[32];
	for (struct addrinfo *ai = res; ai && answers < 32; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)ai->ai_addr)->sin_port = htons((uint16_t)l->port);
		else if (ai->ai_family == AF_INET6)
			((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons((uint16_t)l->port);
		else
			continue;
		ftl_addr_format(ai->ai_addr, addrs[answers], FTL_ADDR_MAX);
		answer[answers] = addrs[answers];
		answers++;
	}
	uv_freeaddrinfo(res);
	size_t joins = ftl_node_seeds_answered(a->node, ftl_agent_now_us(a), answer, answers);
	ftl_agent_fed(a);
	if (joins)
		ftl_log(&a->set.log, FTL_LOG_DEBUG, "seeds",
			FTL_MSG("%s: %zu answers, joining the %zu not seen alive", l->name, answers, joins),
			FTL_F_STR("seed", l->name), FTL_F_UINT("answers", answers), FTL_F_UINT("joins", joins));
	free(l);
}

static void resolve_all(ftl_agent *a)
{
	char list[sizeof(a->cfg.seeds)];
	snprintf(list, sizeof(list), "%s", a->cfg.seeds);
	char *save = NULL;
	size_t index = 0;
	for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save), index++) {
		seed_lookup *l = calloc(1, sizeof(*l));
		if (!l)
			return;
		l->index = index;
		if (ftl_addr_split(tok, l->name, sizeof(l->name), &l->port) != 0) {
			ftl_log(&a->set.log, FTL_LOG_ERROR, "seeds", FTL_MSG("FTL_SEEDS: %s is not host:port", tok),
				FTL_F_STR("seed", tok));
			free(l);
			continue;
		}
		l->a = a;
		l->req.data = l;
		struct addrinfo hints = {.ai_socktype = SOCK_DGRAM};
		if (uv_getaddrinfo(&a->loop, &l->req, on_resolved, l->name, NULL, &hints) != 0)
			free(l);
		else
			a->seeds.lookups_in_flight++;
	}
}

static void on_reseed(uv_timer_t *t)
{
	ftl_agent *a = t->data;
	if (a->seeds.lookups_in_flight == 0) /* a resolver that hangs gets no pile of lookups (libuv's 4 threads) */
		resolve_all(a);
	int64_t wait_us = ftl_node_seeds_next_wait_us(a->node, (int64_t)a->cfg.reseed_interval_ms * 1000);
	uv_timer_start(&a->seeds.timer, on_reseed, (uint64_t)(wait_us / 1000), 0);
}

void ftl_agent_seeds_start(ftl_agent *a)
{
	uv_timer_init(&a->loop, &a->seeds.timer);
	a->seeds.timer.data = a;
	if (!a->cfg.seeds[0])
		return;
	on_reseed(&a->seeds.timer);
}
