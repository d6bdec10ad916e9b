/* Rendezvous: from the member list to an ordered view with ranks, as a pure state machine (like
 * membership/swim.h: the caller passes `now`, hands in the alive members and peers' messages, and takes
 * out messages to send and views committed; no I/O, no clock).
 *
 * The protocol (docs/concepts/views.md and quorum.md):
 *  - A view is an epoch and an ordered member list; it changes only by a commit.
 *  - Candidate: the alive members, ordered so that the current view's survivors keep their relative order
 *    and joiners follow in join order (smaller generation = started earlier = joined first; ties by name).
 *    At most max_workers are in it; later members wait as hot spares, and a spare fills a dead member's
 *    place in the next view at once.
 *  - Coordinator: the first member of the candidate (the oldest survivor, or the oldest alive member when
 *    there is no view yet). It becomes rank 0 of the view it commits.
 *  - Every member sends the coordinator ready(candidate) when its candidate changes, and again every
 *    ready_interval until it holds a view matching its candidate (timeouts re-propose).
 *  - The coordinator commits epoch+1 (epoch = the largest it has heard of) when every member of its
 *    candidate has reported the same candidate, the size is within [min_workers, max_workers], the quorum
 *    rule holds, and — if the candidate adds members to the current view — the candidate has been stable
 *    for settle_us (so 4 -> 8 is one change, not four). A candidate that only removes members (deaths and
 *    leaves) commits without settling: detection already waited. (While joiners settle, a death commits
 *    the survivors alone at once; the joiners follow.) The coordinator then has the view chosen by Paxos
 *    among the previous view's members (a strict majority promises, then accepts; rdv_coord.c), so that a
 *    ready made stale by a partition can never let two sides commit the same epoch.
 *  - Quorum (no split brain): a new view needs a strict majority of the previous view's members that did
 *    not leave gracefully. The first view needs min_workers. A side without quorum pauses
 *    (FTL_RDV_WAITING_FOR_QUORUM) and commits nothing.
 *    An operator may waive the quorum of the current view (ftl_rdv_waive_quorum, below) when the missing
 *    members are gone for good; the first view may be held for expected_workers (nodes that start apart
 *    then do not form lineages of their own).
 *  - Scale: an operator may change the job's maximum while it runs (ftl_rdv_request_max). The request
 *    travels in readies to the coordinator, which commits the view's members again under the next epoch
 *    with the new maximum in the view (as a rebuild does, no readies awaited); every member then builds its
 *    candidate with it, so spares join (settled, as any join) or the youngest members step down to spares.
 *    Later views carry the maximum on.
 *  - Rebuild: a member whose communicator failed with no membership change asks for the same members under
 *    the next epoch (ftl_rdv_request_rebuild); the coordinator commits that through Paxos at once.
 *  - A dead coordinator is replaced by the next oldest (the candidate changes and so does its head).
 *  - Any message carries the sender's epoch; a member that hears of a newer view than its own adopts it as
 *    its previous view (as a joiner if it is not in it) so that the two sides of a healed partition agree.
 *  - The first view of a cluster starts a lineage (a digest of that view); later views inherit it. Within a
 *    lineage, views are ordered by epoch and never conflict (each is chosen by Paxos among the previous
 *    view's members, see rdv_coord.c). Only first views can be made apart (nodes that could not see each
 *    other with min_workers met on each side, or a worker whose seeds were unreachable training alone);
 *    when such clusters meet, the one that has done more work wins: more completed training steps (every
 *    message carries the sender's lineage's steps, ftl_rdv_set_steps), then the larger view, then the
 *    larger lineage; the other's members join it as joiners and their steps are discarded. Epochs are not
 *    compared across lineages: a stray that saw many joins and leaves has a high epoch and little work.
 *  - Replicas (a sharded model: rdv_replicas.h): when members declare a replica of replica_size, the candidate
 *    holds whole replicas only, replica by replica and index by index inside each, so rank = replica's rank
 *    * replica_size + index. A replica missing an index is out of the view; its other members wait as
 *    spares. min/max_workers and spares still count workers (a view holds as many whole replicas as fit).
 *  - Bootstrap data for the comm travels in the commit: every member's data address (tcp) and, when the
 *    caller provides one, an opaque blob made by the coordinator (the NCCL unique id of the new rank 0). */
#ifndef FTL_RENDEZVOUS_H
#define FTL_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdv_types.h"

typedef struct ftl_rdv ftl_rdv;

/* Makes dst a deep copy of src, notes included (dst's old members are freed); FTL_ERR_SYSTEM when out of
 * memory (dst is then cleared). O(n). */
ftl_err ftl_rdv_view_copy(ftl_rdv_view *dst, const ftl_rdv_view *src);
/* Frees the members array and resets v to "no view" (epoch 0, seq 0). */
void ftl_rdv_view_clear(ftl_rdv_view *v);

typedef struct ftl_rdv_options {
	const char *name;
	uint64_t generation;
	const char *data_addr;
	const char *replica;            /* ours (rdv_replicas.h), with replica_size > 0; NULL or "" otherwise */
	uint32_t replica_index;
	uint32_t replica_size;          /* 0: not in a replica */
	ftl_rdv_config config;
	ftl_rdv_blob_cb blob_cb;
	void *blob_ctx;
} ftl_rdv_options;

/* NULL with the reason in the diag when an option is bad. */
ftl_rdv *ftl_rdv_new(const ftl_rdv_options *o);
void ftl_rdv_delete(ftl_rdv *r);

