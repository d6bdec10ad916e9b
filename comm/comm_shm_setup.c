/* comm_shm_setup: decides whether a communicator's ranks all share this host, and if so builds the shared
 * segment they talk through (layout in comm_shm.h). The exchanges go through the lender's collectives (tcp).
 *
 * Who is local: the bootstrap only has addresses, and an address does not say "this host" (127.0.0.1 in
 * two network namespaces is two hosts as far as sockets go; one host has many addresses). So, right after
 * the tcp ring is up, every rank allgathers its identity over it: the boot id (one per running kernel)
 * and the inode of its network namespace. Equal identities mean the same kernel and the same network
 * namespace: pods in separate namespaces on one machine stay on tcp, as they would on separate machines.
 * Each rank also says whether it wants shared memory at all (FTL_COMM_SHM), so one rank's "off" turns it
 * off for everyone instead of splitting the communicator.
 *
 * The segment: rank 0 makes a memfd (anonymous: there is no name to unlink and nothing is left behind
 * whoever dies), maps it and listens on an abstract unix socket with a random name, then broadcasts the
 * name and a random secret over tcp. Abstract names live in the network namespace, which is exactly the
 * scope we share. Every other rank connects, says hello with its doorbell (an eventfd) attached, and gets
 * back the memfd and every rank's doorbell (SCM_RIGHTS), maps the segment and closes the memfd. Those unix
 * connections stay open: with the tcp ring, they are how a rank learns that a peer died
 * (comm_shm_sync.c). The ranks then agree over tcp that everyone is attached; if anyone could not, all
 * fall back to tcp. Each step is bounded by the connect deadline.
 *
 * Who is served: an abstract name is visible to every local process (/proc/net/unix) and carries no
 * permissions, so anyone on the host can connect. Rank 0 serves only a peer that runs as its own user
 * (SO_PEERCRED) and whose hello carries a keyed hash of (comm id, rank) under the secret, which only the
 * tcp ring's members received; the answer carries one too, so a rank also knows it reached rank 0. Rank 0
 * never waits on one connection: it polls the listener and every connection still owing its hello
 * together, drops another user at accept, drops a hello that is short, garbage or unproven at once, and
 * keeps a bounded number of silent connections of its own user (the oldest goes first). A stranger thus
 * costs the real ranks nothing, and each one dropped is counted (ftl_comm_shm_outcome.strangers). */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include "comm_shm.h"

#define IDENTITY_MAGIC 0x46544c49u /* "FTLI" */
#define SEGMENT_MAGIC 0x46544c53u  /* "FTLS" */
#define HELLO_MAGIC 0x46544c55u    /* "FTLU" */
#define PROOF_BYTES 32
/* Connections of our own user that have not said hello yet, beyond one per rank (silent strangers). */
#define SILENT_ROOM 8

/* A rank's hello to rank 0, and rank 0's answer (rank: the one answered). */
struct unix_hello {
	uint32_t magic;
	int32_t rank;
	uint64_t comm_id;
	unsigned char proof[PROOF_BYTES]; /* prove(): the sender holds the secret of this comm's rendezvous */
};

/* What rank 0 broadcasts over tcp: the abstract socket's random name (empty when it could not set up) and
 * the secret that proves membership on it. */
struct rendezvous {
	char name[64];
	unsigned char secret[crypto_generichash_KEYBYTES];
};

enum proof_direction { PROOF_HELLO, PROOF_ANSWER };

/* The keyed hash of (direction, comm id, rank) under the secret. */
static void prove(const struct rendezvous *rv, enum proof_direction dir, uint64_t comm_id, int32_t rank,
		  unsigned char out[PROOF_BYTES])
{
	struct {
		uint32_t dir;
		int32_t rank;
		uint64_t comm_id;
	} what = {(uint32_t)dir, rank, comm_id};
	crypto_generichash(out, PROOF_BYTES, (const unsigned char *)&what, sizeof(what), rv->secret, sizeof(rv->secret));
}

