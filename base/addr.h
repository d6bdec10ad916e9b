/* host:port strings: "10.0.0.7:7946", "[fd00::7]:7946", "ftl-workers.default.svc:7946". */
#ifndef FTL_BASE_ADDR_H
#define FTL_BASE_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "ftl/error.h"

/* Splits into host (brackets removed) and port. FTL_ERR_INVALID when there is no valid port or the host is
 * empty or longer than host_len. */
ftl_err ftl_addr_split(const char *hostport, char *host, size_t host_len, int *port);
/* A numeric IPv4 or IPv6 address with port into *out. FTL_ERR_INVALID if it is not host:port or the host is
 * not numeric. */
ftl_err ftl_addr_parse_numeric(const char *hostport, struct sockaddr_storage *out);
/* Formats as host:port ([v6]:port for IPv6). */
void ftl_addr_format(const struct sockaddr *sa, char *out, size_t len);
bool ftl_addr_is_wildcard(const struct sockaddr_storage *sa);
/* An address a member may advertise: a numeric IPv4 or IPv6 host, not a wildcard, port 1..65535. The
 * membership core drops alive rumors whose address fails this (ftl_swim_options.is_addr_valid). */
bool ftl_addr_is_member(const char *hostport);

#endif
