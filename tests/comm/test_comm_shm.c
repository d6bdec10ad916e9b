/* test_comm_shm: the shared-memory path of the tcp backend against the tcp path, and where it must not be
 * used. (Its failure behaviour, kill -9, SIGSTOP, abort and mismatched calls, runs through test_comm_tcp's
 * and test_comm_async's scenarios with FTL_COMM_SHM=auto: see CMakeLists.txt.)
 *   same N   one tcp and one shared-memory communicator over the same ranks, same input, every dtype and
 *            op at every size boundary of the shared-memory path (a small slot, so pieces are many: one
 *            element below, at and above one slot, two slots, the direct/sliced crossover, several
 *            pieces): both against the f64 reference, and bit for bit equal wherever the reduction order
 *            cannot matter (integers, min/max, f32/f64 sums of the reference data); broadcast and
 *            allgather at the slot boundaries, equal to the tcp result byte for byte; a broadcast where
 *            some ranks hold the bytes already (held) gives everyone them, and leaves the holders' buffers
 *            alone on shared memory.
 *   netns    pods on one machine: ranks 0,1 in one network namespace and 2,3 in another, joined by a veth
 *            pair (needs root; skipped with 77 otherwise). The 4-rank communicator must stay on tcp (and
 *            be correct, and say so: "... in another network namespace"); a communicator of the two ranks
 *            inside one namespace must use shared memory.
 *   fallback N every rank local and willing, but rank 1 cannot map the segment (an address-space limit):
 *            every rank falls back to tcp, works, and gives the same reason, naming rank 1 and mmap.
 * Each communicator that is not on shared memory must say why (ftl_comm_tcp_shm_why), the same on every rank. */
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm_shm.h"
#include "comm/comm_tcp.h"
#include "harness.h"
#include "refdata.h"

#define SLOT (16u << 10)

static int complain(int rank, const char *what, ftl_dtype dt, int op, size_t count, const char *why)
{
	fprintf(stderr, "rank %d: %s %s %s count %zu: %s\n", rank, what, ftl_dtype_strs[dt],
		op >= 0 ? ftl_reduce_op_strs[op] : "-", count, why);
	return 1;
}

/* One allreduce on each communicator, same input: both right, and the same bits where order is free. */
static int same_allreduce(ftl_comm *tcp, ftl_comm *shm, ftl_dtype dt, ftl_reduce_op op, size_t count, uint64_t seed)
{
	int rank = ftl_comm_rank(tcp), n = ftl_comm_world_size(tcp), rc = 0;
	size_t bytes = count * ftl_dtype_size(dt);
	char *send = harness_xmalloc(bytes), *a = harness_xmalloc(bytes), *b = harness_xmalloc(bytes), why[256];
	ref_fill(send, dt, seed, rank, count);
	memset(b, 0x5a, bytes);
	if (ftl_comm_allreduce(tcp, send, a, count, dt, op, NULL, NULL) != FTL_OK)
		rc = complain(rank, "tcp allreduce", dt, op, count, ftl_comm_error(tcp));
	else if (ftl_comm_allreduce(shm, send, b, count, dt, op, NULL, NULL) != FTL_OK)
		rc = complain(rank, "shm allreduce", dt, op, count, ftl_comm_error(shm));
	else if (ref_check_allreduce(b, dt, op, seed, n, count, why, sizeof(why)) != 0)
		rc = complain(rank, "shm allreduce", dt, op, count, why);
	else if (ref_check_allreduce(a, dt, op, seed, n, count, why, sizeof(why)) != 0)
		rc = complain(rank, "tcp allreduce", dt, op, count, why);
	else if (ref_is_order_free(dt, op) && memcmp(a, b, bytes) != 0)
		rc = complain(rank, "allreduce", dt, op, count, "shared memory and tcp differ bit for bit");
	free(send);
	free(a);
	free(b);
	return rc;
}

