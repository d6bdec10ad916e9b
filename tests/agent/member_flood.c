/* member_flood: a hostile member that holds the cluster key (or speaks to an FTL_INSECURE=1 agent) and
 * gossips fake members to one agent, to show what that costs the agent (tests/agent/test_growth.py,
 * scripts/hostile/growth.py). Each round sends an alive for every name PREFIX-0 .. PREFIX-(N-1), sealed
 * with the key, several to a datagram; round r carries incarnation r+1 and alternates the address, so
 * after the first round every alive of a name the agent kept is news (an update event).
 *
 *   member_flood TO_ADDR NAMES ROUNDS [PREFIX]    the key from FTL_GOSSIP_KEY, else plaintext
 *
 * Sends at most about 20,000 datagrams a second (a pause every 64), so the agent's socket buffer is what
 * limits how much of it arrives, not a tight loop; prints how many alives and datagrams it sent. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/addr.h"
#include "channel/seal.h"
#include "membership/keyring.h"
#include "membership/wire.h"

enum { ALIVES_PER_DATAGRAM = 16, PAUSE_EVERY = 64 };

static int send_datagram(int fd, ftl_keyring *kr, ftl_wire_packet *p, const struct sockaddr_storage *to)
{
	uint8_t sealed[FTL_UDP_PACKET_MAX];
	size_t len;
	if (ftl_seal_datagram(kr, p->buf, ftl_wire_packet_finish(p), sealed, &len) != 0)
		return -1;
	(void)sendto(fd, sealed, len, 0, (const struct sockaddr *)to, sizeof(*to));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: member_flood TO_ADDR NAMES ROUNDS [PREFIX]\n");
		return 2;
	}
	struct sockaddr_storage to;
	long names = atol(argv[2]), rounds = atol(argv[3]);
	const char *prefix = argc > 4 ? argv[4] : "fake";
	if (ftl_addr_parse_numeric(argv[1], &to) != 0 || names < 1 || rounds < 1) {
		fprintf(stderr, "member_flood: expected a numeric ip:port, NAMES >= 1 and ROUNDS >= 1\n");
		return 2;
	}
	const char *key_text = getenv("FTL_GOSSIP_KEY");
	const char *cluster = getenv("FTL_CLUSTER") ? getenv("FTL_CLUSTER") : "ftl";
	uint8_t key[FTL_KEY_SIZE];
	if (key_text && ftl_key_from_base64(key_text, key) != 0) {
		fprintf(stderr, "member_flood: FTL_GOSSIP_KEY is not the base64 of 32 bytes\n");
		return 2;
	}
	ftl_keyring *kr = key_text ? ftl_keyring_new(cluster, key) : ftl_keyring_new_insecure(cluster);
	int fd = socket(to.ss_family, SOCK_DGRAM, 0);
	if (!kr || fd < 0) {
		perror("member_flood");
		return 1;
	}
	uint8_t plain[FTL_SEAL_DATAGRAM_PLAIN_MAX];
	ftl_wire_packet p;
	long alives = 0, datagrams = 0;
	struct timespec pause = {0, 3 * 1000 * 1000};
	for (long r = 0; r < rounds; r++) {
		ftl_wire_packet_init(&p, plain, sizeof(plain));
		for (long i = 0; i < names; i++) {
			ftl_msg m = {.type = FTL_MSG_ALIVE};
			snprintf(m.u.alive.name, sizeof(m.u.alive.name), "%s-%ld", prefix, i);
			snprintf(m.u.alive.addr, sizeof(m.u.alive.addr), "127.0.0.1:%ld", 9 + (r & 1)); /* nothing there */
			m.u.alive.generation = 1;
			m.u.alive.incarnation = (uint64_t)r + 1;
			if (p.count == ALIVES_PER_DATAGRAM || ftl_wire_packet_add(&p, &m) != 0) {
				send_datagram(fd, kr, &p, &to);
				if (++datagrams % PAUSE_EVERY == 0)
					nanosleep(&pause, NULL);
				ftl_wire_packet_init(&p, plain, sizeof(plain));
				ftl_wire_packet_add(&p, &m);
			}
			alives++;
		}
		if (p.count > 0) {
			send_datagram(fd, kr, &p, &to);
			datagrams++;
		}
	}
	printf("%ld alives in %ld datagrams\n", alives, datagrams);
	close(fd);
	ftl_keyring_delete(kr);
	return 0;
}
