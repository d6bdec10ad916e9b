/* The host:port helpers of addr.h. */
#include "addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ftl_addr_split(const char *hostport, char *host, size_t host_len, int *port)
{
	const char *colon;
	const char *h = hostport;
	size_t hl;
	if (hostport[0] == '[') {
		const char *close = strchr(hostport, ']');
		if (!close || close[1] != ':')
			return -1;
		h = hostport + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(hostport, ':');
		if (!colon)
			return -1;
		hl = (size_t)(colon - hostport);
	}
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (hl == 0 || hl >= host_len || *end != '\0' || colon[1] == '\0' || p < 0 || p > 65535)
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (int)p;
	return 0;
}

int ftl_addr_parse_numeric(const char *hostport, struct sockaddr_storage *out)
{
	char host[128];
	int port;
	if (ftl_addr_split(hostport, host, sizeof(host), &port) != 0)
		return -1;
	memset(out, 0, sizeof(*out));
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		return 0;
	}
	return -1;
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
