/* The inside of ftl_agent: one state per room, and each room's calls. The loop is a star around the node
 * (docs/concepts/architecture.md, Threads). agent.c opens the rooms and takes the other threads' requests.
 * The rooms feed the node and mark the turn fed (agent_turn.c): gossip datagrams (agent_udp.c), push-pulls
 * and incoming rendezvous frames (agent_tcp.c, agent_rdv.c), proof-of-death connects (agent_check.c), DNS
 * (agent_seeds.c), the control socket's requests (agent_control.c, agent_keys.c). agent_drain.c carries out
 * what the node decided, once per turn, through the rooms that send (agent_udp.c, agent_tcp.c,
 * agent_check.c, agent_peers.c, agent_rdv.c) and those that tell (agent_name.c, agent_notices.c).
 * agent_shared.c and agent_door.c are the loop's and the training thread's sides of what they share.
 * Everything here is touched on the loop thread only, except the shared room (under its lock). */
#ifndef FTL_AGENT_INTERNAL_H
#define FTL_AGENT_INTERNAL_H

#include <pthread.h>
#include <uv.h>

#include "config.h"
#include "control.h"
#include "base/deadline.h"
#include "base/kept_error.h"
#include "base/list.h"
#include "node/node.h"
#include "admission.h"
#include "agent_training.h"
#include "metrics.h"
#include "channel/tcp_frame.h"

#define FTL_TCP_TIMEOUT_MS 5000
#define FTL_PEER_IDLE_MS 30000          /* an outgoing rendezvous connection unused this long is closed */
#define FTL_PEER_STREAM_IDLE_MS 60000   /* ... and an incoming one, later than its sender would */
#define FTL_MAX_HINTS 8
#define FTL_MAX_WITNESSED 32 /* deaths a witness reports in one turn of the loop: at most all it watches */

/* One state per room, each touched by the files named beside it: a reader sees what a file may change, and
 * a room's state changes without a look at the others'. All but the shared room belong to the loop thread. */

/* The node fed and drained (agent_turn.c feeds it, agent_drain.c drains once per turn of the loop). */
typedef struct ftl_agent_drain_room {
	uv_check_t check;                /* after each turn's I/O callbacks: the drain, when fed */
	uv_idle_t keep_polling;          /* active while fed: the turn's poll does not sleep on undrained outputs */
	bool is_fed;                     /* the node took an input since the last drain */
	uv_timer_t timer;                /* the node's next deadline (a tick is an input too) */
	uint64_t events_seen[FTL_EVENT_TYPE_MAX]; /* membership events handed out, by type (metrics) */
} ftl_agent_drain_room;

/* Gossip datagrams (agent_udp.c). */
typedef struct ftl_agent_udp_room {
	uv_udp_t socket;
	uint8_t recv_buf[65536];
} ftl_agent_udp_room;

/* The gossip port's TCP side: push-pull exchanges and incoming rendezvous streams (agent_tcp.c). */
typedef struct ftl_agent_tcp_room {
	uv_tcp_t listener;
	uv_prepare_t turn_counter;       /* counts loop_turns: before each poll for I/O */
	uint64_t loop_turns;             /* how young a stranger's connection is (admission.h; /metrics too) */
	ftl_list conns;                  /* open exchanges */
	uint64_t timeouts;               /* exchanges that timed out (status counter) */
	uint64_t timeouts_logged;        /* how many of them the last WARN line had counted */
	uint64_t timeout_logged_ms;      /* uv_now of that line: at most one per TCP_TIMEOUT_LOG_EVERY_MS */
	size_t buffered;                 /* bytes all open exchanges hold for input (<= FTL_TCP_BUFFERED_MAX) */
	ftl_admit_queue strangers;       /* inbound exchanges that have proved nothing yet, oldest first */
	ftl_admit_limits stranger_limits; /* ... how many of them (fitted to the descriptor limit at start) */
	size_t strangers_buffered;       /* ... and the bytes they hold for input (<= FTL_TCP_UNAUTH_BUFFERED_MAX) */
	bool is_accept_waiting;          /* libuv holds a connection we accept at the next turn */
	uint64_t dropped[FTL_TCP_DROP_MAX]; /* inbound input dropped, by reason (status counter) */
} ftl_agent_tcp_room;

/* Persistent rendezvous connections to peers (agent_peers.c). */
typedef struct ftl_agent_peers_room {
	ftl_list conns;                  /* most recently used first */
	uint64_t frames_dropped;         /* rendezvous frames not sent (a peer's queue was full) */
	uint64_t frames_sent;            /* rendezvous frames written to a peer connection */
	uint64_t dials;                  /* connections dialled (far fewer than frames) */
} ftl_agent_peers_room;

/* DNS lookups of the seeds (agent_seeds.c). */
typedef struct ftl_agent_seeds_room {
	uv_timer_t timer;                /* the next lookup */
	uint32_t lookups_failed[8];      /* each seed's failed lookups in a row (logged 1, 2, 4, ...) */
	uint32_t lookups_in_flight;      /* asked and not answered; none more are asked meanwhile */
} ftl_agent_seeds_room;