static bool is_proven(const struct rendezvous *rv, enum proof_direction dir, const struct unix_hello *h,
		      uint64_t comm_id)
{
	unsigned char want[PROOF_BYTES];
	prove(rv, dir, comm_id, h->rank, want);
	return h->magic == HELLO_MAGIC && h->comm_id == comm_id && crypto_verify_32(want, h->proof) == 0;
}

/* Whether the process at the other end of a unix connection runs as our user. */
static bool is_our_user(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	return getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred) &&
	       cred.uid == geteuid();
}

/* Each rank's outcome of the setup, allgathered at the end: either all attached, or all stay on tcp and
 * every rank can say which one failed and how. */
#define WHY_MAX 92
struct attach_vote {
	int32_t is_attached;
	char why[WHY_MAX]; /* what failed on this rank ("mmap: Cannot allocate memory"), when it did not attach */
};

/* The setup's steps leave what failed on this rank in the diag, which its vote then carries ("mmap of the
 * segment: Cannot allocate memory"); this one for a system call that failed with errno. */
static ftl_err os_failed(const char *what)
{
	return ftl_diag_set(FTL_ERR_SYSTEM, "%s: %s", what, strerror(errno));
}

const char *const ftl_comm_shm_refusal_strs[FTL_COMM_SHM_REFUSAL_MAX] = {
	[FTL_COMM_SHM_WANTED] = "wants shared memory",
	[FTL_COMM_SHM_REFUSED_OFF] = "has FTL_COMM_SHM off",
	[FTL_COMM_SHM_REFUSED_NO_ID] = "cannot read its host identity (boot id, network namespace)",
	[FTL_COMM_SHM_REFUSED_WORLD] = "is in a world larger than shared memory serves",
};

bool ftl_comm_shm_is_all_local(const struct ftl_comm_shm_identity *ids, int n, char *why, size_t why_len)
{
	for (int i = 0; i < n; i++) {
		const struct ftl_comm_shm_identity *a = &ids[i], *b = &ids[0];
		const char *how = NULL;
		if (a->magic != IDENTITY_MAGIC || a->refusal >= FTL_COMM_SHM_REFUSAL_MAX)
			how = "sent no identity";
		else if (a->refusal != FTL_COMM_SHM_WANTED)
			how = ftl_comm_shm_refusal_strs[a->refusal];
		else if (memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) != 0)
			how = "is on another host than rank 0";
		else if (a->netns_ino != b->netns_ino || a->netns_dev != b->netns_dev)
			how = "is in another network namespace than rank 0";
		if (how != NULL) {
			snprintf(why, why_len, "rank %d %s", i, how);
			return false;
		}
	}
	return true;
}