/* Broadcast from the last rank and allgather (in place) on each communicator: identical bytes. */
static int same_moves(ftl_comm *tcp, ftl_comm *shm, size_t count, uint64_t seed)
{
	int rank = ftl_comm_rank(tcp), n = ftl_comm_world_size(tcp), rc = 0;
	size_t bytes = count * 8, all = bytes * (size_t)n;
	char *a = harness_xmalloc(all), *b = harness_xmalloc(all), why[256];
	ftl_comm *comms[2] = {tcp, shm};
	char *out[2] = {a, b};
	for (int k = 0; k < 2 && rc == 0; k++) {
		memset(out[k], 0x11 * (k + 1), all);
		if (rank == n - 1)
			ref_fill(out[k], FTL_F64, seed, n - 1, count);
		if (ftl_comm_broadcast(comms[k], out[k], count, FTL_F64, n - 1) != FTL_OK)
			rc = complain(rank, "broadcast", FTL_F64, -1, count, ftl_comm_error(comms[k]));
	}
	if (rc == 0 && (memcmp(a, b, bytes) != 0 || ref_check_block(b, FTL_F64, seed, n - 1, count, why, sizeof(why))))
		rc = complain(rank, "broadcast", FTL_F64, -1, count, "shared memory and tcp differ");
	for (int k = 0; k < 2 && rc == 0; k++) {
		memset(out[k], 0x33 * (k + 1), all);
		ref_fill(out[k] + (size_t)rank * bytes, FTL_I64, seed, rank, count);
		if (ftl_comm_allgather(comms[k], out[k] + (size_t)rank * bytes, out[k], count, FTL_I64) != FTL_OK)
			rc = complain(rank, "allgather", FTL_I64, -1, count, ftl_comm_error(comms[k]));
	}
	for (int q = 0; q < n && rc == 0; q++)
		if (ref_check_block(b + (size_t)q * bytes, FTL_I64, seed, q, count, why, sizeof(why)) != 0)
			rc = complain(rank, "allgather", FTL_I64, -1, count, why);
	if (rc == 0 && memcmp(a, b, all) != 0)
		rc = complain(rank, "allgather", FTL_I64, -1, count, "shared memory and tcp differ");
	free(a);
	free(b);
	return rc;
}

/* A broadcast where some ranks say they already hold the root's bytes (ftl_comm_broadcast_held: a state
 * sync after a join): every rank ends with them on both paths. Then, on shared memory only, holders whose
 * buffer is marked instead: it stays marked, so the copy out really is skipped for them. */
static int same_held_broadcast(ftl_comm *tcp, ftl_comm *shm, size_t count, uint64_t seed)
{
	int rank = ftl_comm_rank(tcp), root = ftl_comm_world_size(tcp) - 1, rc = 0;
	bool held = rank == root || rank % 2 == 0;
	size_t bytes = count * 8;
	char *buf = harness_xmalloc(bytes), *marked = harness_xmalloc(bytes), why[256];
	memset(marked, 0x5a, bytes);
	ftl_comm *comms[3] = {tcp, shm, shm};
	for (int k = 0; k < 3 && rc == 0; k++) {
		bool mark = k == 2 && held && rank != root;
		memcpy(buf, marked, bytes);
		if (held && !mark)
			ref_fill(buf, FTL_F64, seed, root, count);
		if (ftl_comm_broadcast_held(comms[k], buf, count, FTL_F64, root, held) != FTL_OK)
			rc = complain(rank, "held broadcast", FTL_F64, -1, count, ftl_comm_error(comms[k]));
		else if (mark && memcmp(buf, marked, bytes) != 0)
			rc = complain(rank, "held broadcast", FTL_F64, -1, count, "shared memory wrote a holder's buffer");
		else if (!mark && ref_check_block(buf, FTL_F64, seed, root, count, why, sizeof(why)) != 0)
			rc = complain(rank, "held broadcast", FTL_F64, -1, count, why);
	}
	free(buf);
	free(marked);
	return rc;
}

