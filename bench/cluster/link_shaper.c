/* link_shaper: the links between the hosts of bench/cluster, shaped in user space, because this kernel has
 * neither netem nor a qdisc that honours packet timestamps (fq, etf) nor NFQUEUE; tbf and htb shape a rate
 * but delay nothing.
 *
 * Each host is a network namespace whose one interface is a TUN device made here (ftlc0, ftlc1, ...; the
 * bench moves each into its namespace and gives it 10.78.0.<i+1>/24). Every IPv4 packet a host sends comes
 * to this process; it is routed by destination address to that host's TUN after the link's one-way delay
 * (delay_us plus a uniform jitter), behind the link's earlier packets at its rate (the serialisation time of
 * the bytes ahead of it), or dropped at random (loss) or because the link is cut (a partition, a lost host).
 * Packets of one link never overtake each other (a jittered release is kept at or after the previous one's),
 * as on a real link. So delay, jitter, loss and rate are all this program's, and the bench measures that
 * they are what they claim (ping's round trip, a transfer's rate).
 *
 * Commands, one per line on stdin (the bench writes them): "cut A B" / "join A B" cut or restore the link
 * between hosts A and B (both ways); "loss P" sets the loss percent of every link; "stats" prints the
 * counters as one JSON line; "quit". It prints "ready" once the devices exist, then only answers.
 *
 * Usage: link_shaper HOSTS DELAY_US JITTER_US LOSS_PCT RATE_MBIT (0: unlimited). Root. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_HOSTS 64
#define PACKET_MAX 65536
#define QUEUE_MAX 65536 /* packets in flight over all links; more are dropped and counted */

typedef struct held {
	int64_t release_us;
	uint32_t len;
	uint8_t to;
	uint8_t *bytes;
} held;

static int tun_fd[MAX_HOSTS];
static int n_hosts;
static int64_t delay_us, jitter_us;
static double loss_pct, rate_mbit;
static bool is_cut[MAX_HOSTS][MAX_HOSTS];
static int64_t link_free_us[MAX_HOSTS][MAX_HOSTS];  /* when the link's last packet leaves it */
static int64_t link_last_us[MAX_HOSTS][MAX_HOSTS];  /* the release of its last packet: no overtaking */
static held heap[QUEUE_MAX];
static int n_held;
static uint64_t forwarded, dropped_loss, dropped_cut, dropped_full, dropped_unroutable;

static int64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static double uniform(void) { return (double)random() / ((double)RAND_MAX + 1.0); }

/* ---- the release queue: a binary min-heap by release time ---- */

static void heap_swap(int a, int b)
{
	held t = heap[a];
	heap[a] = heap[b];
	heap[b] = t;
}

static void heap_push(held h)
{
	int i = n_held++;
	heap[i] = h;
	while (i > 0 && heap[(i - 1) / 2].release_us > heap[i].release_us) {
		heap_swap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static held heap_pop(void)
{
	held top = heap[0];
	heap[0] = heap[--n_held];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < n_held && heap[l].release_us < heap[m].release_us)
			m = l;
		if (r < n_held && heap[r].release_us < heap[m].release_us)
			m = r;
		if (m == i)
			break;
		heap_swap(i, m);
		i = m;
	}
	return top;
}

/* ---- devices ---- */

static int tun_open(int i)
{
	struct ifreq ifr = {0};
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "ftlc%d", i);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The host a packet is for: 10.78.0.<i+1> is host i; -1 for anything else. */
static int host_of(const uint8_t *p, size_t len)
{
	if (len < 20 || (p[0] >> 4) != 4 || p[16] != 10 || p[17] != 78 || p[18] != 0) /* bytes 16-19: dst */
		return -1;
	int i = (int)p[19] - 1;
	return i >= 0 && i < n_hosts ? i : -1;
}

static void take(int from, const uint8_t *p, size_t len, int64_t now)
{
	int to = host_of(p, len);
	if (to < 0 || to == from) {
		dropped_unroutable++;
		return;
	}
	if (is_cut[from][to]) {
		dropped_cut++;
		return;
	}
	if (loss_pct > 0 && uniform() * 100.0 < loss_pct) {
		dropped_loss++;
		return;
	}
	if (n_held == QUEUE_MAX) {
		dropped_full++;
		return;
	}
	int64_t leave = now;
	if (rate_mbit > 0) { /* behind the link's earlier bytes, then its own serialisation time */
		leave = link_free_us[from][to] > now ? link_free_us[from][to] : now;
		leave += (int64_t)((double)len * 8.0 / rate_mbit);
		link_free_us[from][to] = leave;
	}
	int64_t release = leave + delay_us + (jitter_us > 0 ? (int64_t)(uniform() * (double)jitter_us) : 0);
	if (release < link_last_us[from][to])
		release = link_last_us[from][to];
	link_last_us[from][to] = release;
	uint8_t *copy = malloc(len);
	if (copy == NULL) {
		dropped_full++;
		return;
	}
	memcpy(copy, p, len);
	heap_push((held){release, (uint32_t)len, (uint8_t)to, copy});
}

