/* `ftlctl follow-replicas`: a sidecar beside each worker pod that lets `kubectl scale` alone drive the
 * job's maximum number of workers (FTL_MAX_WORKERS), which otherwise only `ftlctl scale --max` changes.
 *
 * Every --interval-ms it reads the Deployment's replica count R from the Kubernetes API's scale
 * subresource (kube_scale.c) and wants the maximum W = R - spares (the pods the job keeps as hot spares,
 * FTL_SPARES, stay spares). When W is above the maximum the local agent's status shows (view.max_workers),
 * it asks that agent exactly as `ftlctl scale --max W` does (ctl_scale_max); the rendezvous agrees on it like
 * on any view, so every pod's follower may ask and the first one wins; the others then see W there.
 *
 * It only raises. A scale-down deletes pods, each of which leaves first (the preStop hook `ftlctl leave`):
 * the view shrinks by itself. Lowering the maximum as well would make a second view change, and on a
 * maximum below the running members the youngest would step down to spares before their pods are gone.
 * A maximum higher than the replica count costs nothing (there are no pods to fill it).
 *
 * A replica count is handled once: after the maximum is raised to W or found at W or above, the follower
 * waits for the next change of R, so an operator's own `ftlctl scale --max` stands until then. A spare's
 * agent refuses `scale` (only members of a view may ask): said once, tried again at the next poll, by
 * when a member's follower has usually raised it. API errors are said once each (the status and, for
 * 401, 403 and 404, the fix), and again only when they change. */
#include "follow_replicas.h"

#include "ctl_call.h"
#include "ctl_exit.h"

#include <stdio.h>

#ifndef FTL_HAVE_CURL

int ctl_follow_replicas(const ctl_target *target, int argc, char **argv)
{
	(void)target, (void)argc, (void)argv;
	fprintf(stderr, "ftlctl: follow-replicas is not available: this ftlctl was built without libcurl (install "
		"libcurl4-openssl-dev and configure again); run `ftlctl scale --max N` after `kubectl scale` instead\n");
	return CTL_EXIT_FAILED;
}

#else

#include "kube_scale.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define FOLLOW_MAX_WORKERS 4096 /* what `scale --max` accepts */
#define FOLLOW_WHY_MAX 1024

static const char follow_usage[] =
	"usage: ftlctl follow-replicas --deployment NAME [--namespace NS] [--api URL] [--token-file F]\n"
	"                              [--ca-file F] [--interval-ms N] [--spares K]\n"
	"Raises the job's maximum (scale --max) to the Deployment's replicas less K spares whenever `kubectl\n"
	"scale` asks for more; never lowers it. Runs until SIGTERM. Defaults: --api https://kubernetes.default.svc;\n"
	"the token, ca.crt and namespace of the pod's service account (" SA_DIR ");\n"
	"--interval-ms 5000; --spares $FTL_SPARES, else 0.\n";

typedef struct follower {
	kube_scale_source src;
	const ctl_target *target;
	long interval_ms;
	long spares;
	long settled;                 /* the last W handled (raised to, or found at or below the maximum); -1 none */
	bool is_wait_told;            /* no view yet, or a refused scale, was said once */
	char api_error[FOLLOW_WHY_MAX]; /* the last API error said, "" while the API answers */
	char ns[256];
} follower;

static volatile sig_atomic_t is_stopping;

static void stop_cb(int sig)
{
	(void)sig;
	is_stopping = 1;
}

static int bad_option(const char *fmt, const char *value)
{
	fprintf(stderr, "ftlctl follow-replicas: ");
	fprintf(stderr, fmt, value);
	fprintf(stderr, "\n%s", follow_usage);
	return CTL_EXIT_USAGE;
}

static bool parse_long(const char *text, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* The namespace file's one line (the pod's own namespace). */
static int read_namespace(follower *f, const char *path)
{
	FILE *file = fopen(path, "r");
	size_t n = 0;
	if (file != NULL) {
		n = fread(f->ns, 1, sizeof f->ns - 1, file);
		fclose(file);
	}
	while (n > 0 && (f->ns[n - 1] == '\n' || f->ns[n - 1] == ' '))
		n--;
	f->ns[n] = '\0';
	if (n == 0)
		return bad_option("no namespace: %s is missing or empty (not in a pod?); give --namespace NS", path);
	f->src.ns = f->ns;
	return CTL_EXIT_OK;
}