static void read_identity(struct ftl_comm_shm_identity *id, enum ftl_comm_shm_refusal refusal)
{
	memset(id, 0, sizeof(*id));
	id->magic = IDENTITY_MAGIC;
	struct stat st;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	bool is_known = f != NULL && fgets(id->boot_id, sizeof(id->boot_id), f) != NULL &&
			stat("/proc/self/ns/net", &st) == 0;
	if (f != NULL)
		fclose(f);
	if (is_known) {
		id->netns_ino = st.st_ino;
		id->netns_dev = st.st_dev;
	}
	/* without an identity we cannot know who is local */
	id->refusal = refusal == FTL_COMM_SHM_WANTED && !is_known ? FTL_COMM_SHM_REFUSED_NO_ID : refusal;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void ftl_comm_shm_detach(struct ftl_comm_shm *s)
{
	if (s == NULL)
		return;
	int n = s->comm->world_size;
	if (s->hdr != NULL)
		munmap(s->hdr, s->map_len);
	for (int i = 0; s->doorbell != NULL && i < n; i++)
		close_fd(&s->doorbell[i]);
	free(s->doorbell);
	for (int i = 2; i < s->n_live; i++) /* [0], [1] are the tcp ring's, closed with it */
		close_fd(&s->live_fd[i]);
	free(s);
}

void ftl_comm_shm_each_fd(const struct ftl_comm_shm *s, void (*fn)(int fd))
{
	for (int i = 2; i < s->n_live; i++) /* [0], [1] are the lender's */
		fn(s->live_fd[i]);
	for (int i = 0; i < s->comm->world_size; i++)
		fn(s->doorbell[i]);
}

/* A thin wrapper of sendmsg(): sends hello-sized bytes with fds attached. 0, or -1 (errno set). */
static int send_fds(int sock, const void *buf, size_t len, const int *fds, int n_fds)
{
	char ctrl[CMSG_SPACE(sizeof(int) * (FTL_COMM_SHM_WORLD_MAX + 1))];
	struct iovec iov = {(void *)buf, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n_fds)};
	memset(ctrl, 0, sizeof(ctrl));
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n_fds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n_fds);
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* A thin wrapper of recvmsg(): takes exactly len bytes with exactly n_fds fds from what sock holds (flags:
 * MSG_DONTWAIT, or 0 to wait). 0, or -1 when recvmsg failed (errno set) or brought another amount (fds
 * received are closed). */
static int take_fds(int sock, void *buf, size_t len, int *fds, int n_fds, int flags)
{
	char ctrl[CMSG_SPACE(sizeof(int) * (FTL_COMM_SHM_WORLD_MAX + 1))];
	struct iovec iov = {buf, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
	ssize_t got = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
	int n_got = 0;
	for (struct cmsghdr *c = got < 0 ? NULL : CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)CMSG_DATA(c);
		for (int i = 0; i < k; i++) {
			if (n_got < n_fds)
				fds[n_got++] = in[i];
			else
				close(in[i]);
		}
	}
	if (got == (ssize_t)len && n_got == n_fds && !(msg.msg_flags & MSG_CTRUNC))
		return 0;
	for (int i = 0; i < n_got; i++)
		close(fds[i]);
	return -1;
}

#define CANCEL_POLL_MS 20

/* A thin wrapper of poll(): until something is ready (its count), or 0 at the deadline or when the caller
 * cancels (asked every CANCEL_POLL_MS: a rank killed while we wait for it makes the agent commit a newer
 * view, which cancels this build instead of letting it run to the deadline); -1 with errno set on an error
 * other than EINTR. */
static int poll_until(struct pollfd *p, nfds_t n, int64_t deadline, const struct ftl_comm_config *cfg)
{
	for (;;) {
		int64_t left = deadline - ftl_comm_now_ms();
		if (left <= 0 || (cfg->is_cancelled && cfg->is_cancelled(cfg->cancel_arg)))
			return 0;
		int rc = poll(p, n, (int)(cfg->is_cancelled && left > CANCEL_POLL_MS ? CANCEL_POLL_MS : left));
		if (rc != 0 && !(rc < 0 && errno == EINTR))
			return rc;
	}
}

/* poll_until and take_fds: receives exactly len bytes with exactly n_fds fds before the deadline. 0, or -1
 * (the caller names the step; fds received are closed). */
static int recv_fds(int sock, void *buf, size_t len, int *fds, int n_fds, int64_t deadline,
		    const struct ftl_comm_config *cfg)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	if (poll_until(&p, 1, deadline, cfg) != 1)
		return -1;
	return take_fds(sock, buf, len, fds, n_fds, MSG_WAITALL);
}

static size_t segment_len(int n, size_t slot_bytes)
{
	size_t head = sizeof(struct ftl_comm_shm_header) + (size_t)n * sizeof(struct ftl_comm_shm_ctl);
	head = (head + 4095) & ~(size_t)4095;
	return head + 2 * (size_t)(n + 1) * slot_bytes;
}

