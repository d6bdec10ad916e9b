/* The witness (witness.h): which local members to watch, and the one thread that waits on their life locks.
 * The loop thread chooses (ftl_witness_update) and only ever adds entries or marks them unwanted; the
 * watching thread alone frees them, so it can wait on their words outside the mutex. */
#include "witness.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/diag.h"
#include "witness_absent.h"
#include "witness_life.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

#define MAX_ENTRIES (4 * FTL_WITNESS_WATCH) /* wanted ones, and unwanted ones the thread has not freed yet */

typedef struct watched {
	ftl_life *life;
	char name[FTL_NAME_MAX];
	uint64_t generation;
	bool is_wanted; /* under mu: the loop thread still wants it watched */
	bool is_over;   /* the thread's own: reported or stopped cleanly, nothing more to wait for */
	bool is_dead;   /* the thread's own: its owner died, not yet reported */
} watched;

struct ftl_witness {
	char name[FTL_NAME_MAX];
	uint64_t generation;
	ftl_witness_report_fn report;
	void *ctx;
	ftl_life *own;

	pthread_mutex_t mu; /* guards what follows */
	watched *entries[MAX_ENTRIES];
	int n_entries;
	ftl_absent_lives absent; /* the loop thread's: lives whose file was not here, not opened again */
	_Atomic uint64_t lookups; /* life files looked for (ftl_life_open), for status and tests */
	bool is_stopping;
	bool has_thread;
	pthread_t thread;
	_Atomic uint32_t control; /* bumped, and woken, whenever the thread must look again */
};

static long futex_waitv(struct futex_waitv *w, unsigned n)
{
	return syscall(SYS_futex_waitv, w, n, 0, NULL, CLOCK_MONOTONIC);
}

