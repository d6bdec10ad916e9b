/* One GET of a Deployment's scale subresource (see kube_scale.h). libcurl does the HTTP and TLS; the
 * token is read again on every call because a projected service-account token is rotated by the kubelet
 * (about hourly) and an old one is refused. */
#include "kube_scale.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KUBE_MAX_BODY (1u << 20)
#define KUBE_MAX_TOKEN 16384
#define KUBE_TIMEOUT_MS 10000L

typedef struct body_buf {
	char *data;
	size_t len;
	int is_too_long;
} body_buf;

static size_t body_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	body_buf *b = userdata;
	size_t n = size * nmemb;
	if (b->len + n > KUBE_MAX_BODY) {
		b->is_too_long = 1;
		return 0; /* makes curl stop with CURLE_WRITE_ERROR */
	}
	char *grown = realloc(b->data, b->len + n + 1);
	if (grown == NULL)
		return 0;
	memcpy(grown + b->len, ptr, n);
	b->data = grown;
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* The token file's first line, without surrounding whitespace. */
static int read_token(const char *path, char *out, size_t out_len, char *why, size_t why_len)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(why, why_len, "cannot read the service-account token %s (%m): is automountServiceAccountToken "
			 "off, or is this not a pod? Give --token-file", path);
		return -1;
	}
	size_t n = fread(out, 1, out_len - 1, f);
	fclose(f);
	out[n] = '\0';
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
		out[--n] = '\0';
	if (n == 0 || strchr(out, '\n') != NULL) {
		snprintf(why, why_len, "the service-account token %s is empty or not one line", path);
		return -1;
	}
	return 0;
}

int kube_scale_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void kube_scale_global_cleanup(void)
{
	curl_global_cleanup();
}

int kube_scale_parse(const char *body, size_t len, long *replicas, char *why, size_t why_len)
{
	json_error_t err;
	json_t *scale = json_loadb(body, len, 0, &err);
	const json_t *given = json_object_get(json_object_get(scale, "spec"), "replicas");
	int rc = 0;
	if (scale == NULL) {
		snprintf(why, why_len, "the scale subresource is not JSON: %s", err.text);
		rc = -1;
	} else if (given == NULL && json_is_object(json_object_get(scale, "spec"))) {
		*replicas = 0; /* the API leaves out a zero */
	} else if (!json_is_integer(given) || json_integer_value(given) < 0) {
		snprintf(why, why_len, "the scale subresource has no spec.replicas (a whole number, 0 or more)");
		rc = -1;
	} else {
		*replicas = (long)json_integer_value(given);
	}
	json_decref(scale);
	return rc;
}

/* What an HTTP error status means here, and what to do about it. */
static void http_failure(const kube_scale_source *src, const char *url, long status, char *why, size_t why_len)
{
	switch (status) {
	case 401:
		snprintf(why, why_len, "the Kubernetes API refused the token of %s (HTTP 401 Unauthorized): an "
			 "expired or foreign token", src->token_file);
		break;
	case 403:
		snprintf(why, why_len, "the Kubernetes API forbids reading deployments/%s/scale in namespace %s "
			 "(HTTP 403 Forbidden): the pod's service account needs a Role allowing get on "
			 "deployments/scale (deploy/k8s/rbac.yaml: the Role ftl-follow-replicas and its RoleBinding to "
			 "the ServiceAccount ftl-worker, which the pod must name in serviceAccountName)",
			 src->deployment, src->ns);
		break;
	case 404:
		snprintf(why, why_len, "no Deployment %s in namespace %s (HTTP 404 from %s): check --deployment and "
			 "--namespace", src->deployment, src->ns, url);
		break;
	default:
		snprintf(why, why_len, "the Kubernetes API answered HTTP %ld to GET %s", status, url);
	}
}

int kube_scale_get(const kube_scale_source *src, long *replicas, char *why, size_t why_len)
{
	char token[KUBE_MAX_TOKEN], url[2048], auth[KUBE_MAX_TOKEN + 32];
	char curl_error[CURL_ERROR_SIZE] = "";
	body_buf body = {0};
	struct curl_slist *headers = NULL;
	long status = 0;
	int rc = -1;

	if (read_token(src->token_file, token, sizeof token, why, why_len) != 0)
		return -1;
	size_t api_len = strlen(src->api);
	while (api_len > 0 && src->api[api_len - 1] == '/')
		api_len--;
	snprintf(url, sizeof url, "%.*s/apis/apps/v1/namespaces/%s/deployments/%s/scale", (int)api_len, src->api,
		 src->ns, src->deployment);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
	CURL *curl = curl_easy_init();
	headers = curl_slist_append(headers, auth);
	struct curl_slist *both = headers ? curl_slist_append(headers, "Accept: application/json") : NULL;
	if (curl == NULL || both == NULL) {
		snprintf(why, why_len, "out of memory setting up the request to %s", url);
		goto out;
	}
	headers = both;
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, body_write_cb);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, KUBE_TIMEOUT_MS);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (src->ca_file != NULL && access(src->ca_file, R_OK) == 0)
		curl_easy_setopt(curl, CURLOPT_CAINFO, src->ca_file);
	CURLcode res = curl_easy_perform(curl);
	if (res != CURLE_OK) {
		snprintf(why, why_len, "cannot reach the Kubernetes API at %s: %s", url,
			 body.is_too_long ? "the answer is over 1 MiB" : curl_error[0] ? curl_error : curl_easy_strerror(res));
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		http_failure(src, url, status, why, why_len);
		goto out;
	}
	rc = kube_scale_parse(body.data ? body.data : "", body.len, replicas, why, why_len);
out:
	memset(token, 0, sizeof token);
	memset(auth, 0, sizeof auth);
	curl_slist_free_all(headers);
	curl_easy_cleanup(curl);
	free(body.data);
	return rc;
}
