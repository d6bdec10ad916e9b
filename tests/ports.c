/* The loopback ports of ports.h. */
#include "ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { LOWEST = 10000, HANDED_OUT_MAX = 64 };

static int handed_out[HANDED_OUT_MAX];
static int n_handed_out;

/* The first port of the kernel's ephemeral range (32768 when it cannot be read). */
static int ephemeral_low(void)
{
	int low = 32768, high;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f != NULL) {
		if (fscanf(f, "%d %d", &low, &high) != 2)
			low = 32768;
		fclose(f);
	}
	return low > LOWEST + 2000 ? low : LOWEST + 2000;
}

static bool binds(int type, int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, type, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static bool was_handed_out(int port)
{
	for (int i = 0; i < n_handed_out; i++)
		if (handed_out[i] == port)
			return true;
	return false;
}

int ftl_test_free_port(void)
{
	static bool is_seeded;
	if (!is_seeded) {
		srand((unsigned)time(NULL) ^ (unsigned)getpid());
		is_seeded = true;
	}
	int span = ephemeral_low() - LOWEST;
	for (int tries = 0; tries < 200; tries++) {
		int port = LOWEST + rand() % span;
		if (was_handed_out(port) || !binds(SOCK_DGRAM, port) || !binds(SOCK_STREAM, port))
			continue;
		if (n_handed_out < HANDED_OUT_MAX)
			handed_out[n_handed_out++] = port;
		return port;
	}
	fprintf(stderr, "ftl_test_free_port: no free loopback port below the ephemeral range\n");
	exit(3);
}