static void poke(ftl_witness *w)
{
	atomic_fetch_add(&w->control, 1);
	syscall(SYS_futex, (uint32_t *)(void *)&w->control, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Frees the entries the loop thread gave up (thread side, under mu). */
static void drop_unwanted(ftl_witness *w)
{
	for (int i = w->n_entries; i-- > 0;) {
		watched *e = w->entries[i];
		if (e->is_wanted)
			continue;
		ftl_life_unmap(e->life);
		free(e);
		w->entries[i] = w->entries[--w->n_entries];
	}
}

/* One look at a watched word: false when it needs no wait (over, or changed under us: look again). */
static bool arm(ftl_witness *w, watched *e, struct futex_waitv *out)
{
	_Atomic uint32_t *word = ftl_life_word(e->life);
	uint32_t v = atomic_load(word);
	if (v & FUTEX_OWNER_DIED) {
		e->is_over = true;
		e->is_dead = true; /* reported with the others found dead in this pass (watch) */
		/* The kernel woke one waiter of the dead lock; it may have been another process's witness. */
		syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		char path[FTL_LIFE_PATH_MAX];
		ftl_life_path(path, e->name, e->generation);
		unlink(path);
		return false;
	}
	if ((v & FUTEX_TID_MASK) == 0) { /* unlocked: a clean stop (or never ours to watch) */
		e->is_over = true;
		return false;
	}
	if (!(v & FUTEX_WAITERS)) { /* so that the owner's unlock, or the kernel at its death, wakes a waiter */
		if (!atomic_compare_exchange_strong(word, &v, v | FUTEX_WAITERS))
			return false;
		v |= FUTEX_WAITERS;
	}
	*out = (struct futex_waitv){.val = v, .uaddr = (uintptr_t)word, .flags = FUTEX_32};
	return true;
}

static void *watch(void *arg)
{
	ftl_witness *w = arg;
	for (;;) {
		watched *look[MAX_ENTRIES];
		int n = 0;
		pthread_mutex_lock(&w->mu);
		if (w->is_stopping) {
			pthread_mutex_unlock(&w->mu);
			return NULL;
		}
		drop_unwanted(w);
		uint32_t seen = atomic_load(&w->control);
		for (int i = 0; i < w->n_entries; i++)
			if (!w->entries[i]->is_over)
				look[n++] = w->entries[i];
		pthread_mutex_unlock(&w->mu);

		struct futex_waitv waits[1 + MAX_ENTRIES];
		waits[0] = (struct futex_waitv){
			.val = seen, .uaddr = (uintptr_t)&w->control, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG};
		unsigned n_waits = 1;
		bool is_settled = true;
		for (int i = 0; i < n; i++)
			if (arm(w, look[i], &waits[n_waits]))
				n_waits++;
			else
				is_settled = false;
		/* A burst of kills, reported back to back: the agent then agrees one view without all of them. */
		for (int i = 0; i < n; i++)
			if (look[i]->is_dead) {
				look[i]->is_dead = false;
				w->report(w->ctx, look[i]->name, look[i]->generation);
			}
		if (is_settled)
			futex_waitv(waits, n_waits); /* returns on any change, a poke, or a signal: look again */
	}
}

static bool is_supported(void)
{
	errno = 0;
	return futex_waitv(NULL, 0) < 0 && errno != ENOSYS;
}

ftl_witness *ftl_witness_new(const char *name, uint64_t generation, ftl_witness_report_fn report, void *ctx)
{
	if (!is_supported()) {
		ftl_diag_set(FTL_ERR_SYSTEM, "no witness: this kernel has no futex_waitv (Linux 5.16)");
		return NULL;
	}
	ftl_witness *w = calloc(1, sizeof(*w));
	if (!w) {
		ftl_diag_set(FTL_ERR_SYSTEM, "out of memory");
		return NULL;
	}
	strncpy(w->name, name, FTL_NAME_MAX - 1);
	w->generation = generation;
	w->report = report;
	w->ctx = ctx;
	pthread_mutex_init(&w->mu, NULL);
	ftl_life_sweep();
	return w;
}

ftl_err ftl_witness_hold(ftl_witness *w)
{
	w->own = ftl_life_create(w->name, w->generation);
	return w->own ? FTL_OK : ftl_diag_code();
}

void ftl_witness_release(ftl_witness *w)
{
	ftl_life_release(w->own);
	w->own = NULL;
}

static int by_name(const void *x, const void *y)
{
	return strcmp((*(const ftl_node_member *const *)x)->name, (*(const ftl_node_member *const *)y)->name);
}

/* The live members other than us, in name order starting after our name (a ring). NULL when none. */
static const ftl_node_member **ring_after_us(ftl_witness *w, const ftl_node_member *members, uint32_t n_members,
					       uint32_t *n_out)
{
	const ftl_node_member **ring = malloc(sizeof(*ring) * (n_members ? n_members : 1));
	uint32_t n = 0;
	for (uint32_t i = 0; ring && i < n_members; i++) {
		const ftl_node_member *m = &members[i];
		if ((m->state == FTL_MEMBER_ALIVE || m->state == FTL_MEMBER_SUSPECT) && strcmp(m->name, w->name) != 0)
			ring[n++] = m;
	}
	if (!ring || n == 0) {
		free(ring);
		return NULL;
	}
	qsort(ring, n, sizeof(*ring), by_name);
	uint32_t start = 0;
	while (start < n && strcmp(ring[start]->name, w->name) < 0)
		start++;
	const ftl_node_member **rotated = malloc(sizeof(*rotated) * n);
	if (rotated)
		for (uint32_t k = 0; k < n; k++)
			rotated[k] = ring[(start + k) % n];
	free(ring);
	*n_out = rotated ? n : 0;
	return rotated;
}

static watched *find_entry(ftl_witness *w, const char *name, uint64_t generation)
{
	for (int i = 0; i < w->n_entries; i++)
		if (w->entries[i]->is_wanted && w->entries[i]->generation == generation &&
		    strcmp(w->entries[i]->name, name) == 0)
			return w->entries[i];
	return NULL;
}

static ftl_err start_thread(ftl_witness *w)
{
	if (w->has_thread || w->is_stopping)
		return FTL_OK;
	if (pthread_create(&w->thread, NULL, watch, w) != 0)
		return ftl_diag_set(FTL_ERR_SYSTEM, "cannot start the witness thread");
	w->has_thread = true;
	return FTL_OK;
}

void ftl_witness_update(ftl_witness *w, const ftl_node_member *members, uint32_t n_members)
{
	uint32_t n = 0;
	const ftl_node_member **ring = ring_after_us(w, members, n_members, &n);
	watched *chosen[FTL_WITNESS_WATCH];
	int n_chosen = 0;
	ftl_absent_trim(&w->absent, n_members);
	pthread_mutex_lock(&w->mu);
	for (uint32_t k = 0; k < n && n_chosen < FTL_WITNESS_WATCH; k++) {
		watched *e = find_entry(w, ring[k]->name, ring[k]->generation);
		if (!e && w->n_entries < MAX_ENTRIES && !ftl_absent_has(&w->absent, ring[k]->name, ring[k]->generation)) {
			errno = 0;
			atomic_fetch_add(&w->lookups, 1);
			ftl_life *life = ftl_life_open(ring[k]->name, ring[k]->generation);
			if (!life && errno != EMFILE && errno != ENFILE && errno != ENOMEM) /* not out of descriptors: absent */
				ftl_absent_add(&w->absent, ring[k]->name, ring[k]->generation);
			if (life && (e = calloc(1, sizeof(*e)))) {
				e->life = life;
				strcpy(e->name, ring[k]->name);
				e->generation = ring[k]->generation;
				e->is_wanted = true;
				w->entries[w->n_entries++] = e;
			} else {
				ftl_life_unmap(life);
			}
		}
		if (e)
			chosen[n_chosen++] = e;
	}
	for (int i = 0; i < w->n_entries; i++) {
		bool is_chosen = false;
		for (int c = 0; c < n_chosen; c++)
			is_chosen |= chosen[c] == w->entries[i];
		w->entries[i]->is_wanted = is_chosen;
	}
	if (n_chosen)
		start_thread(w);
	pthread_mutex_unlock(&w->mu);
	free(ring);
	poke(w);
}

void ftl_witness_update_from_node(ftl_witness *w, const ftl_node *node)
{
	if (!w)
		return;
	ftl_node_snapshot snap;
	ftl_node_read(node, &snap);
	ftl_node_member *members = malloc(sizeof(*members) * (snap.n_members ? snap.n_members : 1));
	uint32_t n = 0;
	while (members && ftl_node_member_at(node, n, &members[n]))
		n++;
	if (members)
		ftl_witness_update(w, members, n);
	free(members);
}

int ftl_witness_watching(ftl_witness *w)
{
	int n = 0;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < w->n_entries; i++)
		n += w->entries[i]->is_wanted;
	pthread_mutex_unlock(&w->mu);
	return n;
}

uint64_t ftl_witness_lookups(ftl_witness *w)
{
	return atomic_load(&w->lookups);
}

void ftl_witness_stop(ftl_witness *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->is_stopping = true;
	bool has_thread = w->has_thread;
	w->has_thread = false;
	pthread_mutex_unlock(&w->mu);
	if (!has_thread)
		return;
	poke(w);
	pthread_join(w->thread, NULL);
}

void ftl_witness_delete(ftl_witness *w)
{
	if (!w)
		return;
	ftl_witness_stop(w);
	for (int i = 0; i < w->n_entries; i++) {
		ftl_life_unmap(w->entries[i]->life);
		free(w->entries[i]);
	}
	ftl_absent_free(&w->absent);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