/* A thin wrapper of mmap(): maps the segment into s. 0, or -1 with errno set. */
static int map_segment(struct ftl_comm_shm *s, int memfd, int n)
{
	void *p = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED)
		return -1;
	s->hdr = p;
	s->slots = (char *)p + s->map_len - 2 * (size_t)(n + 1) * s->slot_bytes;
	return 0;
}

/* Rank 0: the segment and the listening socket under a random name; fills *rv (an empty name on failure). */
static ftl_err host_segment(struct ftl_comm_shm *s, int n, int *memfd, int *lfd, struct rendezvous *rv)
{
	unsigned char nonce[16];
	randombytes_buf(nonce, sizeof(nonce));
	randombytes_buf(rv->secret, sizeof(rv->secret));
	*memfd = memfd_create("ftl-comm-shm", MFD_CLOEXEC);
	if (*memfd < 0)
		return os_failed("memfd_create");
	if (ftruncate(*memfd, (off_t)s->map_len) < 0)
		return os_failed("ftruncate of the segment");
	if (map_segment(s, *memfd, n) < 0)
		return os_failed("mmap of the segment");
	s->hdr->magic = SEGMENT_MAGIC;
	s->hdr->world_size = (uint32_t)n;
	s->hdr->slot_bytes = s->slot_bytes;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path + 1, "ftl-shm-", 8);
	sodium_bin2hex(sa.sun_path + 9, sizeof(sa.sun_path) - 9, nonce, sizeof(nonce));
	size_t len = strlen(sa.sun_path + 1);
	*lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
	if (*lfd < 0 || bind(*lfd, (struct sockaddr *)&sa, sl) < 0 || listen(*lfd, SOMAXCONN) < 0)
		return os_failed("listen on an abstract unix socket");
	memcpy(rv->name, sa.sun_path + 1, len + 1);
	return FTL_OK;
}

/* Rank 0's waiting room: accepted connections of our user that owe their hello, oldest first. */
struct waiting {
	int fd[FTL_COMM_SHM_WORLD_MAX + SILENT_ROOM];
	int n;
	int cap;
};

static void waiting_drop(struct waiting *w, int i)
{
	memmove(&w->fd[i], &w->fd[i + 1], sizeof(int) * (size_t)(w->n - i - 1));
	w->n--;
}

/* Rank 0: accepts one connection into the waiting room; another user's is closed at once, and a full room
 * loses its oldest. */
static void admit(int *strangers, int lfd, struct waiting *w)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return;
	if (!is_our_user(c)) {
		close(c);
		(*strangers)++;
		return;
	}
	if (w->n == w->cap) {
		close(w->fd[0]);
		waiting_drop(w, 0);
		(*strangers)++;
	}
	w->fd[w->n++] = c;
}

/* Rank 0: the hello waiting on c, without blocking; its rank with *bell set, or -1 when it is not one of
 * ours, which is no error (the caller drops the connection and counts a stranger). */
static int take_hello(const struct ftl_comm_shm *s, const struct rendezvous *rv, uint64_t comm_id, int c,
		      const int *conn, int *bell)
{
	struct unix_hello h;
	int n = s->comm->world_size;
	if (take_fds(c, &h, sizeof(h), bell, 1, MSG_DONTWAIT) < 0)
		return -1;
	if (h.rank <= 0 || h.rank >= n || conn[h.rank] >= 0 || !is_proven(rv, PROOF_HELLO, &h, comm_id)) {
		close_fd(bell);
		return -1;
	}
	return h.rank;
}

/* Rank 0: every other rank's hello and doorbell, then the memfd and all doorbells to each. Never waits on
 * one connection: the listener and the waiting room are polled together. */