/* comm is on tcp and says why with the text expected (a prefix of its reason), and whether setup failed. */
static int says_why(ftl_comm *comm, int rank, const char *expected, bool is_failure)
{
	bool failure = !is_failure;
	const char *why = ftl_comm_tcp_shm_why(comm, &failure);
	if (ftl_comm_tcp_is_shm(comm) || why == NULL || strncmp(why, expected, strlen(expected)) != 0 ||
	    failure != is_failure) {
		fprintf(stderr, "rank %d: expected tcp because \"%s\"%s, got %s \"%s\"%s\n", rank, expected,
			is_failure ? " (a failure)" : "", ftl_comm_tcp_is_shm(comm) ? "shm" : "tcp", why ? why : "(none)",
			failure ? " (a failure)" : "");
		return 1;
	}
	return 0;
}

static int same_child(struct harness_child *c)
{
	int members[HARNESS_MAX];
	for (int i = 0; i < c->n; i++)
		members[i] = i;
	ftl_comm *tcp = harness_comm_with(c, members, c->n, 1, 60000, FTL_COMM_SHM_OFF, 0);
	ftl_comm *shm = harness_comm_with(c, members, c->n, 2, 60000, FTL_COMM_SHM_AUTO, SLOT);
	int rc = tcp == NULL || shm == NULL;
	if (rc == 0)
		rc = says_why(tcp, c->rank, "rank 0 has FTL_COMM_SHM off", false);
	if (rc == 0 && ftl_comm_tcp_shm_why(shm, NULL) != NULL)
		rc = complain(c->rank, "shared memory", FTL_F32, -1, 0, "gives a reason not to be on shared memory");
	const size_t bounds[] = {SLOT, 2 * SLOT, FTL_COMM_SHM_DIRECT_MAX, 5 * FTL_COMM_SHM_DIRECT_MAX};
	uint64_t seed = 1;
	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]) && rc == 0; i++) {
		for (int dt = 0; dt < FTL_DTYPE_MAX && rc == 0; dt++) {
			size_t at = bounds[i] / ftl_dtype_size((ftl_dtype)dt);
			for (int op = 0; op < FTL_REDUCE_OP_MAX && rc == 0; op++)
				for (size_t count = at - 1; count <= at + 1 && rc == 0 &&
				     ref_is_swept((ftl_dtype)dt, (ftl_reduce_op)op); count++)
					rc |= same_allreduce(tcp, shm, (ftl_dtype)dt, (ftl_reduce_op)op, count, seed++);
		}
		for (size_t count = bounds[i] / 8 - 1; count <= bounds[i] / 8 + 1 && rc == 0; count++, seed += 2)
			rc |= same_moves(tcp, shm, count, seed) | same_held_broadcast(tcp, shm, count, seed + 1);
	}
	for (size_t count = 1; count <= 3 && rc == 0; count++) /* fewer elements than ranks */
		rc |= same_allreduce(tcp, shm, FTL_I32, FTL_SUM, count, seed++);
	if (rc == 0 && ftl_comm_barrier(shm) != FTL_OK)
		rc = complain(c->rank, "barrier", FTL_F32, -1, 0, ftl_comm_error(shm));
	if (c->rank == 0 && rc == 0)
		printf("{\"test\":\"shm_same\",\"world\":%d,\"boundaries\":%zu}\n", c->n, sizeof(bounds) / sizeof(bounds[0]));
	ftl_comm_delete(tcp);
	ftl_comm_delete(shm);
	return rc;
}

/* --- pods on one machine --- */

struct pods {
	char ns[2][32];  /* network namespaces: ranks 0,1 in ns[0], 2,3 in ns[1] */
	char ip[2][16];
};

static int sh(const char *fmt, const char *a, const char *b, const char *c)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), fmt, a, b, c);
	return system(cmd) == 0 ? 0 : -1;
}

static void pods_remove(const struct pods *p)
{
	for (int i = 0; i < 2; i++)
		sh("ip netns del %s%s%s 2>/dev/null", p->ns[i], "", "");
}

