/* The host:port helpers of addr.h. */
#include "addr.h"

#include "base/diag.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ftl_err not_host_port(const char *hostport)
{
	return ftl_diag_set(FTL_ERR_INVALID, "address %s: expected host:port with a port from 0 to 65535 (IPv6 as "
			    "[fd00::7]:7946)", hostport);
}

ftl_err ftl_addr_split(const char *hostport, char *host, size_t host_len, int *port)
{
	const char *colon;
	const char *h = hostport;
	size_t hl;
	if (hostport[0] == '[') {
		const char *close = strchr(hostport, ']');
		if (!close || close[1] != ':')
			return not_host_port(hostport);
		h = hostport + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(hostport, ':');
		if (!colon)
			return not_host_port(hostport);
		hl = (size_t)(colon - hostport);
	}
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (hl == 0 || hl >= host_len || *end != '\0' || colon[1] == '\0' || p < 0 || p > 65535)
		return not_host_port(hostport);
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (int)p;
	return FTL_OK;
}

ftl_err ftl_addr_parse_numeric(const char *hostport, struct sockaddr_storage *out)
{
	char host[128];
	int port = 0; /* set on FTL_OK; GCC cannot see that the error path always returns non-zero */
	ftl_err err = ftl_addr_split(hostport, host, sizeof(host), &port);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		return FTL_OK;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		return FTL_OK;
	}
	return ftl_diag_set(FTL_ERR_INVALID, "address %s: the host is not a numeric IPv4 or IPv6 address", hostport);
}

void ftl_addr_format(const struct sockaddr *sa, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%d", host, ntohs(v4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%d", host, ntohs(v6->sin6_port));
	} else {
		snprintf(out, len, "?");
	}
}

bool ftl_addr_is_wildcard(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool ftl_addr_is_member(const char *hostport)
{
	struct sockaddr_storage sa;
	if (ftl_addr_parse_numeric(hostport, &sa) != 0 || ftl_addr_is_wildcard(&sa))
		return false;
	uint16_t port = sa.ss_family == AF_INET ? ((struct sockaddr_in *)&sa)->sin_port
						  : ((struct sockaddr_in6 *)&sa)->sin6_port;
	return port != 0;
}
