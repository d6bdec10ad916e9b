/* test_comm_shm_stranger: a local process that is not a rank reaches the shared-memory setup's unix socket
 * (its name is in /proc/net/unix for anyone to read) and must get nothing and cost nothing.
 *
 * The stranger is a real process, forked before the ranks and (for another user) setuid to nobody. It
 * watches /proc/net/unix and, the moment a setup socket listens, makes its moves on it:
 *   idle           another user: one connection that never says a word, one that sends garbage
 *   pose           another user: one connection per rank r > 0, each a hello as rank r with the right comm id
 *                  (the stranger is told it: a comm id is a view epoch, not a secret) and an eventfd
 *                  attached, waiting for the memfd and mapping it read-write if it comes
 *   pose_own_user  the same as our own user (uid 0 here too), without the secret, then a silent connection
 * The ranks' connects to that socket wait (via --wrap=connect, at most 2 s) until the stranger has moved:
 * it is always first in the queue, the worst case, and the test does not depend on who wins a race.
 * Promises checked, over BUILDS builds of a 3-rank communicator:
 *   - every build is on shared memory (no fallback to tcp) and takes less than half the connect deadline
 *     (a stranger never makes rank 0 wait it out);
 *   - the stranger never maps the segment;
 *   - rank 0 counted each of the stranger's connections as dropped (the attack really happened);
 *   - the socket's name does not contain the comm id.
 *   measure N K   K builds without a stranger, then K with an idle one, no gating (the stranger races the
 *                 ranks as it would in life); prints one JSON line for scripts/hostile/shm_stranger.py.
 * Another user needs root (setuid): idle and pose skip with 77 otherwise. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm_tcp.h"
#include "harness.h"

#define WORLD 3
#define BUILDS 4
#define BUILDS_MAX 16
#define CONNECT_DEADLINE_MS 3000
#define COMM_ID_BASE 0x5eed0000u
#define NOBODY 65534
#define SEGMENT_MAGIC 0x46544c53u /* comm_shm_setup.c: the first word of the segment */
#define HELLO_MAGIC 0x46544c55u   /* comm_shm_setup.c: a rank's hello */
#define STRANGER_FDS 256

enum mode { MODE_IDLE, MODE_POSE, MODE_POSE_OWN_USER, MODE_MEASURE, MODE_MAX };
static const char *const mode_strs[MODE_MAX] = {"idle", "pose", "pose_own_user", "measure"};

/* Shared by the parent, the ranks and the stranger (an anonymous shared mapping made before the forks). */
struct board {
	enum mode mode;
	int n;
	_Atomic int is_gated;        /* ranks > 0 wait for the stranger's moves before connecting */
	_Atomic int is_attacking;    /* the stranger moves on the listeners it sees from now on */
	_Atomic int is_over;
	_Atomic int build;           /* the build rank 0 is on */
	_Atomic int attacked;        /* listeners the stranger has made its moves on */
	_Atomic int segments_taken;  /* memfds the stranger received and mapped read-write */
	_Atomic int names_with_id;   /* listener names that contain the comm id */
};

static struct board *board;
static int current_build; /* in a rank: the build it is on */

/* The hello of comm_shm_setup.c as far as a stranger can make it: magic, rank, comm id, and a proof it
 * cannot compute (zeros). */
struct posed_hello {
	uint32_t magic;
	int32_t rank;
	uint64_t comm_id;
	unsigned char proof[32];
};

static uint64_t comm_id_of(int build)
{
	return COMM_ID_BASE + (uint64_t)build;
}

/* --- the ranks' side: connects to the setup socket wait for the stranger --- */

int __real_connect(int fd, const struct sockaddr *addr, socklen_t len);
int __wrap_connect(int fd, const struct sockaddr *addr, socklen_t len);

