/* The inside of ftl_agent, shared by agent.c (lifecycle, loop thread, UDP, timer), agent_tcp.c
 * (push-pull over TCP), agent_seeds.c (DNS seeds and the rejoin rule) and agent_control.c (the control
 * socket's requests). Everything here is touched on the loop thread only, except the fields under
 * `lock`. */
#ifndef FTL_AGENT_INTERNAL_H
#define FTL_AGENT_INTERNAL_H

#include <pthread.h>
#include <uv.h>

#include "config.h"
#include "control.h"
#include "swim.h"

#define FTL_TCP_FRAME_MAX (64u << 20) /* a push-pull frame larger than this is refused */
#define FTL_TCP_TIMEOUT_MS 5000

struct ftl_agent {
	ftl_agent_config cfg;
	ftl_agent_settings set;
	ftl_keyring *keyring;
	ftl_swim *swim;
	char control_path[512];

	uv_loop_t loop;
	uv_thread_t thread;
	uv_udp_t udp;
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_timer_t reseed_timer;
	uv_async_t wake;          /* another thread asks the loop to look at the requests below */
	ftl_control *control;
	ftl_control_client *leave_client; /* a `ftlctl leave` waiting for its reply */
	bool is_started;
	uint8_t recv_buf[65536];

	ftl_agent_event_cb event_cb;
	void *event_ctx;

	pthread_mutex_t lock;     /* guards what follows */
	pthread_cond_t changed;
	bool want_leave;
	bool want_meta;
	uint16_t meta_len;
	uint8_t meta[FTL_META_MAX];
	bool want_stop;
	bool has_left;
	bool is_stopped;
	ftl_agent_counts counts;
};

int64_t ftl_agent_now_us(ftl_agent *a);
/* After any call into the core: send its outputs, hand out its events, re-arm the timer. */
void ftl_agent_flush(ftl_agent *a);

/* agent_tcp.c */
int ftl_agent_tcp_listen(ftl_agent *a, char *err, size_t len);
void ftl_agent_tcp_push_pull(ftl_agent *a, const char *addr, bool is_join);

/* agent_seeds.c */
void ftl_agent_seeds_start(ftl_agent *a);

/* agent_control.c */
json_t *ftl_agent_control_handle(void *ctx, ftl_control_client *client, const json_t *req, bool *is_stream);
void ftl_agent_control_event(ftl_agent *a, const ftl_swim_event *ev);
void ftl_agent_control_left(ftl_agent *a);

#endif