static void release_due(int64_t now)
{
	while (n_held > 0 && heap[0].release_us <= now) {
		held h = heap_pop();
		if (write(tun_fd[h.to], h.bytes, h.len) == (ssize_t)h.len)
			forwarded++;
		else
			dropped_full++; /* the device's queue is full, or it went down */
		free(h.bytes);
	}
}

static void print_stats(void)
{
	printf("{\"forwarded\": %llu, \"dropped_loss\": %llu, \"dropped_cut\": %llu, \"dropped_full\": %llu, "
	       "\"dropped_unroutable\": %llu, \"held\": %d}\n",
	       (unsigned long long)forwarded, (unsigned long long)dropped_loss, (unsigned long long)dropped_cut,
	       (unsigned long long)dropped_full, (unsigned long long)dropped_unroutable, n_held);
	fflush(stdout);
}

/* One command line; false on quit or end of input. */
static bool command(char *line)
{
	int a, b;
	double p;
	if (sscanf(line, "cut %d %d", &a, &b) == 2 && a >= 0 && b >= 0 && a < n_hosts && b < n_hosts) {
		is_cut[a][b] = is_cut[b][a] = true;
	} else if (sscanf(line, "join %d %d", &a, &b) == 2 && a >= 0 && b >= 0 && a < n_hosts && b < n_hosts) {
		is_cut[a][b] = is_cut[b][a] = false;
	} else if (sscanf(line, "loss %lf", &p) == 1 && p >= 0 && p <= 100) {
		loss_pct = p;
	} else if (strncmp(line, "stats", 5) == 0) {
		print_stats();
		return true;
	} else if (strncmp(line, "quit", 4) == 0) {
		return false;
	} else {
		fprintf(stderr, "link_shaper: unknown command: %s", line);
		return true;
	}
	printf("ok\n");
	fflush(stdout);
	return true;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s HOSTS DELAY_US JITTER_US LOSS_PCT RATE_MBIT\n", argv[0]);
		return 2;
	}
	n_hosts = atoi(argv[1]);
	delay_us = atoll(argv[2]);
	jitter_us = atoll(argv[3]);
	loss_pct = atof(argv[4]);
	rate_mbit = atof(argv[5]);
	if (n_hosts < 2 || n_hosts > MAX_HOSTS || delay_us < 0 || jitter_us < 0 || loss_pct < 0 || rate_mbit < 0) {
		fprintf(stderr, "link_shaper: 2 to %d hosts, and no negative figure\n", MAX_HOSTS);
		return 2;
	}
	srandom((unsigned)now_us());
	prctl(PR_SET_TIMERSLACK, 1000UL); /* wake within a microsecond of a release, not the default 50 */
	for (int i = 0; i < n_hosts; i++)
		if ((tun_fd[i] = tun_open(i)) < 0) {
			fprintf(stderr, "link_shaper: cannot make TUN device ftlc%d: %s (root, /dev/net/tun)\n", i,
				strerror(errno));
			return 1;
		}
	printf("ready\n");
	fflush(stdout);

	struct pollfd fds[MAX_HOSTS + 1];
	static uint8_t buf[PACKET_MAX];
	static char line[256];
	size_t line_len = 0;
	for (;;) {
		for (int i = 0; i < n_hosts; i++)
			fds[i] = (struct pollfd){.fd = tun_fd[i], .events = POLLIN};
		fds[n_hosts] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		int64_t now = now_us();
		struct timespec wait_ts, *timeout = NULL; /* ppoll: to the microsecond (poll rounds to a millisecond) */
		if (n_held > 0) {
			int64_t wait = heap[0].release_us - now;
			wait = wait > 0 ? wait : 0;
			wait_ts = (struct timespec){.tv_sec = wait / 1000000, .tv_nsec = (wait % 1000000) * 1000};
			timeout = &wait_ts;
		}
		if (ppoll(fds, (nfds_t)n_hosts + 1, timeout, NULL) < 0 && errno != EINTR)
			return 1;
		now = now_us();
		for (int i = 0; i < n_hosts; i++) {
			if (!(fds[i].revents & POLLIN))
				continue;
			for (int k = 0; k < 64; k++) { /* a burst per device per turn, fairly */
				ssize_t n = read(tun_fd[i], buf, sizeof buf);
				if (n <= 0)
					break;
				take(i, buf, (size_t)n, now);
			}
		}
		if (fds[n_hosts].revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(STDIN_FILENO, line + line_len, sizeof line - 1 - line_len);
			if (n <= 0)
				return 0;
			line_len += (size_t)n;
			line[line_len] = 0;
			char *nl;
			while ((nl = strchr(line, '\n')) != NULL) {
				*nl = 0;
				char one[sizeof line + 1];
				snprintf(one, sizeof one, "%s\n", line);
				if (!command(one))
					return 0;
				memmove(line, nl + 1, line_len - (size_t)(nl + 1 - line) + 1);
				line_len = strlen(line);
			}
			if (line_len == sizeof line - 1)
				line_len = 0; /* an overlong line: dropped */
		}
		release_due(now_us());
	}
}
