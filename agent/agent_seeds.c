/* Seeds: host:port names re-resolved through DNS every reseed interval (a Kubernetes headless Service
 * answers with every pod). Every time, this node push-pulls with each resolved address that is not a
 * member it sees alive: that is how a new node joins, how the two sides of a healed partition find each
 * other again, and how workers that started before their seed was up merge with it later (otherwise
 * each side would form a cluster of its own and train alone). A healthy cluster sends nothing. */
#include "agent_internal.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "log.h"

typedef struct seed_lookup {
	uv_getaddrinfo_t req;
	ftl_agent *a;
	int port;
	char name[128];
} seed_lookup;

static bool is_known_alive(ftl_agent *a, const char *addr)
{
	const ftl_members *t = ftl_swim_members(a->swim);
	for (uint32_t i = 0; i < t->len; i++)
		if (strcmp(t->arr[i].addr, addr) == 0 && t->arr[i].state == FTL_MEMBER_ALIVE)
			return true;
	return false;
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	seed_lookup *l = req->data;
	ftl_agent *a = l->a;
	if (status < 0) {
		ftl_log(FTL_LOG_WARN, "seeds", NULL, "cannot resolve seed %s: %s", l->name, uv_strerror(status));
		free(l);
		return;
	}
	int answers = 0, joins = 0;
	char addrs[32][FTL_ADDR_MAX];
	for (struct addrinfo *ai = res; ai && answers < 32; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)ai->ai_addr)->sin_port = htons((uint16_t)l->port);
		else if (ai->ai_family == AF_INET6)
			((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons((uint16_t)l->port);
		else
			continue;
		ftl_addr_format(ai->ai_addr, addrs[answers], FTL_ADDR_MAX);
		bool is_dup = false;
		for (int k = 0; k < answers; k++)
			is_dup |= strcmp(addrs[k], addrs[answers]) == 0;
		if (!is_dup)
			answers++;
	}
	uv_freeaddrinfo(res);
	for (int k = 0; k < answers; k++) {
		if (strcmp(addrs[k], a->set.advertise) == 0 || is_known_alive(a, addrs[k]))
			continue;
		const char *seed = addrs[k];
		ftl_swim_join(a->swim, &seed, 1);
		joins++;
	}
	if (joins) {
		ftl_log(FTL_LOG_DEBUG, "seeds", NULL, "%s: %d answers, joining the %d not seen alive", l->name, answers,
			joins);
		ftl_agent_flush(a);
	}
	free(l);
}

static void resolve_all(ftl_agent *a)
{
	char list[sizeof(a->cfg.seeds)];
	snprintf(list, sizeof(list), "%s", a->cfg.seeds);
	char *save = NULL;
	for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		seed_lookup *l = calloc(1, sizeof(*l));
		if (!l)
			return;
		if (ftl_addr_split(tok, l->name, sizeof(l->name), &l->port) != 0) {
			ftl_log(FTL_LOG_ERROR, "seeds", NULL, "FTL_SEEDS: %s is not host:port", tok);
			free(l);
			continue;
		}
		l->a = a;
		l->req.data = l;
		struct addrinfo hints = {.ai_socktype = SOCK_DGRAM};
		if (uv_getaddrinfo(&a->loop, &l->req, on_resolved, l->name, NULL, &hints) != 0)
			free(l);
	}
}

static void on_reseed(uv_timer_t *t) { resolve_all(t->data); }

void ftl_agent_seeds_start(ftl_agent *a)
{
	uv_timer_init(&a->loop, &a->reseed_timer);
	a->reseed_timer.data = a;
	if (!a->cfg.seeds[0])
		return;
	resolve_all(a);
	uv_timer_start(&a->reseed_timer, on_reseed, (uint64_t)a->cfg.reseed_interval_ms,
		       (uint64_t)a->cfg.reseed_interval_ms);
}