int __wrap_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_un *sa = (const struct sockaddr_un *)addr;
	bool is_setup = addr != NULL && addr->sa_family == AF_UNIX && sa->sun_path[0] == '\0';
	for (int ms = 0; is_setup && board != NULL && atomic_load(&board->is_gated) &&
			 atomic_load(&board->attacked) <= current_build && ms < 2000; ms++)
		harness_sleep_ms(1);
	return __real_connect(fd, addr, len);
}

/* --- the stranger --- */

struct stranger {
	int fds[STRANGER_FDS];      /* every connection it made, held open until the end */
	int n_fds;
	int posed[STRANGER_FDS];    /* those that posed as a rank and may still get an answer */
	int n_posed;
	unsigned long seen[BUILDS_MAX * 2];
	int n_seen;
};

static int stranger_connect(struct stranger *s, const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	memcpy(sa.sun_path + 1, name, len);
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c < 0 || s->n_fds == STRANGER_FDS)
		return c < 0 ? -1 : (close(c), -1);
	if (__real_connect(c, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) < 0) {
		close(c);
		return -1;
	}
	s->fds[s->n_fds++] = c;
	return c;
}

/* Whatever came back on c with fds attached: a memfd we map read-write, and count when it is a segment.
 * false once c has nothing more to give (closed by rank 0). */
static bool stranger_take(int c)
{
	char buf[256], ctrl[CMSG_SPACE(sizeof(int) * 80)];
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
	ssize_t got = recvmsg(c, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (got <= 0)
		return got < 0 && errno == EAGAIN;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&msg); h != NULL; h = CMSG_NXTHDR(&msg, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)CMSG_DATA(h);
		for (int i = 0; i < k; i++) {
			uint32_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, in[i], 0);
			if (p != MAP_FAILED) {
				if (p[0] == SEGMENT_MAGIC)
					atomic_fetch_add(&board->segments_taken, 1);
				munmap(p, 4096);
			}
			close(in[i]);
		}
	}
	return true;
}

/* Every posed connection, once, without waiting. */
static void stranger_collect(struct stranger *s)
{
	for (int i = s->n_posed - 1; i >= 0; i--)
		if (!stranger_take(s->posed[i]))
			s->posed[i] = s->posed[--s->n_posed];
}

/* The moves of this mode on the listener called name. */
static void stranger_moves(struct stranger *s, const char *name)
{
	int build = atomic_load(&board->build);
	char id_hex[24];
	snprintf(id_hex, sizeof(id_hex), "%016llx", (unsigned long long)comm_id_of(build));
	if (strstr(name, id_hex) != NULL)
		atomic_fetch_add(&board->names_with_id, 1);
	if (board->mode == MODE_IDLE || board->mode == MODE_MEASURE)
		stranger_connect(s, name); /* and never a word */
	if (board->mode == MODE_IDLE) {
		int c = stranger_connect(s, name);
		char garbage[48];
		memset(garbage, 0xa5, sizeof(garbage));
		if (c >= 0)
			(void)!write(c, garbage, sizeof(garbage));
	}
	int bell = eventfd(0, EFD_CLOEXEC);
	for (int r = 1; r < board->n && (board->mode == MODE_POSE || board->mode == MODE_POSE_OWN_USER); r++) {
		int c = stranger_connect(s, name);
		struct posed_hello h = {.magic = HELLO_MAGIC, .rank = r, .comm_id = comm_id_of(build)};
		char ctrl[CMSG_SPACE(sizeof(int))];
		memset(ctrl, 0, sizeof(ctrl));
		struct iovec iov = {&h, sizeof(h)};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &bell, sizeof(int));
		if (c >= 0 && sendmsg(c, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(h))
			s->posed[s->n_posed++] = c;
	}
	close(bell);
	if (board->mode == MODE_POSE_OWN_USER)
		stranger_connect(s, name); /* silent, behind the posers: they are what rank 0 reads first */
	atomic_fetch_add(&board->attacked, 1); /* the ranks may come now */
}