/* The control socket (agent_control.c answers requests, agent_notices.c what is said between them). */
typedef struct ftl_agent_control_room {
	char path[512];
	ftl_control *server;             /* NULL before the start and once closing */
	ftl_control_client *leave_clients[8]; /* `ftlctl leave` requests waiting for their reply */
	int n_leave_clients;
} ftl_agent_control_room;

/* GET /metrics (metrics_http.c). */
typedef struct ftl_agent_metrics_room {
	struct ftl_metrics_http *http;   /* the listener, or NULL (no FTL_METRICS_ADDR) */
	uint64_t http_dropped[FTL_HTTP_DROP_MAX]; /* its requests closed unanswered (counter) */
} ftl_agent_metrics_room;

/* The training layer above, attached before the start (agent_training.h; agent_door.c, agent_rdv.c): the
 * agent never looks inside it, it calls ops. */
typedef struct ftl_agent_training_room {
	bool is_on;                      /* ftl_set_training was called: a rendezvous, views for the training thread */
	ftl_rdv_member self;             /* what the metadata says of us as a worker: the comm listener's address
					  * (data_addr, "": none) and our replica (node/node_meta.h) */
	struct ftl_training *layer;      /* owned by train/, freed through ops->free (NULL: none) */
	const ftl_agent_training_ops *ops;
	uint64_t bench_refused_epoch;    /* loop thread: the view epoch in which a bench was last refused */
} ftl_agent_training_room;

/* What the loop thread shares with the others, all under lock: their requests (read by on_wake, agent.c,
 * after a wake-up), and what the loop publishes (agent_shared.c, agent_rdv.c) for them to read (agent.c's
 * public calls, the door). */
typedef struct ftl_agent_shared_room {
	pthread_mutex_t lock;            /* guards what follows */
	pthread_cond_t changed;          /* broadcast on every change the other threads wait for */
	bool want_leave;
	char hints[FTL_MAX_HINTS][FTL_NAME_MAX]; /* peers the comm saw reset: probe them now */
	int n_hints;
	struct {
		char name[FTL_NAME_MAX];
		uint64_t generation;
	} witnessed[FTL_MAX_WITNESSED];  /* lives the witness saw end: declare them dead */
	int n_witnessed;
	bool want_meta;
	uint16_t meta_len;
	uint8_t meta[FTL_META_MAX];
	bool want_stop;
	bool has_left;
	bool is_stopped;
	ftl_kept_error stop_error;       /* why the agent stopped by itself (ftl_agent_fail); FTL_OK: it did not */
	ftl_agent_counts counts;
	ftl_agent_views views;           /* the rendezvous's decisions for the training thread (agent_training.h) */
	struct {
		bool is_asked;           /* a caller of ftl_agent_status waits for the loop (one at a time) */
		char *text;              /* ... and its answer, once the loop built it (owned until taken) */
	} status;                        /* agent_status.c */
} ftl_agent_shared_room;

struct ftl_agent {
	ftl_agent_config cfg;
	ftl_agent_settings set;
	ftl_keyring *keyring;
	ftl_node *node;                  /* the member's decision logic (node/node.h); every input goes through it */
	uv_loop_t loop;
	uv_thread_t thread;
	uv_async_t wake;                 /* another thread asks the loop to look at the shared requests */
	bool is_started;
	bool is_closing;                 /* loop thread: close_all ran; nothing may open a handle or send */
	ftl_agent_event_cb event_cb;     /* the embedder's, called by the drain */
	void *event_ctx;

	ftl_agent_drain_room drain;
	ftl_agent_udp_room udp;
	ftl_agent_tcp_room tcp;
	ftl_agent_peers_room peers;
	ftl_list checks;                 /* proof-of-death connects in flight (agent_check.c) */
	ftl_agent_seeds_room seeds;
	ftl_agent_control_room control;
	ftl_agent_metrics_room metrics;
	struct ftl_witness *witness;     /* local members' life locks (witness.h), or NULL where none can be */
	ftl_agent_training_room training;
	ftl_agent_shared_room shared;
};

/* agent_turn.c: after every input a room hands the node (stamped with ftl_agent_now_us, agent_training.h):
 * the node is drained at the end of this turn of the loop. Rooms only feed; none calls the drain. */
void ftl_agent_fed(ftl_agent *a);

/* agent_drain.c: the one place the node's outputs are carried out (its datagrams, checks, push-pulls and
 * frames sent, its events and views handed out, its timer armed), once per turn in which it was fed. */
void ftl_agent_drain_start(ftl_agent *a);
/* Drains now if anything was fed (the stop's last drain, before the handles close). */
void ftl_agent_drain_pending(ftl_agent *a);
/* The members changed: the counts (ftl_agent_get_counts), waking whoever waits on them, and the witness's
 * watch list. */
