/* The ftl agent: gossip membership on real sockets, embedded in every training worker (libftl) or run
 * alone as ftl-agent.
 *
 * An agent runs a libuv loop on its own thread: SWIM + Lifeguard over UDP, push-pull full-state
 * exchange over TCP, every datagram and frame sealed with the cluster key, seeds re-resolved through DNS
 * so partitions heal, and a control socket for ftlctl. Calls below may come from any thread; event
 * callbacks run on the agent's thread and must not block. Its records go where ftl/log.h says. */
#ifndef FTL_AGENT_H
#define FTL_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl/error.h"
#include "ftl/export.h"
#include "ftl/log.h"
#include "ftl/settings.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ftl_agent ftl_agent;

/* Settings; each has an environment variable (in brackets), read by ftl_agent_config_from_env. */
typedef struct ftl_agent_config {
	size_t struct_size;       /* this header's sizeof, set by ftl_agent_config_default(): the
				     library reads only this many bytes, so the struct can grow at its
				     end without breaking programs built against an older header */
	char name[64];            /* [FTL_NAME] unique in the cluster; default: the host name */
	char bind[128];           /* [FTL_BIND] ip:port for UDP and TCP; default 0.0.0.0:7946 */
	char advertise[128];      /* [FTL_ADVERTISE] ip:port others reach us at; default: bind, which
				     then must not be a wildcard address */
	char seeds[1024];         /* [FTL_SEEDS] comma-separated host:port, re-resolved through DNS */
	char cluster[64];         /* [FTL_CLUSTER] default "ftl"; clusters with other names never mix */
	char gossip_key[64];      /* [FTL_GOSSIP_KEY] base64 of 32 bytes (ftlctl keygen makes one) */
	char gossip_key_file[256];/* [FTL_GOSSIP_KEY_FILE] a file holding that base64 */
	bool is_insecure;         /* [FTL_INSECURE=1] plaintext gossip: for trying things out only */
	char profile[16];         /* [FTL_PROFILE] train (default), lan or local */
	int64_t probe_interval_ms;     /* [FTL_PROBE_INTERVAL_MS] 0 = the profile's */
	int64_t probe_timeout_ms;      /* [FTL_PROBE_TIMEOUT_MS] */
	int64_t gossip_interval_ms;    /* [FTL_GOSSIP_INTERVAL_MS] */
	int64_t push_pull_interval_ms; /* [FTL_PUSH_PULL_INTERVAL_MS] */
	int64_t reap_after_ms;         /* [FTL_REAP_AFTER_MS] */
	int suspicion_mult;            /* [FTL_SUSPICION_MULT] */
	int retransmit_mult;           /* [FTL_RETRANSMIT_MULT] */
	int64_t ready_interval_ms;     /* [FTL_READY_INTERVAL_MS] rendezvous: resend ready while not agreed */
	int64_t reseed_interval_ms;    /* [FTL_RESEED_INTERVAL_MS] DNS re-resolution; default 5000 */
	char run_dir[256];        /* [FTL_RUN_DIR] where the control socket lives */
	char log_level[8];        /* [FTL_LOG_LEVEL] debug, info (default), warn, error */
	uint64_t generation;      /* 0 = microseconds since the epoch at start: larger on every restart */
	char meta[256];           /* [FTL_META] node metadata gossiped with this member (text, up to 255 bytes) */
	char metrics_addr[128];   /* [FTL_METRICS_ADDR] numeric ip:port serving GET /metrics (Prometheus); "" = off */
	ftl_log_cb log_cb;        /* where this agent's records go, the warnings about its settings
				     included; NULL (default): one line each on stderr */
	void *log_user;           /* handed to log_cb */
	int64_t max_members;      /* [FTL_MAX_MEMBERS] most members (this one included, dead ones until reaped)
				     this agent keeps; a new name beyond it is refused and counted
				     (dropped.member_table_full). 0 = the default, 16384 */
	bool is_witness_off;      /* [FTL_WITNESS=0] do not hold a life lock nor watch this host's members
				     (agent/witness.h); they are then seen to die only when their sockets close */
} ftl_agent_config;

typedef enum ftl_agent_event_type {
	FTL_AGENT_JOIN, FTL_AGENT_UPDATE, FTL_AGENT_SUSPECT, FTL_AGENT_ALIVE,
	FTL_AGENT_DEAD, FTL_AGENT_LEFT, FTL_AGENT_REAP,
	FTL_AGENT_NAME_REFUSED,   /* a second process at addr claimed the name of the live member at holder_addr:
				     refused, the live member keeps it */
	FTL_AGENT_NAME_TAKEN,     /* this agent's name is held by the live member at holder_addr (from refused
				     it): the agent stops (ftl_agent_error) */
	FTL_AGENT_EVENT_TYPE_MAX  /* not an event: the count (new types come before it) */
} ftl_agent_event_type;