/* A listening setup socket in /proc/net/unix not seen before: its name in name, true. */
static bool stranger_spots(struct stranger *s, char name[108])
{
	FILE *f = fopen("/proc/net/unix", "re");
	char line[512];
	bool is_new = false;
	while (f != NULL && !is_new && fgets(line, sizeof(line), f) != NULL) {
		unsigned long flags, inode;
		unsigned st;
		char path[108] = "";
		if (sscanf(line, "%*s %*s %*s %lx %*s %x %lu %107s", &flags, &st, &inode, path) != 4 ||
		    strncmp(path, "@ftl-shm-", 9) != 0 || !(flags & 0x10000) /* __SO_ACCEPTCON: listening */)
			continue;
		is_new = true;
		for (int i = 0; i < s->n_seen; i++)
			is_new &= s->seen[i] != inode;
		if (is_new && s->n_seen < BUILDS_MAX * 2) {
			s->seen[s->n_seen++] = inode;
			snprintf(name, 108, "%s", path + 1);
		}
	}
	if (f != NULL)
		fclose(f);
	return is_new;
}

static int stranger_main(uid_t uid)
{
	if (uid != geteuid() && (setgid(uid) != 0 || setuid(uid) != 0)) {
		perror("stranger: setuid");
		return 1;
	}
	struct stranger s = {.n_fds = 0, .n_posed = 0};
	char name[108];
	int64_t until = harness_now_ns() + 120 * (int64_t)1000000000;
	while (!atomic_load(&board->is_over) && harness_now_ns() < until) {
		if (stranger_spots(&s, name) && atomic_load(&board->is_attacking))
			stranger_moves(&s, name);
		else if (board->mode == MODE_MEASURE)
			sched_yield(); /* racing the ranks: look again as soon as the CPU allows */
		else
			usleep(200);
		stranger_collect(&s);
	}
	for (int i = 0; i < s.n_fds; i++)
		close(s.fds[i]);
	return 0;
}

/* --- the ranks --- */

/* Every report carries the build in err. */
enum report_kind { REPORT_BUILD_NS, REPORT_ON_SHM, REPORT_STRANGERS };

static int rank_main(struct harness_child *c)
{
	int members[WORLD] = {0, 1, 2}, rc = 0;
	int quiet = board->mode == MODE_MEASURE ? *(int *)c->arg : 0, builds = *(int *)c->arg + quiet;
	for (int k = 0; k < builds && rc == 0; k++) {
		current_build = k;
		if (c->rank == 0) {
			atomic_store(&board->build, k);
			atomic_store(&board->is_attacking, k >= quiet);
		}
		char boot[HARNESS_BOOT_MAX];
		struct ftl_comm_config cfg;
		harness_comm_config(c, members, c->n, comm_id_of(k), 30000, &cfg, boot, sizeof(boot));
		cfg.shm = FTL_COMM_SHM_AUTO;
		cfg.connect_timeout_ms = CONNECT_DEADLINE_MS;
		ftl_comm *comm = NULL;
		int64_t t0 = harness_now_ns();
		if (ftl_comm_new(&cfg, &comm) != FTL_OK) {
			fprintf(stderr, "rank %d: ftl_comm_new: %s\n", c->rank, ftl_error_message());
			return 1;
		}
		int64_t took = harness_now_ns() - t0;
		const char *why = ftl_comm_tcp_shm_why(comm, NULL);
		if (why != NULL)
			fprintf(stderr, "rank %d build %d: on tcp: %s\n", c->rank, k, why);
		harness_report(c, REPORT_BUILD_NS, k, took);
		harness_report(c, REPORT_ON_SHM, k, ftl_comm_tcp_is_shm(comm));
		if (c->rank == 0)
			harness_report(c, REPORT_STRANGERS, k, ftl_comm_tcp_shm_strangers(comm));
		rc = ftl_comm_barrier(comm) != FTL_OK; /* nobody starts the next build before all are done */
		ftl_comm_delete(comm);
	}
	return rc;
}

/* --- the parent --- */