static int parse_follow_options(follower *f, int argc, char **argv)
{
	enum { O_API = 300, O_DEPLOYMENT, O_NAMESPACE, O_TOKEN_FILE, O_CA_FILE, O_INTERVAL, O_SPARES, O_HELP };
	static const struct option options[] = {
		{"api", required_argument, NULL, O_API},
		{"deployment", required_argument, NULL, O_DEPLOYMENT},
		{"namespace", required_argument, NULL, O_NAMESPACE},
		{"token-file", required_argument, NULL, O_TOKEN_FILE},
		{"ca-file", required_argument, NULL, O_CA_FILE},
		{"interval-ms", required_argument, NULL, O_INTERVAL},
		{"spares", required_argument, NULL, O_SPARES},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	const char *env_spares = getenv("FTL_SPARES");
	int opt;
	*f = (follower){
		.src = {.api = "https://kubernetes.default.svc", .token_file = SA_DIR "/token", .ca_file = SA_DIR "/ca.crt"},
		.interval_ms = 5000,
		.settled = -1,
	};
	if (env_spares != NULL && *env_spares != '\0' && !parse_long(env_spares, 0, FOLLOW_MAX_WORKERS, &f->spares))
		return bad_option("FTL_SPARES=%s: a number of spares, 0 to 4096, is expected", env_spares);
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case O_API:
			f->src.api = optarg;
			break;
		case O_DEPLOYMENT:
			f->src.deployment = optarg;
			break;
		case O_NAMESPACE:
			f->src.ns = optarg;
			break;
		case O_TOKEN_FILE:
			f->src.token_file = optarg;
			break;
		case O_CA_FILE:
			f->src.ca_file = optarg;
			break;
		case O_INTERVAL:
			if (!parse_long(optarg, 100, 3600000, &f->interval_ms))
				return bad_option("--interval-ms takes milliseconds, 100 to 3600000 (got %s)", optarg);
			break;
		case O_SPARES:
			if (!parse_long(optarg, 0, FOLLOW_MAX_WORKERS, &f->spares))
				return bad_option("--spares takes a number of spares, 0 to 4096 (got %s)", optarg);
			break;
		case O_HELP:
			fputs(follow_usage, stdout);
			return -1;
		default:
			return bad_option("unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_option("takes no argument (got %s)", argv[optind]);
	if (f->src.deployment == NULL)
		return bad_option("%s", "--deployment NAME is needed: the Deployment whose replicas to follow");
	if (f->src.ns == NULL)
		return read_namespace(f, SA_DIR "/namespace");
	return CTL_EXIT_OK;
}

/* The maximum the local agent's view has, or -1 after saying why it cannot be known now. */
static long current_max(follower *f)
{
	json_t *status;
	long max = -1;
	if (ctl_call_once(f->target, json_pack("{s:s}", "cmd", "status"), CTL_REPLY_TIMEOUT_MS, &status, NULL, 0) !=
	    CTL_EXIT_OK)
		return -1; /* ctl_conn said why: no agent yet, or it did not answer */
	const json_t *given = json_object_get(json_object_get(status, "view"), "max_workers");
	if (json_is_integer(given))
		max = (long)json_integer_value(given);
	else if (!f->is_wait_told)
		printf("ftlctl follow-replicas: the agent here is in no view yet; trying again at the next poll\n");
	f->is_wait_told |= max < 0;
	json_decref(status);
	return max;
}

/* One replica count: raise the maximum to what it calls for, if it is above the view's. */
static void follow(follower *f, long replicas)
{
	long wanted = replicas - f->spares;
	char refusal[FOLLOW_WHY_MAX];
	if (wanted > FOLLOW_MAX_WORKERS)
		wanted = FOLLOW_MAX_WORKERS;
	if (wanted == f->settled)
		return;
	if (wanted < 1) {
		printf("ftlctl follow-replicas: replicas %ld with %ld spares: no maximum to raise\n", replicas, f->spares);
		f->settled = wanted;
		return;
	}
	long max = current_max(f);
	if (max < 0)
		return;
	if (wanted <= max) {
		if (wanted < max)
			printf("ftlctl follow-replicas: replicas %ld: the job's maximum stays %ld (follow-replicas only "
			       "raises it; pods removed leave the view by themselves)\n", replicas, max);
		f->settled = wanted;
		return;
	}
	int rc = ctl_scale_max(f->target, wanted, refusal, sizeof refusal);
	if (rc == CTL_EXIT_OK) {
		printf("ftlctl follow-replicas: replicas %ld%s: the job's maximum becomes %ld\n", replicas,
		       f->spares ? " less the spares" : "", wanted);
		f->settled = wanted;
		f->is_wait_told = false;
	} else if (refusal[0] != '\0' && !f->is_wait_told) {
		printf("ftlctl follow-replicas: the agent here refused scale --max %ld (%s): a spare may not ask, a "
		       "member's follower will; trying again at the next poll\n", wanted, refusal);
		f->is_wait_told = true;
	}
}

static void poll_once(follower *f)
{
	char why[FOLLOW_WHY_MAX];
	long replicas;
	if (kube_scale_get(&f->src, &replicas, why, sizeof why) != 0) {
		if (strcmp(why, f->api_error) != 0)
			fprintf(stderr, "ftlctl follow-replicas: %s; trying again every %ld ms\n", why, f->interval_ms);
		snprintf(f->api_error, sizeof f->api_error, "%s", why);
		return;
	}
	if (f->api_error[0] != '\0')
		printf("ftlctl follow-replicas: the Kubernetes API answers again\n");
	f->api_error[0] = '\0';
	follow(f, replicas);
}

/* Sleeps ms unless a stop signal comes first. */
static void pause_ms(long ms)
{
	struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
	while (!is_stopping && nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

int ctl_follow_replicas(const ctl_target *target, int argc, char **argv)
{
	follower f;
	int rc = parse_follow_options(&f, argc, argv);
	if (rc != CTL_EXIT_OK)
		return rc < 0 ? CTL_EXIT_OK : rc;
	f.target = target;
	struct sigaction stop = {.sa_handler = stop_cb}; /* no SA_RESTART: a stop cuts the pause short */
	sigemptyset(&stop.sa_mask);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGINT, &stop, NULL);
	if (kube_scale_global_init() != 0) {
		fprintf(stderr, "ftlctl follow-replicas: libcurl failed to initialize\n");
		return CTL_EXIT_FAILED;
	}
	printf("ftlctl follow-replicas: following deployments/%s/scale in namespace %s at %s every %ld ms (%ld "
	       "spares); the job's maximum is raised, never lowered\n", f.src.deployment, f.src.ns, f.src.api,
	       f.interval_ms, f.spares);
	while (!is_stopping) {
		poll_once(&f);
		pause_ms(f.interval_ms);
	}
	kube_scale_global_cleanup();
	printf("ftlctl follow-replicas: stopped\n");
	return CTL_EXIT_OK;
}

#endif
