/* Proof of death, the I/O half: the core asks (FTL_OUTPUT_CHECK) for a TCP connect to a member's
 * advertised gossip address, where every agent listens for push-pull; we dial it without blocking,
 * give up after the core's timeout, and hand back how it went (ftl_swim_check_done). Only a refusal
 * (ECONNREFUSED: the kernel at that address has no listener on the port) carries meaning; the core
 * decides what it proves (membership/swim_proof.c). An accepted connection is closed at once without a
 * byte: the other side's push-pull server sees an empty exchange and drops it. */
#include "agent_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "agent_conn.h"
#include "agent_fork.h"
#include "base/log.h"

typedef struct check {
	ftl_agent *a;
	ftl_agent_conn conn;    /* on a->checks while in flight, closed first when the agent stops */
	uv_connect_t connect;
	char name[FTL_NAME_MAX];
	char addr[FTL_ADDR_MAX];
	uint64_t generation;
	int64_t started_us;
} check;

static void check_free(ftl_agent_conn *conn) { free(ftl_owner_of(conn, check, conn)); }

void ftl_agent_check_close_all(ftl_agent *a) { ftl_agent_conn_close_all(&a->checks); }

static void finish(check *c, ftl_swim_check_result result, int status)
{
	if (c->conn.is_closing)
		return;
	ftl_agent *a = c->a;
	ftl_log(&a->set.log, result == FTL_CHECK_REFUSED ? FTL_LOG_INFO : FTL_LOG_DEBUG, "membership",
		FTL_MSG("checked the gossip port%s%s", status < 0 ? ": " : "", status < 0 ? uv_strerror(status) : ""),
		FTL_F_STR("member", c->name), FTL_F_STR("addr", c->addr),
		FTL_F_STR("result", ftl_swim_check_result_strs[result]),
		FTL_F_DOUBLE("took_ms", (double)(ftl_agent_now_us(a) - c->started_us) / 1000.0));
	ftl_agent_conn_close(&c->conn);
	ftl_node_check_done(a->node, ftl_agent_now_us(a), c->name, c->generation, c->addr, result);
	ftl_agent_fed(a);
}

static void on_connect(uv_connect_t *req, int status)
{
	check *c = req->data;
	ftl_swim_check_result result = status == 0		    ? FTL_CHECK_ACCEPTED
				       : status == UV_ECONNREFUSED ? FTL_CHECK_REFUSED
								   : FTL_CHECK_NO_ANSWER;
	finish(c, result, status);
}

static void on_timeout(uv_timer_t *t)
{
	finish(t->data, FTL_CHECK_NO_ANSWER, UV_ETIMEDOUT);
}

void ftl_agent_check(ftl_agent *a, const ftl_swim_output *out)
{
	struct sockaddr_storage to;
	if (ftl_addr_parse_numeric(out->to_addr, &to) != 0)
		return; /* not ours to prove: the core forgets the check when it expires */
	check *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->a = a;
	snprintf(c->name, sizeof(c->name), "%s", out->to_name);
	snprintf(c->addr, sizeof(c->addr), "%s", out->to_addr);
	c->generation = out->generation;
	c->started_us = ftl_agent_now_us(a);
	ftl_agent_conn_init(&c->conn, &a->loop, &a->checks, c, check_free);
	c->connect.data = c;
	uint64_t timeout_ms = (uint64_t)((out->timeout_us + 999) / 1000);
	uv_timer_start(&c->conn.timer, on_timeout, timeout_ms ? timeout_ms : 1, 0);
	/* Failing at once is never a refusal (that needs the peer's answer); the core lets the check expire. */
	if (uv_tcp_connect(&c->connect, &c->conn.tcp, (const struct sockaddr *)&to, on_connect) != 0)
		ftl_agent_conn_close(&c->conn);
	else
		ftl_agent_fork_track((uv_handle_t *)&c->conn.tcp);
}