void ftl_agent_members_changed(ftl_agent *a);

/* agent_udp.c: the gossip socket; datagrams in feed the node, and the drain sends the node's out. */
ftl_err ftl_agent_udp_bind(ftl_agent *a);
void ftl_agent_udp_send(ftl_agent *a, const ftl_swim_output *out);

/* agent_shared.c: the loop thread's writes to what it shares with the other threads (under the lock). The
 * member counts (ftl_agent_get_counts) from the node, and our leave gone out (ftl_agent_has_left): each
 * wakes whoever waits. */
void ftl_agent_publish_counts(ftl_agent *a);
void ftl_agent_publish_left(ftl_agent *a);
/* The agent cannot go on (the reason in the diag): keeps it for ftl_agent_error and stops the loop, as
 * ftl_agent_stop would (the training thread sees the agent gone). */
void ftl_agent_fail(ftl_agent *a);

/* agent_name.c: a name event (FTL_EVENT_NAME_REFUSED, _TAKEN): its sentence, and for ours the stop. */
void ftl_agent_name_event(ftl_agent *a, const ftl_swim_event *ev);

/* agent_tcp.c */
ftl_err ftl_agent_tcp_listen(ftl_agent *a);
void ftl_agent_tcp_push_pull(ftl_agent *a, const char *addr, bool is_join);
/* Closes every open exchange through its own path (before the loop's other handles). */
void ftl_agent_tcp_close_all(ftl_agent *a);

/* agent_peers.c: the peer channel's persistent connections for rendezvous frames. Sends plain[0..len)
 * sealed to member name (over loopback to ourselves); forget closes its connection (it died, left or
 * restarted). */
void ftl_agent_peer_send(ftl_agent *a, const char *name, const uint8_t *plain, size_t len);
void ftl_agent_peer_forget(ftl_agent *a, const char *name);
void ftl_agent_peers_close_all(ftl_agent *a);

/* agent_check.c: proof of death, the connect the core asked for (FTL_OUTPUT_CHECK) */
void ftl_agent_check(ftl_agent *a, const ftl_swim_output *out);
void ftl_agent_check_close_all(ftl_agent *a);

/* agent_rdv.c: the rendezvous side of the node, on the loop thread */
/* The node's abort rule fired for a membership event: abort the communicator in use, if any. */
void ftl_agent_rdv_member_gone(ftl_agent *a, const char *why);
/* The node took a new view: hand it to the training thread and abort the old communicator, in one step. */
void ftl_agent_rdv_adopt_view(ftl_agent *a, const char *why);
/* At every drain: the phase, coordinator and missing members for the training thread. */
void ftl_agent_rdv_publish(ftl_agent *a);
void ftl_agent_rdv_send(ftl_agent *a, const ftl_node_frame *f);
void ftl_agent_rdv_receive(ftl_agent *a, const uint8_t *plain, size_t len); /* opened by the channel */
json_t *ftl_agent_rdv_status(ftl_agent *a);
/* The training thread's requests (want_rebuild_seq), on the loop thread. */
void ftl_agent_rdv_wake(ftl_agent *a);
/* `ftlctl quorum reset`: FTL_OK, or FTL_ERR_INVALID with the reason in the diag (not waiting for quorum). */
ftl_err ftl_agent_rdv_waive_quorum(ftl_agent *a);
/* `ftlctl scale --max N`: the job's maximum from the next view on (ftl_node_request_max). */
ftl_err ftl_agent_rdv_request_max(ftl_agent *a, uint32_t max_workers);
int ftl_agent_rank_of(ftl_agent *a, const char *name); /* in the current view, -1 if not */

/* agent_seeds.c */
void ftl_agent_seeds_start(ftl_agent *a);

/* agent_control.c: the control socket's requests; the status, as `ftlctl status --json` shows it. */
json_t *ftl_agent_control_handle(void *ctx, ftl_control_client *client, const json_t *req, bool *is_stream);
json_t *ftl_agent_status_json(ftl_agent *a);

/* agent_status.c, loop thread (on_wake): answers a waiting ftl_agent_status, if one waits. */
void ftl_agent_status_answer(ftl_agent *a);

/* agent_notices.c: what control clients hear between their requests. A membership event to `ftlctl events`;
 * an event of the agent's own (not membership's), which takes fields; a leave request's reply held until
 * ftl_agent_control_left answers every held one (false: too many wait). */
void ftl_agent_control_event(ftl_agent *a, const ftl_swim_event *ev);
void ftl_agent_control_notice(ftl_agent *a, const char *event, json_t *fields);
bool ftl_agent_control_hold_leave(ftl_agent *a, ftl_control_client *client);
void ftl_agent_control_left(ftl_agent *a);

/* agent_keys.c: {"cmd":"keys",...} */
json_t *ftl_agent_keys_json(ftl_agent *a, const json_t *req);

#endif