/* Two namespaces joined by a veth pair, lo up in each. 0, or -1 (nothing left behind). */
static int pods_make(struct pods *p)
{
	int pid = (int)getpid();
	char veth[2][16];
	for (int i = 0; i < 2; i++) {
		snprintf(p->ns[i], sizeof(p->ns[i]), "ftlshm%d-%d", i, pid);
		snprintf(p->ip[i], sizeof(p->ip[i]), "10.79.%d.%d", pid % 200, i + 1);
		snprintf(veth[i], sizeof(veth[i]), "fs%d-%d", i, pid % 1000000);
	}
	int rc = sh("ip netns add %s%s%s", p->ns[0], "", "") | sh("ip netns add %s%s%s", p->ns[1], "", "") |
		 sh("ip link add %s type veth peer name %s%s", veth[0], veth[1], "");
	for (int i = 0; i < 2 && rc == 0; i++)
		rc |= sh("ip link set %s netns %s%s", veth[i], p->ns[i], "") |
		      sh("ip -n %s addr add %s/24 dev %s", p->ns[i], p->ip[i], veth[i]) |
		      sh("ip -n %s link set %s up%s", p->ns[i], veth[i], "") |
		      sh("ip -n %s link set lo up%s%s", p->ns[i], "", "");
	if (rc != 0) {
		sh("ip link del %s 2>/dev/null%s%s", veth[0], "", "");
		pods_remove(p);
	}
	return rc;
}

/* A communicator over ranks [first, first + n) of the pods, each address in its rank's namespace. */
static ftl_comm *pods_comm(const struct pods *p, int rank, int first, int n, uint64_t comm_id)
{
	char addrs[4][64];
	const char *list[4];
	for (int i = 0; i < n; i++) {
		snprintf(addrs[i], sizeof(addrs[i]), "%s:%d", p->ip[(first + i) / 2], 7100 + first + i);
		list[i] = addrs[i];
	}
	char boot[256];
	struct ftl_comm_config cfg;
	ftl_comm_config_init(&cfg);
	cfg.rank = rank - first;
	cfg.world_size = n;
	cfg.bootstrap = boot;
	cfg.bootstrap_len = ftl_comm_tcp_bootstrap(boot, sizeof(boot), list, n);
	cfg.comm_id = comm_id;
	cfg.timeout_ms = 30000;
	cfg.connect_timeout_ms = 15000;
	cfg.shm = FTL_COMM_SHM_AUTO;
	ftl_comm *comm = NULL;
	if (ftl_comm_new(&cfg, &comm) != FTL_OK)
		fprintf(stderr, "rank %d: ftl_comm_new: %s\n", rank, ftl_diag_message());
	return comm;
}

static int check_sum(ftl_comm *comm, int rank, uint64_t seed)
{
	size_t count = 100003;
	int n = ftl_comm_world_size(comm);
	float *buf = harness_xmalloc(count * 4);
	char why[256];
	ref_fill(buf, FTL_F32, seed, ftl_comm_rank(comm), count);
	int rc = 0;
	if (ftl_comm_allreduce(comm, buf, buf, count, FTL_F32, FTL_SUM, NULL, NULL) != FTL_OK)
		rc = complain(rank, "allreduce", FTL_F32, FTL_SUM, count, ftl_comm_error(comm));
	else if (ref_check_allreduce(buf, FTL_F32, FTL_SUM, seed, n, count, why, sizeof(why)) != 0)
		rc = complain(rank, "allreduce", FTL_F32, FTL_SUM, count, why);
	free(buf);
	return rc;
}

static int netns_child(struct harness_child *c)
{
	const struct pods *p = c->arg;
	char path[128];
	snprintf(path, sizeof(path), "/run/netns/%s", p->ns[c->rank / 2]);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
		perror(path);
		return 1;
	}
	close(fd);
	ftl_comm *all = pods_comm(p, c->rank, 0, 4, 1);
	int rc = all == NULL || check_sum(all, c->rank, 3);
	if (rc == 0)
		rc = says_why(all, c->rank, "rank 2 is in another network namespace than rank 0", false);
	ftl_comm_delete(all);
	ftl_comm *pair = rc == 0 ? pods_comm(p, c->rank, c->rank / 2 * 2, 2, 2) : NULL;
	rc |= pair == NULL || check_sum(pair, c->rank, 4);
	if (rc == 0 && !ftl_comm_tcp_is_shm(pair))
		rc = complain(c->rank, "2 ranks in one namespace", FTL_F32, -1, 0, "stayed on tcp");
	if (rc == 0 && c->rank == 0)
		printf("{\"test\":\"shm_netns\",\"world\":4,\"across_namespaces\":\"tcp\",\"within_one\":\"shm\"}\n");
	ftl_comm_delete(pair);
	return rc;
}

