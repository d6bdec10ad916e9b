/* The replica count of a Kubernetes Deployment, read from its scale subresource
 * (GET {api}/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale, JSON spec.replicas) with a bearer token,
 * over libcurl. Only what follow-replicas needs: one GET, an answer or a sentence saying what went wrong
 * and, where the status tells it, what to do (401 token, 403 RBAC, 404 name or namespace). */
#ifndef FTL_CTL_KUBE_SCALE_H
#define FTL_CTL_KUBE_SCALE_H

#include <stddef.h>

typedef struct kube_scale_source {
	const char *api;        /* https://kubernetes.default.svc, or a test's http://127.0.0.1:PORT */
	const char *ns;         /* the namespace */
	const char *deployment; /* the Deployment's name */
	const char *token_file; /* the service account's token: read on every call (tokens rotate) */
	const char *ca_file;    /* the API server's CA for https; NULL or missing: the system's CAs */
} kube_scale_source;

/* Call once before the first kube_scale_get, and the cleanup once after the last. */
int kube_scale_global_init(void);
void kube_scale_global_cleanup(void);

/* Reads spec.replicas into *replicas: 0, or -1 with why (one line, no newline) in why. */
int kube_scale_get(const kube_scale_source *src, long *replicas, char *why, size_t why_len);

/* The parse alone (pure): the scale object's spec.replicas from body. 0, or -1 with why. */
int kube_scale_parse(const char *body, size_t len, long *replicas, char *why, size_t why_len);

#endif
