/* Gossip datagrams: the agent's UDP socket. Each datagram in is opened by the peer channel's seal
 * (channel/seal.h) and handed to the node; one that does not open is counted (FTL_DROP_KEYRING). Each
 * datagram the node asks for (FTL_OUTPUT_PACKET) is sealed and sent from here by the drain. */
#include "agent_internal.h"

#include <stdlib.h>

#include "agent_fork.h"
#include "base/addr.h"
#include "base/log.h"
#include "channel/seal.h"

/* ---- receiving ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	ftl_agent *a = h->data;
	*buf = uv_buf_init((char *)a->udp.recv_buf, sizeof(a->udp.recv_buf));
}

static void on_udp_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from, unsigned flags)
{
	ftl_agent *a = h->data;
	if (n <= 0 || !from)
		return;
	uint8_t plain[FTL_UDP_PACKET_MAX];
	size_t plain_len;
	if (ftl_open_datagram(a->keyring, (const uint8_t *)buf->base, (size_t)n, plain, &plain_len) != 0) {
		ftl_node_count_drop(a->node, FTL_DROP_KEYRING);
		return;
	}
	ftl_node_receive_datagram(a->node, ftl_agent_now_us(a), plain, plain_len);
	ftl_agent_fed(a);
}

ftl_err ftl_agent_udp_bind(ftl_agent *a)
{
	uv_udp_init(&a->loop, &a->udp.socket);
	a->udp.socket.data = a;
	int rc = uv_udp_bind(&a->udp.socket, (struct sockaddr *)&a->set.bind, 0);
	if (rc == 0) {
		/* Room for bursts of gossip while the loop is busy. */
		int size = 4 << 20;
		uv_recv_buffer_size((uv_handle_t *)&a->udp.socket, &size);
		rc = uv_udp_recv_start(&a->udp.socket, on_alloc, on_udp_recv);
	}
	if (rc != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "FTL_BIND=%s: cannot bind UDP: %s", a->cfg.bind, uv_strerror(rc));
	ftl_agent_fork_track((uv_handle_t *)&a->udp.socket);
	return FTL_OK;
}

/* ---- sending ---- */

typedef struct udp_send {
	uv_udp_send_t req;
	ftl_agent *a;
	size_t len;
	uint8_t data[];
} udp_send;

static void on_udp_sent(uv_udp_send_t *req, int status)
{
	udp_send *s = req->data;
	if (status < 0)
		ftl_log(&s->a->set.log, FTL_LOG_DEBUG, "transport", FTL_MSG("udp send failed: %s", uv_strerror(status)),
			FTL_F_STR("error", uv_strerror(status)));
	free(s);
}

void ftl_agent_udp_send(ftl_agent *a, const ftl_swim_output *out)
{
	struct sockaddr_storage to;
	if (ftl_addr_parse_numeric(out->to_addr, &to) != 0) {
		ftl_log(&a->set.log, FTL_LOG_WARN, "transport", FTL_MSG("cannot send to %s: not a numeric address", out->to_addr),
			FTL_F_STR("to", out->to_addr));
		return;
	}
	udp_send *s = malloc(sizeof(*s) + FTL_UDP_PACKET_MAX);
	if (!s)
		return;
	s->req.data = s;
	s->a = a;
	if (ftl_seal_datagram(a->keyring, out->data, out->len, s->data, &s->len) != 0) {
		free(s);
		return;
	}
	uv_buf_t buf = uv_buf_init((char *)s->data, (unsigned)s->len);
	int rc = uv_udp_send(&s->req, &a->udp.socket, &buf, 1, (struct sockaddr *)&to, on_udp_sent);
	if (rc < 0) {
		ftl_log(&a->set.log, FTL_LOG_DEBUG, "transport", FTL_MSG("udp send to %s: %s", out->to_addr, uv_strerror(rc)),
			FTL_F_STR("to", out->to_addr), FTL_F_STR("error", uv_strerror(rc)));
		free(s);
	}
}
