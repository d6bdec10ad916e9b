/* ftlctl: the command-line client of an agent's control socket. It parses the command line, picks the
 * socket (socket_choice.c), sends one request and prints the reply, for people (ctl_render.c) or, with
 * --json, for machines. The requests and replies are written down in PROTOCOL.md; ftlctl depends on
 * that protocol only, never on the agent's code. Exit statuses are in ctl_exit.h. */
#include "ctl_call.h"
#include "ctl_conn.h"
#include "ctl_exit.h"
#include "follow_replicas.h"
#include "ctl_render.h"
#include "keys_reach.h"
#include "member_filter.h"
#include "readiness.h"
#include "socket_choice.h"
#include "top.h"
#include "base/diag.h"

#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_BYTES 32

static const char usage_text[] =
	"usage: ftlctl [--socket PATH | --name NAME] [--run-dir DIR] COMMAND [ARGS]\n"
	"\n"
	"Talks to a running ftl agent through its control socket.\n"
	"\n"
	"commands:\n"
	"  status [--json]              cluster, view, member counts, then one row per member\n"
	"  members [--status S[,S...]] [--name SUBSTR] [--json]\n"
	"                               member rows, only those with a status in S (alive, suspect,\n"
	"                               dead, left) and a name containing SUBSTR\n"
	"  leave                        leave the cluster gracefully (waits up to 30 s for the gossip)\n"
	"  ready [--spares]             exit 0 if this worker holds a rank in a committed view with\n"
	"                               quorum, 1 if not; prints why (a readiness probe); --spares: a\n"
	"                               hot spare of such a view is ready too (for a PodDisruptionBudget)\n"
	"  events --follow [--json]     print membership events as they happen, until interrupted\n"
	"  top [--once]                 a live view, redrawn every second: the view, steps and their rate,\n"
	"                               the last recovery time, the members; --once prints one frame\n"
	"  keygen                       print a new random cluster key (32 bytes, base64); no agent needed\n"
	"  keys list [--json]           the agent's keys, primary first, each with how many live members hold\n"
	"                               it and seal with it (N/M, from gossiped key fingerprints)\n"
	"  keys install KEY [--wait S]  add KEY on every member (the agent spreads it by gossip)\n"
	"  keys use KEY [--wait S]      make KEY the primary (encrypting) key on every member; refused unless\n"
	"                               every live member holds it (`keys list` shows M/M)\n"
	"  keys remove KEY [--wait S]   remove KEY from every member; refused while a member seals with it;\n"
	"                               with --wait S, install, use and remove return once `keys list` shows\n"
	"                               the step on every live member (exit 1 after S seconds if it does not)\n"
	"  scale --max N                the job's maximum becomes N workers from the next view on (on any\n"
	"                               worker of the view): spares join up to N, or the youngest members\n"
	"                               step down to spares; later views keep it (status shows max_workers)\n"
	"  follow-replicas --deployment NAME [--spares K] [--interval-ms N]\n"
	"                               in a sidecar on Kubernetes: every N ms (5000) read the Deployment's\n"
	"                               replicas R and, when R - K (K: $FTL_SPARES, else 0) is above the job's\n"
	"                               maximum, raise it (scale --max R-K); never lowers it; runs until\n"
	"                               SIGTERM. With the pod's service account; --namespace NS, --api URL,\n"
	"                               --token-file F and --ca-file F override it\n"
	"  quorum reset                 waiting for quorum: go on with the survivors, treating the missing\n"
	"                               members of the view as gone for good (on any one survivor; unsafe\n"
	"                               if they may be alive on the other side of a partition)\n"
	"\n"
	"which agent (first match wins):\n"
	"  --socket PATH or $FTL_CONTROL_SOCKET\n"
	"  --name NAME or $FTL_NAME     RUN_DIR/NAME.sock\n"
	"  otherwise                    the only *.sock in RUN_DIR\n"
	"  RUN_DIR is --run-dir DIR, or $FTL_RUN_DIR, or $XDG_RUNTIME_DIR/ftl, or /tmp/ftl-UID.\n"
	"  After `members`, --name filters members; give the agent's --name before the command.\n"
	"\n"
	"exit status: 0 ok (ready); 1 the agent refused or did not answer in time (not ready);\n"
	"             2 usage error; 3 no agent running; 4 permission denied on the control socket\n";