typedef struct ftl_agent_event {
	ftl_agent_event_type type;
	const char *type_name;    /* "join", "dead", ... */
	const char *name;
	const char *addr;
	uint64_t generation;
	uint64_t incarnation;
	const char *reason;       /* dead: "refused by its own address", "witnessed on its host", "suspicion timed
				     out" or "gossip"; else "" */
	const char *from;         /* dead: who declared it (this node, or the rumor's origin); name events: who
				     refused; else "" */
	const char *holder_addr;  /* name events: where the live member that holds the name is; else "" */
} ftl_agent_event;

typedef void (*ftl_agent_event_cb)(void *ctx, const ftl_agent_event *ev);

/* Defaults (see above), with struct_size: start every ftl_agent_config from it. A struct whose struct_size
 * this library does not know is refused with FTL_ERR_INVALID by every call that takes it. */
FTL_API void ftl_agent_config_default_sized(ftl_agent_config *cfg, size_t size);
#define ftl_agent_config_default(cfg) ftl_agent_config_default_sized((cfg), sizeof(*(cfg)))
/* Overlays the FTL_* environment. FTL_ERR_INVALID with ftl_error_message() naming the variable and what is
 * expected; also for an FTL_* variable that neither ftl nor the program (ftl_env_add_known_name, in
 * ftl/settings.h) knows: a misspelled setting is refused, naming the closest known name. */
FTL_API ftl_err ftl_agent_config_from_env(ftl_agent_config *cfg);
/* Overlays the settings that s holds (ftl/settings.h; the same checks and sentences as the environment's). */
FTL_API ftl_err ftl_agent_config_from_settings(ftl_agent_config *cfg, const ftl_settings *s);

/* Checks the settings and prepares the agent; nothing is bound yet. NULL with ftl_error_message() saying
 * which setting is wrong and what is expected. */
FTL_API ftl_agent *ftl_agent_new(const ftl_agent_config *cfg);
/* Binds, starts the loop thread, the control socket, and joins the seeds. An error with
 * ftl_error_message() saying what could not start (a port in use, a second agent with this name). */
FTL_API ftl_err ftl_agent_start(ftl_agent *a);
/* Called on the agent's thread for every membership change. Set before ftl_agent_start. */
FTL_API void ftl_agent_on_event(ftl_agent *a, ftl_agent_event_cb cb, void *ctx);
/* Graceful leave: gossips `left` and waits until it went out or timeout_ms passed. 0 if it went out.
 * Called between steps from the thread that runs ftl_execute, on the job's rank 0 with checkpoints on,
 * it first writes a checkpoint of the steps since the last one and waits until it is durable (timeout_ms
 * does not bound that write). FTL_ERR_TIMEOUT when it did not go out in time, FTL_ERR_INVALID before
 * ftl_agent_start. */
FTL_API ftl_err ftl_agent_leave(ftl_agent *a, int timeout_ms);
/* FTL_OK while the agent runs, and after a stop or leave that was asked for; once the agent stopped by
 * itself, why, with ftl_error_message() saying it: FTL_ERR_REFUSED when a live member at another address holds
 * its name (the message names the name, both addresses and what to do). Any thread. */
FTL_API ftl_err ftl_agent_error(ftl_agent *a);
/* True once a leave (from ftl_agent_leave or `ftlctl leave`) has gone out. */
FTL_API bool ftl_agent_has_left(ftl_agent *a);
/* Stops the loop and closes every socket (without a leave: others will detect it as dead). */
FTL_API void ftl_agent_stop(ftl_agent *a);
FTL_API void ftl_agent_delete(ftl_agent *a);

/* Replaces this node's metadata (up to 256 bytes) and gossips it; other members see an update event.
 * FTL_ERR_INVALID if too long. */
FTL_API ftl_err ftl_agent_set_meta(ftl_agent *a, const void *meta, size_t len);

/* Counts of members by state as this agent sees them (self included in alive). */
/* Set struct_size before the call (as ftl_job_status's, ftl/execute.h). */
typedef struct ftl_agent_counts {
	size_t struct_size;
	uint32_t alive, suspect, dead, left;
} ftl_agent_counts;
FTL_API ftl_err ftl_agent_get_counts(ftl_agent *a, ftl_agent_counts *out);
/* The path of the control socket. */
FTL_API const char *ftl_agent_control_path(const ftl_agent *a);
/* What `ftlctl status --json` shows (the cluster, this member, the view and its pace, the members, the
 * counters), as JSON text built by the agent's loop at its next turn; from any thread but that loop's own
 * (an event callback). Writes at most cap bytes, NUL-terminated, into buf and the text's length into *len.
 * FTL_ERR_INVALID when buf is too small (nothing written; *len says what is needed: call again with more),
 * before ftl_agent_start, or from the loop thread; FTL_ERR_TIMEOUT when the loop did not answer within
 * timeout_ms; FTL_ERR_ABORTED once the agent has stopped. Since 0.4.5. */
FTL_API ftl_err ftl_agent_status(ftl_agent *a, char *buf, size_t cap, size_t *len, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
