/* A member's life lock, the file half of the witness (witness.h): one small file under /dev/shm per agent
 * life, holding a robust, process-shared mutex that the owner's loop thread keeps locked. */
#ifndef FTL_AGENT_WITNESS_LIFE_H
#define FTL_AGENT_WITNESS_LIFE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "node/node.h" /* FTL_NAME_MAX */

#define FTL_LIFE_DIR "/dev/shm"
#define FTL_LIFE_PATH_MAX 96

typedef struct ftl_life {
	uint64_t magic;
	uint32_t version;
	_Atomic uint32_t is_leaving; /* set by the owner before a clean unlock: a stop, not a death */
	uint64_t generation;
	char name[FTL_NAME_MAX];
	pthread_mutex_t lock;        /* its futex word is what watchers wait on (ftl_life_word) */
} ftl_life;

/* The file's path for a life: FTL_LIFE_DIR/ftl-life-<uid>-<128-bit hash of name and generation>. */
void ftl_life_path(char out[FTL_LIFE_PATH_MAX], const char *name, uint64_t generation);
/* The owner: makes the file under a temporary name, locks it on the calling thread, then renames it into
 * place, so a watcher never sees it unlocked. NULL with the reason in the diag. */
ftl_life *ftl_life_create(const char *name, uint64_t generation);
/* The owner, as it stops: marks leaving, unlocks, wakes every watcher, removes the file, unmaps. */
void ftl_life_release(ftl_life *l);
/* A watcher: the life's file when it is on this host, ours (uid, mode 0600, size) and names that life;
 * otherwise NULL (most often: not on this host). */
ftl_life *ftl_life_open(const char *name, uint64_t generation);
void ftl_life_unmap(ftl_life *l);
/* Removes our files whose owner died unwatched (the kernel marked the lock); others' are left alone. */
void ftl_life_sweep(void);
/* The kernel's view of the lock: the owner's thread id, FUTEX_WAITERS, FUTEX_OWNER_DIED (linux/futex.h). */
_Atomic uint32_t *ftl_life_word(ftl_life *l);

#endif