enum {
	OPT_JSON = 1u << 0,
	OPT_FOLLOW = 1u << 1,
	OPT_STATUS = 1u << 2,
	OPT_NAME_FILTER = 1u << 3,
	OPT_ONCE = 1u << 4,
	OPT_SPARES = 1u << 5,
	OPT_WAIT = 1u << 6,
	OPT_MAX = 1u << 7,
	OPT_OWN_OPTIONS = 1u << 8, /* the command parses the rest of the command line itself (run gets all of it) */
};

typedef struct ctl_options {
	ctl_target target;
	unsigned given; /* OPT_* bits seen after the command */
	bool is_json;
	bool is_help_shown; /* --help printed the usage: exit at once, successfully */
	member_filter filter;
	double wait_s; /* --wait */
	long max_workers; /* scale --max */
} ctl_options;

typedef struct command {
	const char *name;
	int (*run)(const ctl_options *opts, char **args, int nargs);
	int min_args, max_args; /* positional arguments after the command */
	unsigned allowed;       /* OPT_* bits this command accepts */
	const char *synopsis;   /* its arguments, for a usage error */
} command;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "ftlctl: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nrun `ftlctl --help` for usage\n");
	va_end(ap);
	return CTL_EXIT_USAGE;
}

/* ---- talking to the agent ---- */

static int call_agent(const ctl_options *opts, json_t *request, int timeout_ms, json_t **reply,
		      ctl_conn *conn)
{
	return ctl_call(&opts->target, request, timeout_ms, reply, conn, NULL, 0);
}

static int call_once(const ctl_options *opts, json_t *request, int timeout_ms, json_t **reply)
{
	return ctl_call_once(&opts->target, request, timeout_ms, reply, NULL, 0);
}

static void print_json(const json_t *value, size_t flags)
{
	json_dumpf(value, stdout, flags);
	fputc('\n', stdout);
}

/* ---- commands ---- */