/* The membership snapshot: the alive (and suspect) members, self included, and the names of members
 * that cannot be training on the far side of a partition, having left gracefully or died with a proof
 * (they do not count against the quorum). Call on every membership change. */
void ftl_rdv_set_members(ftl_rdv *r, int64_t now_us, const ftl_rdv_member *alive, size_t n_alive,
			 const char *const *left, size_t n_left);
/* A message from a peer; malformed input is dropped and counted (ftl_rdv_dropped). */
void ftl_rdv_receive(ftl_rdv *r, int64_t now_us, const uint8_t *data, size_t len);
void ftl_rdv_tick(ftl_rdv *r, int64_t now_us);
int64_t ftl_rdv_next_deadline(const ftl_rdv *r);

bool ftl_rdv_next_output(ftl_rdv *r, ftl_rdv_output *out);
void ftl_rdv_output_free(ftl_rdv_output *out);

/* True once when a new view was committed here (or adopted) since the last call; *view then points to it
 * (valid until the next call into r). This includes views we are not a member of (ftl_rdv_rank -1: a
 * spare, or a minority node catching up), which mean: hold no comm. */
bool ftl_rdv_take_new_view(ftl_rdv *r, const ftl_rdv_view **view);
/* The current view (epoch 0 when none), our rank in it (-1 when not a member) and the phase. */
const ftl_rdv_view *ftl_rdv_current(const ftl_rdv *r);
int ftl_rdv_rank(const ftl_rdv *r);
ftl_rdv_phase ftl_rdv_get_phase(const ftl_rdv *r);
/* Who we believe coordinates the next view ("" when nobody). */
const char *ftl_rdv_coordinator(const ftl_rdv *r);
uint64_t ftl_rdv_dropped(const ftl_rdv *r);

/* The training steps completed by the job of `lineage`, as this worker last stepped in it: taken when
 * lineage is our view's, and never lowering what is known (a worker that adopted another lineage's view
 * keeps that lineage's steps, heard in its messages; one that fell behind, a spare since, keeps what it
 * heard). Every message carries them; two lineages that meet compare them
 * first (see above on lineages); a message of our lineage that says more raises ours. Rank 0, the first
 * time its lineage has steps, sends its view to every member (spares included), so that all know the job
 * has work to lose (ftl_rdv_steps); otherwise it reads nothing and sends nothing. */
void ftl_rdv_set_steps(ftl_rdv *r, uint64_t lineage, uint64_t steps);
/* The most steps of our view's lineage set here or said by a message of it (0: none known). */
uint64_t ftl_rdv_steps(const ftl_rdv *r);

/* The communicator of view `epoch` failed here and membership shows no change to explain it: ask for the
 * same members again under the next epoch. Every rebuild of a communicator then has its own epoch, agreed
 * by all (a view's communicator is built at most once per member, so build attempts of different members
 * can never pair up out of step). The request travels in our readies to the coordinator, which commits the
 * same list through Paxos without waiting for readies. Ignored for a view since superseded, or one we are
 * not in. Our phase is "rendezvous" until the new epoch commits. */
void ftl_rdv_request_rebuild(ftl_rdv *r, int64_t now_us, uint64_t epoch);

/* The operator's way out of a lost quorum (`ftlctl quorum reset`): the members of the current view that are
 * not alive are treated as gone for good, so the survivors alone form the electorate of the next view. For
 * the current view epoch only; it travels in readies to the coordinator. Unsafe if the missing members are
 * in fact alive on the other side of a partition: that side may then train too. FTL_ERR_INVALID (nothing
 * changes) unless the phase is "waiting for quorum". */
ftl_err ftl_rdv_waive_quorum(ftl_rdv *r, int64_t now_us);

/* The operator's scale (`ftlctl scale --max N`): the job's maximum becomes max_workers from the next view
 * on (see above). Asked of a member of the current view; it travels in readies to the coordinator.
 * FTL_ERR_INVALID (nothing changes) with no view, on a worker outside it, or for a maximum below
 * config.min_workers or a replica, or above FTL_RDV_MAX_MEMBERS. */
ftl_err ftl_rdv_request_max(ftl_rdv *r, int64_t now_us, uint32_t max_workers);
/* A slow member to the spares (the pace verdict of the training side, train/pace.h): asked on a member of
 * the view, it travels in readies to the coordinator, which commits the view's members again under the next
 * epoch with `benched` in the view (as a scale does); every candidate then takes that member last, so the
 * oldest spare takes its place in the view after, and the benched member waits as the last spare.
 * FTL_ERR_INVALID, the reason in the diag: not a member of a view, the member not in it, no spare waiting
 * to take its place, or a job of replicas (a replica, not a worker, is what a spare replaces there). */
ftl_err ftl_rdv_request_bench(ftl_rdv *r, int64_t now_us, const char *name, uint64_t generation);
/* The job's maximum in force: the view's when an operator set one, else config.max_workers. */
uint32_t ftl_rdv_max_workers(const ftl_rdv *r);

/* The members of the current view that count toward the quorum and are not alive (a side without quorum
 * waits for them): up to cap names into names (valid until the next call into r); returns how many there
 * are. Fills *q when not NULL. O(view log n). */
size_t ftl_rdv_missing(const ftl_rdv *r, const char **names, size_t cap, ftl_rdv_quorum *q);

#endif