static ftl_err gather_ranks(struct ftl_comm_shm *s, int *strangers, const struct rendezvous *rv,
			    const struct ftl_comm_config *cfg, int memfd, int lfd, int64_t deadline)
{
	uint64_t comm_id = cfg->comm_id;
	int n = s->comm->world_size;
	int conn[FTL_COMM_SHM_WORLD_MAX];
	struct waiting w = {.n = 0, .cap = n - 1 + SILENT_ROOM};
	for (int i = 0; i < n; i++)
		conn[i] = -1;
	ftl_err err = FTL_OK;
	for (int got = 1; got < n;) {
		struct pollfd p[1 + FTL_COMM_SHM_WORLD_MAX + SILENT_ROOM];
		p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < w.n; i++)
			p[1 + i] = (struct pollfd){.fd = w.fd[i], .events = POLLIN};
		int ready = poll_until(p, (nfds_t)(1 + w.n), deadline, cfg);
		if (ready <= 0) {
			err = ftl_diag_set(FTL_ERR_TIMEOUT, "timed out waiting for the other ranks on the unix socket");
			break;
		}
		for (int i = w.n - 1; i >= 0; i--) { /* from the back: dropping i keeps p[] lined up below it */
			if (p[1 + i].revents == 0)
				continue;
			int bell = -1, c = w.fd[i];
			int r = take_hello(s, rv, comm_id, c, conn, &bell);
			waiting_drop(&w, i);
			if (r < 0) {
				close(c); /* another comm's, garbage, unproven, or gone */
				(*strangers)++;
				continue;
			}
			conn[r] = c;
			s->doorbell[r] = bell;
			got++;
		}
		if (p[0].revents & POLLIN)
			admit(strangers, lfd, &w);
	}
	for (int i = 0; i < w.n; i++)
		close(w.fd[i]); /* silent to the end: not one of ours */
	*strangers += w.n;
	int fds[FTL_COMM_SHM_WORLD_MAX + 1];
	fds[0] = memfd;
	memcpy(fds + 1, s->doorbell, sizeof(int) * (size_t)n);
	for (int j = 1; j < n && err == FTL_OK; j++) {
		struct unix_hello answer = {.magic = HELLO_MAGIC, .rank = j, .comm_id = comm_id};
		prove(rv, PROOF_ANSWER, comm_id, j, answer.proof);
		if (send_fds(conn[j], &answer, sizeof(answer), fds, n + 1) < 0)
			err = os_failed("sending the segment (SCM_RIGHTS)");
	}
	for (int j = 1; j < n; j++) {
		if (err == FTL_OK) {
			s->live_fd[s->n_live] = conn[j];
			s->live_rank[s->n_live++] = j;
		} else {
			close_fd(&conn[j]);
		}
	}
	return err;
}

/* Rank r > 0: connects to rank 0 (our user, within the deadline), proves membership with our doorbell
 * attached, receives the memfd and every doorbell with rank 0's proof, maps. */