struct outcome {
	int builds;
	int shm_votes[BUILDS_MAX];    /* ranks that saw each build on shared memory */
	int64_t build_ms[BUILDS_MAX]; /* each build's slowest rank */
	int strangers;                /* what rank 0 counted, over the attacked builds */
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Builds from..to-1 that every rank saw on shared memory. */
static int on_shm(const struct outcome *o, int from, int to)
{
	int k = 0;
	for (int i = from; i < to; i++)
		k += o->shm_votes[i] == WORLD;
	return k;
}

static int64_t slowest_ms(const int64_t *ms, int k)
{
	int64_t slowest = 0;
	for (int i = 0; i < k; i++)
		slowest = ms[i] > slowest ? ms[i] : slowest;
	return slowest;
}

static int64_t median_ms(const int64_t *ms, int k)
{
	int64_t sorted[BUILDS_MAX];
	memcpy(sorted, ms, sizeof(int64_t) * (size_t)k);
	qsort(sorted, (size_t)k, sizeof(int64_t), cmp_i64);
	return k > 0 ? sorted[k / 2] : 0;
}

/* Runs the job and the stranger; fills out. 0, or -1 when a process failed. */
static int run(enum mode mode, int attacked_builds, uid_t stranger_uid, struct outcome *out)
{
	int quiet = mode == MODE_MEASURE ? attacked_builds : 0;
	memset(out, 0, sizeof(*out));
	out->builds = quiet + attacked_builds;
	board->mode = mode;
	board->n = WORLD;
	atomic_store(&board->is_gated, mode != MODE_MEASURE);
	pid_t stranger = fork();
	if (stranger == 0) {
		alarm(150);
		_exit(stranger_main(stranger_uid));
	}
	struct harness h;
	int rc = harness_start(&h, WORLD, 140, rank_main, &attacked_builds);
	struct harness_report rep;
	int expected = out->builds * (2 * WORLD + 1); /* REPORT_BUILD_NS and REPORT_ON_SHM per rank, strangers */
	for (int got = 0; rc == 0 && got < expected && harness_read(&h, &rep) == 0; got++) {
		int k = rep.err;
		if (k < 0 || k >= out->builds)
			continue;
		if (rep.kind == REPORT_BUILD_NS && rep.value / 1000000 > out->build_ms[k])
			out->build_ms[k] = rep.value / 1000000;
		else if (rep.kind == REPORT_ON_SHM)
			out->shm_votes[k] += (int)rep.value;
		else if (rep.kind == REPORT_STRANGERS && k >= quiet)
			out->strangers += (int)rep.value;
	}
	rc |= harness_wait(&h, 0) != 0;
	atomic_store(&board->is_over, 1);
	int st = 0;
	waitpid(stranger, &st, 0);
	rc |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	return rc ? -1 : 0;
}

/* Whether this process may become nobody (root, and a uid 65534 that this user namespace maps). */
static bool can_become_nobody(void)
{
	if (geteuid() != 0)
		return false;
	pid_t pid = fork();
	if (pid == 0)
		_exit(setgid(NOBODY) == 0 && setuid(NOBODY) == 0 ? 0 : 1);
	int st = 0;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The promises of the header, for one attacking mode. */
static int attack_test(enum mode mode)
{
	if (mode != MODE_POSE_OWN_USER && !can_become_nobody()) {
		fprintf(stderr, "%s: another user needs root and a uid %d to become (setuid); skipped\n", mode_strs[mode],
			NOBODY);
		return 77;
	}
	struct outcome o;
	if (run(mode, BUILDS, mode == MODE_POSE_OWN_USER ? geteuid() : NOBODY, &o) != 0) {
		fprintf(stderr, "%s: a rank or the stranger failed (above)\n", mode_strs[mode]);
		return 1;
	}
	int per_build = mode == MODE_IDLE ? 2 : mode == MODE_POSE ? WORLD - 1 : WORLD, rc = 0, n_shm = on_shm(&o, 0, o.builds);
	int64_t slowest = slowest_ms(o.build_ms, o.builds);
	printf("{\"test\":\"shm_stranger\",\"mode\":\"%s\",\"builds\":%d,\"on_shm\":%d,\"median_build_ms\":%lld,"
	       "\"slowest_build_ms\":%lld,\"attacked\":%d,\"strangers_dropped\":%d,\"segments_taken\":%d,"
	       "\"names_with_comm_id\":%d}\n",
	       mode_strs[mode], o.builds, n_shm, (long long)median_ms(o.build_ms, o.builds), (long long)slowest,
	       atomic_load(&board->attacked), o.strangers, atomic_load(&board->segments_taken),
	       atomic_load(&board->names_with_id));
	if (atomic_load(&board->attacked) != o.builds || o.strangers < per_build * o.builds) {
		fprintf(stderr, "%s: the stranger moved on %d of %d builds and rank 0 counted %d of its %d connections "
			"as dropped\n", mode_strs[mode], atomic_load(&board->attacked), o.builds,
			o.strangers, per_build * o.builds);
		rc = 1;
	}
	if (n_shm != o.builds) {
		fprintf(stderr, "%s: %d of %d builds fell back to tcp with a stranger at the socket\n", mode_strs[mode],
			o.builds - n_shm, o.builds);
		rc = 1;
	}
	if (slowest >= CONNECT_DEADLINE_MS / 2) {
		fprintf(stderr, "%s: a build took %lld ms, the stranger made rank 0 wait (deadline %d ms)\n",
			mode_strs[mode], (long long)slowest, CONNECT_DEADLINE_MS);
		rc = 1;
	}
	if (atomic_load(&board->segments_taken) != 0) {
		fprintf(stderr, "%s: the stranger received the memfd and mapped the segment read-write %d times\n",
			mode_strs[mode], atomic_load(&board->segments_taken));
		rc = 1;
	}
	if (atomic_load(&board->names_with_id) != 0) {
		fprintf(stderr, "%s: the socket's name contains the comm id\n", mode_strs[mode]);
		rc = 1;
	}
	return rc;
}

/* K quiet builds, then K with an idle stranger racing the ranks; one JSON line. */
static int measure(int k)
{
	if (!can_become_nobody()) {
		fprintf(stderr, "measure: another user needs root and a uid %d to become (setuid); skipped\n", NOBODY);
		return 77;
	}
	struct outcome o;
	if (run(MODE_MEASURE, k, NOBODY, &o) != 0)
		return 1;
	printf("{\"test\":\"shm_stranger\",\"mode\":\"measure\",\"builds\":%d,\"quiet_on_shm\":%d,"
	       "\"quiet_median_ms\":%lld,\"attacked_on_shm\":%d,\"attacked_median_ms\":%lld,"
	       "\"attacked_slowest_ms\":%lld,\"attacked\":%d,\"strangers_dropped\":%d,\"segments_taken\":%d}\n",
	       k, on_shm(&o, 0, k), (long long)median_ms(o.build_ms, k), on_shm(&o, k, 2 * k),
	       (long long)median_ms(o.build_ms + k, k), (long long)slowest_ms(o.build_ms + k, k),
	       atomic_load(&board->attacked), o.strangers, atomic_load(&board->segments_taken));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	board = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (board == MAP_FAILED)
		return 1;
	memset(board, 0, sizeof(*board));
	const char *what = argc > 1 ? argv[1] : "";
	int rc = 2;
	for (int m = 0; m < MODE_MEASURE; m++)
		if (strcmp(what, mode_strs[m]) == 0)
			rc = attack_test((enum mode)m);
	if (strcmp(what, "measure") == 0) {
		int k = argc > 2 ? atoi(argv[2]) : 6;
		rc = k >= 1 && k <= BUILDS_MAX / 2 ? measure(k) : 2;
	}
	if (rc == 2)
		fprintf(stderr, "usage: %s idle | pose | pose_own_user | measure K (K <= %d)\n", argv[0], BUILDS_MAX / 2);
	else
		printf("%s %s: %s\n", argv[0], what, rc == 77 ? "skipped" : rc ? "FAILED" : "ok");
	return rc;
}