/* --- a setup that fails on one rank --- */

#define FALLBACK_SLOT (64u << 20) /* the segment: 2 (n + 1) slots, far beyond the limit below */

static int fallback_child(struct harness_child *c)
{
	if (c->rank == 1) { /* a little room to grow, not enough to map the segment */
		FILE *f = fopen("/proc/self/statm", "r");
		unsigned long pages = 0;
		if (f == NULL || fscanf(f, "%lu", &pages) != 1)
			return 1;
		fclose(f);
		rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
		struct rlimit rl = {cap, cap};
		if (setrlimit(RLIMIT_AS, &rl) != 0) {
			perror("setrlimit");
			return 1;
		}
	}
	int members[HARNESS_MAX];
	for (int i = 0; i < c->n; i++)
		members[i] = i;
	char boot[HARNESS_BOOT_MAX];
	struct ftl_comm_config cfg;
	harness_comm_config(c, members, c->n, 1, 60000, &cfg, boot, sizeof(boot));
	cfg.shm = FTL_COMM_SHM_AUTO;
	cfg.shm_slot_bytes = FALLBACK_SLOT;
	ftl_comm *comm = NULL;
	if (ftl_comm_new(&cfg, &comm) != FTL_OK) {
		fprintf(stderr, "rank %d: ftl_comm_new: %s\n", c->rank, ftl_error_message());
		return 1;
	}
	int rc = says_why(comm, c->rank, "rank 1 could not attach the segment: mmap", true) ||
		 check_sum(comm, c->rank, 5);
	if (rc == 0 && c->rank == 0)
		printf("{\"test\":\"shm_fallback\",\"world\":%d,\"why\":\"%s\"}\n", c->n, ftl_comm_tcp_shm_why(comm, NULL));
	ftl_comm_delete(comm);
	return rc;
}

/* An address-space limit and a sanitizer's shadow memory do not mix: the test skips under one. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FALLBACK_UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(HARNESS_UNDER_TSAN)
#define FALLBACK_UNDER_SANITIZER 1
#endif

static int fallback_test(int n)
{
#ifdef FALLBACK_UNDER_SANITIZER
	const bool is_sanitized = true;
#else
	const bool is_sanitized = false;
#endif
	if (is_sanitized) {
		fprintf(stderr, "fallback: an address-space limit and a sanitizer's shadow memory do not mix; skipped\n");
		return 77;
	}
	struct harness h;
	return harness_start(&h, n, 120, fallback_child, NULL) != 0 || harness_wait(&h, 0) != 0;
}

static int netns_test(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "netns: needs root (network namespaces); skipped\n");
		return 77;
	}
	struct pods p;
	if (pods_make(&p) != 0) {
		fprintf(stderr, "netns: cannot make network namespaces and a veth pair here; skipped\n");
		return 77;
	}
	struct harness h;
	int rc = harness_start(&h, 4, 90, netns_child, &p) != 0 || harness_wait(&h, 0) != 0;
	pods_remove(&p);
	return rc;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	const char *what = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 2, rc;
	struct harness h;
	if (strcmp(what, "same") == 0 && n >= 2 && n <= HARNESS_MAX)
		rc = harness_start(&h, n, 280, same_child, NULL) != 0 || harness_wait(&h, 0) != 0;
	else if (strcmp(what, "netns") == 0)
		rc = netns_test();
	else if (strcmp(what, "fallback") == 0 && n >= 2 && n <= HARNESS_MAX)
		rc = fallback_test(n);
	else {
		fprintf(stderr, "usage: %s same N | netns | fallback N\n", argv[0]);
		return 2;
	}
	printf("%s %s: %s\n", argv[0], what, rc == 77 ? "skipped" : rc ? "FAILED" : "ok");
	return rc;
}