static int run_status(const ctl_options *opts, char **args, int nargs)
{
	json_t *reply;
	int rc = call_once(opts, json_pack("{s:s}", "cmd", "status"), CTL_REPLY_TIMEOUT_MS, &reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	if (opts->is_json)
		print_json(reply, JSON_INDENT(2));
	else
		ctl_render_status(stdout, reply);
	json_decref(reply);
	return CTL_EXIT_OK;
}

static int run_members(const ctl_options *opts, char **args, int nargs)
{
	json_t *reply, *kept;
	int rc = call_once(opts, json_pack("{s:s}", "cmd", "members"), CTL_REPLY_TIMEOUT_MS, &reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	kept = member_filter_apply(&opts->filter, json_object_get(reply, "members"));
	json_decref(reply);
	if (kept == NULL) {
		fprintf(stderr, "ftlctl: out of memory filtering members\n");
		return CTL_EXIT_FAILED;
	}
	if (opts->is_json) {
		json_t *filtered = json_pack("{s:b, s:o}", "ok", 1, "members", kept);
		print_json(filtered, JSON_INDENT(2));
		json_decref(filtered);
		return CTL_EXIT_OK;
	}
	if (json_array_size(kept) == 0)
		fprintf(stderr, "ftlctl: no member matches\n");
	else
		ctl_render_members(stdout, kept);
	json_decref(kept);
	return CTL_EXIT_OK;
}

static int run_leave(const ctl_options *opts, char **args, int nargs)
{
	json_t *reply;
	int rc = call_once(opts, json_pack("{s:s}", "cmd", "leave"), CTL_LEAVE_TIMEOUT_MS, &reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	printf("left the cluster: the other members now see this agent as left\n");
	json_decref(reply);
	return CTL_EXIT_OK;
}

/* `quorum reset`: the survivors of a lost quorum go on without the missing members (the agent refuses
 * unless it is waiting for quorum). */
static int run_quorum(const ctl_options *opts, char **args, int nargs)
{
	if (strcmp(args[0], "reset") != 0)
		return usage_error("unknown `quorum` operation %s; use reset", args[0]);
	json_t *reply;
	int rc = call_once(opts, json_pack("{s:s}", "cmd", "quorum-reset"), CTL_REPLY_TIMEOUT_MS, &reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	printf("quorum reset: the survivors of the view go on without its missing members; if those come back "
	       "they join as new members\n");
	json_decref(reply);
	return CTL_EXIT_OK;
}

/* `scale --max N`: the job's maximum, agreed by the rendezvous like any view (the agent refuses off a view,
 * or below FTL_MIN_WORKERS). */
static int run_scale(const ctl_options *opts, char **args, int nargs)
{
	if (!(opts->given & OPT_MAX))
		return usage_error("scale needs --max N: the job's new maximum number of workers");
	int rc = ctl_scale_max(&opts->target, opts->max_workers, NULL, 0);
	if (rc != CTL_EXIT_OK)
		return rc;
	printf("scale: the job's maximum becomes %ld workers from the next view on (spares join, or the youngest "
	       "members step down to spares)\n", opts->max_workers);
	return CTL_EXIT_OK;
}

/* `follow-replicas`: its options are its own (follow_replicas.c); args is the command line from the command. */
static int run_follow_replicas(const ctl_options *opts, char **args, int nargs)
{
	return ctl_follow_replicas(&opts->target, nargs, args);
}

static int run_ready(const ctl_options *opts, char **args, int nargs)
{
	json_t *reply;
	char reason[256];
	int rc = call_once(opts, json_pack("{s:s}", "cmd", "status"), CTL_REPLY_TIMEOUT_MS, &reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	bool is_ready = ctl_readiness(reply, (opts->given & OPT_SPARES) != 0, reason, sizeof reason);
	printf("%s\n", reason);
	json_decref(reply);
	return is_ready ? CTL_EXIT_OK : CTL_EXIT_FAILED;
}

static int run_events(const ctl_options *opts, char **args, int nargs)
{
	ctl_conn conn = {.fd = -1};
	json_t *reply, *event;
	int rc = call_agent(opts, json_pack("{s:s}", "cmd", "events"), CTL_REPLY_TIMEOUT_MS, &reply, &conn);
	json_decref(reply);
	while (rc == CTL_EXIT_OK) {
		rc = ctl_conn_read(&conn, CTL_WAIT_FOREVER, &event);
		if (rc != CTL_EXIT_OK)
			break;
		if (event == NULL) {
			fprintf(stderr, "ftlctl: the agent closed the event stream (it stopped or left)\n");
			break;
		}
		if (opts->is_json)
			print_json(event, JSON_COMPACT);
		else
			ctl_render_event(stdout, event);
		fflush(stdout);
		json_decref(event);
	}
	ctl_conn_close(&conn);
	return rc;
}

enum { TOP_INTERVAL_MS = 1000 };

/* One frame of `top`. On a terminal it is drawn over the last one: cursor home, each line cleared to its
 * end, the rest of the screen cleared (no blank flash between frames); elsewhere frames follow each other. */
static void draw_top(const json_t *now, const json_t *before, double elapsed_s, bool is_tty)
{
	char *frame = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&frame, &len);
	if (mem == NULL)
		return;
	ctl_top_render(mem, now, before, elapsed_s);
	fclose(mem);
	if (!is_tty) {
		fputs(frame, stdout);
	} else {
		fputs("\033[H", stdout);
		for (char *line = frame, *end; *line; line = end + 1) {
			end = strchr(line, '\n');
			if (end == NULL)
				break;
			fprintf(stdout, "%.*s\033[K\n", (int)(end - line), line);
		}
		fputs("\033[J", stdout);
	}
	fflush(stdout);
	free(frame);
}

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* `top`: the status every TOP_INTERVAL_MS until interrupted (or the agent stops answering: its exit
 * status); --once takes two samples an interval apart, for the step rate, and prints one plain frame. */
static int run_top(const ctl_options *opts, char **args, int nargs)
{
	bool is_once = (opts->given & OPT_ONCE) != 0, is_tty = !is_once && isatty(STDOUT_FILENO);
	json_t *before = NULL;
	struct timespec before_at = {0};
	const struct timespec interval = {TOP_INTERVAL_MS / 1000, (TOP_INTERVAL_MS % 1000) * 1000000L};
	if (is_tty)
		fputs("\033[2J", stdout);
	for (;;) {
		json_t *now;
		struct timespec at;
		int rc = call_once(opts, json_pack("{s:s}", "cmd", "status"), CTL_REPLY_TIMEOUT_MS, &now);
		if (rc != CTL_EXIT_OK) {
			json_decref(before);
			return rc;
		}
		clock_gettime(CLOCK_MONOTONIC, &at);
		if (!is_once || before != NULL)
			draw_top(now, before, before ? seconds_between(&before_at, &at) : 0, is_tty);
		bool is_done = is_once && before != NULL;
		json_decref(before);
		before = now;
		before_at = at;
		if (is_done)
			break;
		nanosleep(&interval, NULL);
	}
	json_decref(before);
	return CTL_EXIT_OK;
}

static int run_keygen(const ctl_options *opts, char **args, int nargs)
{
	unsigned char key[KEY_BYTES];
	char text[sodium_base64_ENCODED_LEN(KEY_BYTES, sodium_base64_VARIANT_ORIGINAL)];
	if (sodium_init() < 0) {
		fprintf(stderr, "ftlctl: libsodium failed to initialize; cannot generate a key\n");
		return CTL_EXIT_FAILED;
	}
	randombytes_buf(key, sizeof key);
	sodium_bin2base64(text, sizeof text, key, sizeof key, sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(key, sizeof key);
	printf("%s\n", text);
	return CTL_EXIT_OK;
}

static bool is_valid_key(const char *text)
{
	unsigned char key[KEY_BYTES];
	size_t len = 0;
	int rc = sodium_base642bin(key, sizeof key, text, strlen(text), NULL, &len, NULL,
				   sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(key, sizeof key);
	return rc == 0 && len == KEY_BYTES;
}

static int keys_list_reply(const ctl_options *opts, json_t **reply)
{
	return call_once(opts, json_pack("{s:s, s:s}", "cmd", "keys", "op", "list"), CTL_REPLY_TIMEOUT_MS, reply);
}

static int keys_list(const ctl_options *opts)
{
	json_t *reply;
	int rc = keys_list_reply(opts, &reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	if (opts->is_json)
		print_json(reply, JSON_INDENT(2));
	else
		ctl_render_keys(stdout, reply);
	json_decref(reply);
	return CTL_EXIT_OK;
}

static const struct {
	const char *op;
	ctl_keys_step step;
	const char *done;
} key_changes[] = {
	{"install", CTL_KEYS_INSTALL, "installed the key here; the agent spreads it to the cluster by gossip"},
	{"use", CTL_KEYS_USE, "the key is now primary here; the agent spreads the change to the cluster by gossip"},
	{"remove", CTL_KEYS_REMOVE, "removed the key here; the agent spreads the removal to the cluster by gossip"},
};

enum { KEYS_WAIT_POLL_MS = 100 };

/* --wait, before the step: the census can show it (an agent from before key fingerprints cannot), and, for a
 * removal, the key's fingerprint while this agent still holds it. Nothing has changed if this fails. */
static int prepare_wait(const ctl_options *opts, ctl_keys_target *t)
{
	json_t *reply;
	char why[256];
	int rc = keys_list_reply(opts, &reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	if (ctl_keys_census_usable(reply, why, sizeof why) == CTL_KEYS_UNKNOWABLE) {
		fprintf(stderr, "ftlctl: cannot --wait, so nothing was changed: %s\n", why);
		rc = CTL_EXIT_FAILED;
	} else if (t->step == CTL_KEYS_REMOVE) {
		ctl_keys_target_fingerprint(t, reply); /* none: the agent refuses to remove a key it does not hold */
	}
	json_decref(reply);
	return rc;
}

/* --wait, after the step: `keys list` every KEYS_WAIT_POLL_MS until the step shows on every live member
 * (keys_reach.h), or the wait is over (exit 1, with where it stands). A list the agent did not answer in
 * time is asked again until then. */
static int wait_for_keys(const ctl_options *opts, const ctl_keys_target *t)
{
	const struct timespec poll = {0, KEYS_WAIT_POLL_MS * 1000000L};
	struct timespec start, now;
	char how[512] = "the agent did not answer `keys list`";
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		json_t *reply;
		ctl_keys_progress progress = CTL_KEYS_PENDING;
		int rc = keys_list_reply(opts, &reply);
		if (rc != CTL_EXIT_OK && rc != CTL_EXIT_FAILED)
			return rc; /* gone, or not ours: asking again will not help */
		if (rc == CTL_EXIT_OK)
			progress = ctl_keys_reach(reply, t, how, sizeof how);
		json_decref(reply);
		clock_gettime(CLOCK_MONOTONIC, &now);
		double waited_s = seconds_between(&start, &now);
		if (progress == CTL_KEYS_REACHED) {
			printf("on every live member after %.2f s: %s\n", waited_s, how);
			return CTL_EXIT_OK;
		}
		if (progress == CTL_KEYS_UNKNOWABLE) {
			fprintf(stderr, "ftlctl: cannot tell whether it reached every live member: %s\n", how);
			return CTL_EXIT_FAILED;
		}
		if (waited_s >= opts->wait_s) {
			fprintf(stderr, "ftlctl: not on every live member after %.1f s: %s\n", waited_s, how);
			return CTL_EXIT_FAILED;
		}
		nanosleep(&poll, NULL);
	}
}

static int run_keys(const ctl_options *opts, char **args, int nargs)
{
	if (strcmp(args[0], "list") == 0 && (opts->given & OPT_WAIT))
		return usage_error("--wait goes with `keys install|use|remove`, not `keys list`");
	if (strcmp(args[0], "list") == 0)
		return nargs == 1 ? keys_list(opts) : usage_error("`keys list` takes no argument");
	for (size_t i = 0; i < sizeof key_changes / sizeof key_changes[0]; i++) {
		json_t *reply;
		int rc;
		if (strcmp(args[0], key_changes[i].op) != 0)
			continue;
		if (nargs != 2)
			return usage_error("`keys %s` needs one KEY (from `ftlctl keygen`)", key_changes[i].op);
		if (opts->given & OPT_JSON)
			return usage_error("--json goes with `keys list` only, not `keys %s`", key_changes[i].op);
		if (!is_valid_key(args[1]))
			return usage_error("KEY must be %d bytes in standard base64 (44 characters), as printed by "
					   "`ftlctl keygen`",
					   KEY_BYTES);
		ctl_keys_target target = {.step = key_changes[i].step, .key = args[1]};
		bool is_waiting = (opts->given & OPT_WAIT) != 0;
		if (is_waiting && (rc = prepare_wait(opts, &target)) != CTL_EXIT_OK)
			return rc;
		rc = call_once(opts, json_pack("{s:s, s:s, s:s}", "cmd", "keys", "op", key_changes[i].op, "key", args[1]),
			       CTL_REPLY_TIMEOUT_MS, &reply);
		if (rc == CTL_EXIT_OK)
			printf("%s\n", key_changes[i].done);
		json_decref(reply);
		if (rc == CTL_EXIT_OK && is_waiting)
			rc = wait_for_keys(opts, &target);
		return rc;
	}
	return usage_error("unknown `keys` operation %s; use list, install, use or remove", args[0]);
}

static const command commands[] = {
	{"status", run_status, 0, 0, OPT_JSON, "status [--json]"},
	{"members", run_members, 0, 0, OPT_JSON | OPT_STATUS | OPT_NAME_FILTER,
	 "members [--status S[,S...]] [--name SUBSTR] [--json]"},
	{"leave", run_leave, 0, 0, 0, "leave"},
	{"ready", run_ready, 0, 0, OPT_SPARES, "ready [--spares]"},
	{"events", run_events, 0, 0, OPT_JSON | OPT_FOLLOW, "events --follow [--json]"},
	{"top", run_top, 0, 0, OPT_ONCE, "top [--once]"},
	{"keygen", run_keygen, 0, 0, 0, "keygen"},
	{"keys", run_keys, 1, 2, OPT_JSON | OPT_WAIT, "keys list [--json] | keys install|use|remove KEY [--wait S]"},
	{"scale", run_scale, 0, 0, OPT_MAX, "scale --max N"},
	{"quorum", run_quorum, 1, 1, 0, "quorum reset"},
	{"follow-replicas", run_follow_replicas, 0, 0, OPT_OWN_OPTIONS, "follow-replicas --deployment NAME [...]"},
};

/* ---- command line ---- */

enum {
	LONG_SOCKET = 256, LONG_NAME, LONG_RUN_DIR, LONG_JSON, LONG_STATUS, LONG_FOLLOW, LONG_HELP, LONG_ONCE, LONG_SPARES,
	LONG_WAIT, LONG_MAX_WORKERS
};

static const struct option long_options[] = {
	{"socket", required_argument, NULL, LONG_SOCKET},  {"name", required_argument, NULL, LONG_NAME},
	{"run-dir", required_argument, NULL, LONG_RUN_DIR}, {"json", no_argument, NULL, LONG_JSON},
	{"status", required_argument, NULL, LONG_STATUS},   {"follow", no_argument, NULL, LONG_FOLLOW},
	{"help", no_argument, NULL, LONG_HELP},             {"once", no_argument, NULL, LONG_ONCE},
	{"spares", no_argument, NULL, LONG_SPARES},        {"wait", required_argument, NULL, LONG_WAIT},
	{"max", required_argument, NULL, LONG_MAX_WORKERS},
	{NULL, 0, NULL, 0},
};

/* Parses options in argv (argv[0] is the program or the command). cmd is NULL before the command. */
static int parse_options(int argc, char **argv, const command *cmd, ctl_options *opts)
{
	int opt;
	optind = 0; /* glibc: start afresh for the second pass */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, cmd == NULL ? "+hf" : "hf", long_options, NULL)) != -1) {
		switch (opt) {
		case LONG_SOCKET:
			opts->target.socket = optarg;
			break;
		case LONG_RUN_DIR:
			opts->target.run_dir = optarg;
			break;
		case LONG_NAME:
			if (cmd != NULL && (cmd->allowed & OPT_NAME_FILTER)) {
				opts->filter.name_part = optarg;
				opts->given |= OPT_NAME_FILTER;
			} else {
				opts->target.name = optarg;
			}
			break;
		case LONG_JSON:
			opts->is_json = true;
			opts->given |= cmd != NULL ? OPT_JSON : 0;
			break;
		case LONG_STATUS:
			if (member_filter_add_statuses(&opts->filter, optarg) != FTL_OK)
				return usage_error("%s", ftl_diag_message());
			opts->given |= OPT_STATUS;
			break;
		case 'f':
		case LONG_FOLLOW:
			opts->given |= OPT_FOLLOW;
			break;
		case LONG_ONCE:
			opts->given |= OPT_ONCE;
			break;
		case LONG_SPARES:
			opts->given |= OPT_SPARES;
			break;
		case LONG_WAIT: {
			char *end;
			opts->wait_s = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || !(opts->wait_s > 0 && opts->wait_s <= 3600))
				return usage_error("--wait takes seconds, more than 0 and at most 3600 (got %s)", optarg);
			opts->given |= OPT_WAIT;
			break;
		}
		case LONG_MAX_WORKERS: {
			char *end;
			opts->max_workers = strtol(optarg, &end, 10);
			if (end == optarg || *end != '\0' || opts->max_workers < 1 || opts->max_workers > 4096)
				return usage_error("--max takes a number of workers, 1 to 4096 (got %s)", optarg);
			opts->given |= OPT_MAX;
			break;
		}
		case 'h':
		case LONG_HELP:
			fputs(usage_text, stdout);
			opts->is_help_shown = true;
			return CTL_EXIT_OK;
		default:
			return usage_error("unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (cmd != NULL && (opts->given & ~cmd->allowed) != 0)
		return usage_error("an option given does not apply to `%s`; usage: ftlctl %s", cmd->name,
				   cmd->synopsis);
	if (cmd == NULL && (opts->given & (OPT_STATUS | OPT_FOLLOW | OPT_ONCE | OPT_SPARES | OPT_WAIT | OPT_MAX)))
		return usage_error("--status, --follow, --once, --spares, --wait and --max go after the command");
	return CTL_EXIT_OK;
}

static const command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	ctl_options opts = {0};
	const command *cmd;
	int rc, cmd_argc, nargs;
	char **cmd_argv;

	signal(SIGPIPE, SIG_IGN);
	rc = parse_options(argc, argv, NULL, &opts);
	if (rc != CTL_EXIT_OK || opts.is_help_shown)
		return rc;
	if (optind >= argc) {
		fputs(usage_text, stderr);
		return CTL_EXIT_USAGE;
	}
	cmd = find_command(argv[optind]);
	if (cmd == NULL)
		return usage_error("unknown command %s", argv[optind]);
	cmd_argv = argv + optind;
	cmd_argc = argc - optind;
	if (cmd->allowed & OPT_OWN_OPTIONS) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		return cmd->run(&opts, cmd_argv, cmd_argc);
	}
	rc = parse_options(cmd_argc, cmd_argv, cmd, &opts);
	if (rc != CTL_EXIT_OK || opts.is_help_shown)
		return rc;
	nargs = cmd_argc - optind;
	if (nargs < cmd->min_args || nargs > cmd->max_args)
		return usage_error("wrong number of arguments; usage: ftlctl %s", cmd->synopsis);
	if (strcmp(cmd->name, "events") == 0 && !(opts.given & OPT_FOLLOW))
		return usage_error("`events` needs --follow (following is the only mode): `ftlctl events --follow`");
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmd->run(&opts, cmd_argv + optind, nargs);
}