static ftl_err join_segment(struct ftl_comm_shm *s, const struct ftl_comm_config *cfg,
			    const struct rendezvous *rv, int64_t deadline)
{
	uint64_t comm_id = cfg->comm_id;
	int n = s->comm->world_size, rank = s->comm->rank;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strnlen(rv->name, sizeof(rv->name) - 1);
	memcpy(sa.sun_path + 1, rv->name, len);
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int64_t left = deadline - ftl_comm_now_ms();
	struct timeval connect_limit = {.tv_sec = left > 0 ? left / 1000 : 0, .tv_usec = left > 0 ? left % 1000 * 1000 : 1};
	struct unix_hello h = {.magic = HELLO_MAGIC, .rank = rank, .comm_id = comm_id}, ok;
	prove(rv, PROOF_HELLO, comm_id, rank, h.proof);
	int fds[FTL_COMM_SHM_WORLD_MAX + 1];
	ftl_err err = FTL_OK;
	if (c < 0 || setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &connect_limit, sizeof(connect_limit)) < 0 ||
	    connect(c, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) < 0)
		err = os_failed("connect to rank 0's unix socket");
	else if (!is_our_user(c))
		err = ftl_diag_set(FTL_ERR_INVALID, "rank 0's unix socket belongs to another user");
	else if (send_fds(c, &h, sizeof(h), &s->doorbell[rank], 1) < 0)
		err = os_failed("sending the doorbell to rank 0");
	else if (recv_fds(c, &ok, sizeof(ok), fds, n + 1, deadline, cfg) < 0)
		err = ftl_diag_set(FTL_ERR_TIMEOUT, "no segment from rank 0 in time");
	if (err != FTL_OK) {
		close_fd(&c);
		return err;
	}
	int memfd = fds[0];
	for (int j = 0; j < n; j++) {
		if (j == rank)
			close(fds[1 + j]); /* our own, back */
		else
			s->doorbell[j] = fds[1 + j];
	}
	if (ok.rank != rank || !is_proven(rv, PROOF_ANSWER, &ok, comm_id))
		err = ftl_diag_set(FTL_ERR_INVALID, "rank 0's answer does not prove this communicator");
	else if (map_segment(s, memfd, n) < 0)
		err = os_failed("mmap of the segment");
	close(memfd); /* the mapping keeps the segment */
	if (err == FTL_OK && (s->hdr->magic != SEGMENT_MAGIC || s->hdr->world_size != (uint32_t)n ||
			      s->hdr->slot_bytes != s->slot_bytes))
		err = ftl_diag_set(FTL_ERR_INVALID, "the segment's header is not this communicator's");
	s->live_fd[s->n_live] = c;
	s->live_rank[s->n_live++] = 0;
	return err;
}

/* Builds the segment on every rank; FTL_OK when this rank is attached, else what failed here is in the diag.
 * The rendezvous travels through the lender: when that fails, *lender_err says so and the comm's error why. */
static ftl_err build(const struct ftl_comm_shm_lender *lender, struct ftl_comm_shm *s,
		     const struct ftl_comm_config *cfg, int *strangers, ftl_err *lender_err)
{
	int rank = s->comm->rank;
	int64_t deadline = ftl_comm_now_ms() + (cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 30000);
	struct rendezvous rv;
	memset(&rv, 0, sizeof(rv));
	int memfd = -1, lfd = -1;
	ftl_err err = FTL_OK;
	s->doorbell[rank] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->doorbell[rank] < 0)
		err = os_failed("eventfd for the doorbell");
	else if (sodium_init() < 0)
		err = ftl_diag_set(FTL_ERR_SYSTEM, "libsodium did not initialise");
	else if (rank == 0)
		err = host_segment(s, cfg->world_size, &memfd, &lfd, &rv); /* rv.name stays empty when it fails */
	*lender_err = lender->broadcast(lender->comm, &rv, sizeof(rv) / 4, FTL_I32, 0, false);
	if (err == FTL_OK)
		err = *lender_err;
	if (err == FTL_OK && rv.name[0] == '\0')
		err = ftl_diag_set(FTL_ERR_SYSTEM, "rank 0 offered no segment");
	if (err == FTL_OK)
		err = rank == 0 ? gather_ranks(s, strangers, &rv, cfg, memfd, lfd, deadline) : join_segment(s, cfg, &rv, deadline);
	sodium_memzero(&rv, sizeof(rv));
	close_fd(&memfd);
	close_fd(&lfd);
	return err;
}

/* After the vote of n ranks: every rank attached, or outcome->why says which one did not and why. */
static bool is_all_attached(const struct attach_vote *votes, int n, struct ftl_comm_shm_outcome *outcome)
{
	for (int i = 0; i < n; i++)
		if (!votes[i].is_attached) {
			snprintf(outcome->why, sizeof(outcome->why), "rank %d could not attach the segment: %.*s", i,
				 WHY_MAX, votes[i].why);
			outcome->is_failed = true;
			return false;
		}
	return true;
}

