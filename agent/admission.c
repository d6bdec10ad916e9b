/* The oldest stranger goes (admission.h). */
#include "admission.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h>

static void source_of(const struct sockaddr *sa, uint8_t out[16])
{
	memset(out, 0, 16);
	if (sa && sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa && sa->sa_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

ftl_admit_limits ftl_admit_limits_fitted(size_t total, size_t per_source, size_t backlog, size_t share)
{
	ftl_admit_limits lim = {total, per_source, total + backlog};
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return lim;
	size_t fds = (size_t)rl.rlim_cur / share;
	lim.hard = min_size(lim.hard, fds > 2 ? fds : 2);
	lim.total = min_size(lim.total, lim.hard - min_size(backlog, lim.hard / 2)); /* room for the young */
	lim.per_source = min_size(lim.per_source, lim.total);
	return lim;
}

void ftl_admit_push(ftl_admit_queue *q, ftl_admit_entry *e, const struct sockaddr *peer, uint64_t turn)
{
	source_of(peer, e->source);
	e->turn = turn;
	ftl_list_push_back(&q->entries, &e->link);
	e->is_queued = true;
	q->len++;
}

void ftl_admit_remove(ftl_admit_queue *q, ftl_admit_entry *e)
{
	if (!e->is_queued)
		return;
	ftl_list_unlink(&q->entries, &e->link);
	e->is_queued = false;
	q->len--;
}

/* Queued two turns ago or earlier: it has been read at least once if it sent anything. */
static bool may_go(const ftl_admit_entry *e, uint64_t turn) { return e->turn + 2 <= turn; }

bool ftl_admit_must_wait(const ftl_admit_queue *q, const ftl_admit_limits *lim, uint64_t turn)
{
	/* queued first: if it is too young, so are all */
	return q->len >= lim->hard && !may_go(ftl_admit_oldest(q), turn);
}

ftl_admit_entry *ftl_admit_victim(const ftl_admit_queue *q, const struct sockaddr *newcomer_peer,
				  const ftl_admit_limits *lim, uint64_t turn)
{
	if (lim->per_source > 0 && newcomer_peer) {
		uint8_t source[16];
		source_of(newcomer_peer, source);
		ftl_admit_entry *oldest_here = NULL;
		size_t here = 0;
		for (ftl_admit_entry *e = ftl_admit_oldest(q); e; e = ftl_admit_newer(e)) {
			if (memcmp(e->source, source, sizeof(source)) != 0)
				continue;
			if (!oldest_here)
				oldest_here = e;
			here++;
		}
		if (here >= lim->per_source && may_go(oldest_here, turn))
			return oldest_here;
	}
	ftl_admit_entry *oldest = ftl_admit_oldest(q);
	return q->len >= lim->total && may_go(oldest, turn) ? oldest : NULL;
}