ftl_err ftl_comm_shm_attach(const struct ftl_comm_shm_lender *lender, const struct ftl_comm_config *cfg,
			    struct ftl_comm_shm **out, struct ftl_comm_shm_outcome *outcome)
{
	struct ftl_comm *comm = lender->comm;
	int n = comm->world_size;
	*out = NULL;
	*outcome = (struct ftl_comm_shm_outcome){.n_host_ranks = 1};
	if (n == 1)
		return FTL_OK;
	struct ftl_comm_shm_identity me;
	struct attach_vote vote = {0}, *votes = calloc((size_t)n, sizeof(*votes));
	struct ftl_comm_shm_identity *ids = calloc((size_t)n, sizeof(*ids));
	if (ids == NULL || votes == NULL) {
		free(ids);
		free(votes);
		return ftl_comm_fail_diag(FTL_ERR_SYSTEM, "out of memory");
	}
	read_identity(&me, cfg->shm == FTL_COMM_SHM_OFF ? FTL_COMM_SHM_REFUSED_OFF
			   : n > FTL_COMM_SHM_WORLD_MAX ? FTL_COMM_SHM_REFUSED_WORLD : FTL_COMM_SHM_WANTED);
	ftl_err e = lender->allgather(comm, &me, ids, sizeof(me) / 4, FTL_I32);
	bool is_local = e == FTL_OK && ftl_comm_shm_is_all_local(ids, n, outcome->why, sizeof(outcome->why));
	for (int i = 0; e == FTL_OK && me.boot_id[0] != '\0' && i < n; i++) /* for the lender's spin */
		outcome->n_host_ranks += i != comm->rank && memcmp(ids[i].boot_id, me.boot_id, sizeof(me.boot_id)) == 0;
	free(ids);
	struct ftl_comm_shm *s = is_local ? calloc(1, sizeof(*s)) : NULL;
	if (s != NULL)
		s->comm = comm;
	ftl_err built = FTL_OK;
	if (is_local && (s == NULL || (s->doorbell = malloc(sizeof(int) * (size_t)n)) == NULL))
		built = ftl_diag_set(FTL_ERR_SYSTEM, "out of memory");
	else if (s != NULL) {
		s->addrs = lender->addrs;
		s->wake_fd = lender->wake_fd;
		for (int i = 0; i < n; i++)
			s->doorbell[i] = -1;
		for (int i = 0; i < 2; i++) { /* the lender's connections: the first two liveness channels */
			s->live_fd[i] = lender->ring_fd[i];
			s->live_rank[i] = lender->ring_rank[i];
		}
		s->n_live = 2;
		s->slot_bytes = cfg->shm_slot_bytes > 0 ? cfg->shm_slot_bytes : FTL_COMM_SHM_SLOT_DEFAULT;
		s->slot_bytes &= ~(size_t)(FTL_COMM_SHM_SLOT_MIN - 1);
		s->map_len = segment_len(n, s->slot_bytes);
		built = build(lender, s, cfg, &outcome->strangers, &e);
	}
	/* This rank's vote: attached, or what failed here (left in the diag). */
	vote.is_attached = s != NULL && built == FTL_OK;
	if (built != FTL_OK)
		snprintf(vote.why, sizeof(vote.why), "%s", ftl_diag_message());
	bool is_attached = false;
	if (e == FTL_OK && is_local) { /* everyone attached, or everyone stays on tcp and knows why */
		e = lender->allgather(comm, &vote, votes, sizeof(vote) / 4, FTL_I32);
		is_attached = e == FTL_OK && is_all_attached(votes, n, outcome);
	}
	free(votes);
	if (is_attached) {
		*out = s;
		outcome->why[0] = '\0';
	} else {
		ftl_comm_shm_detach(s);
	}
	if (e != FTL_OK) {
		const char *why = comm->error.message;
		ftl_comm_fail_diag(e, "%s", why + (strncmp(why, "ftl: ", 5) == 0 ? 5 : 0));
	}
	return e;
}
