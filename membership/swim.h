/* SWIM + Lifeguard membership as a pure state machine.
 *
 * The caller owns every clock and socket. It passes `now` (microseconds on any monotonic clock) into
 * every call, hands in the datagrams it receives, calls ftl_swim_tick() at ftl_swim_next_deadline(), and
 * takes out what to send (ftl_swim_next_output) and what changed (ftl_swim_next_event). The real agent
 * drives it from a libuv loop; the simulator drives thousands of instances on virtual time.
 *
 * How it works (SWIM, with memberlist's and Lifeguard's refinements):
 *  - Failure detection. Each probe period a node pings the next member of a shuffled round. No ack
 *    within probe_timeout: it asks k others to ping-req the target (they nack if they hear nothing,
 *    Lifeguard). No ack by the end of the period: the target becomes suspect.
 *  - Suspicion. A suspect that hears of it refutes by raising its incarnation. Otherwise it is declared
 *    dead when the suspicion times out; the timeout starts at max and shrinks toward min as distinct
 *    members independently suspect it too (Lifeguard). A ping to a suspect carries the suspicion (the
 *    buddy rule), so the suspect learns of it at once.
 *  - Local health (Lifeguard). Missed acks and nacks raise the node's own health score, which stretches
 *    its probe period and timeout, so a slow node does not accuse healthy peers.
 *  - Dissemination. Rumors (alive, suspect, dead, left) ride on every packet and on gossip packets sent
 *    to gossip_nodes random members each gossip interval; each rumor is sent lambda*ceil(log10(N+1))
 *    times, least-sent and newest first. Push-pull full-state exchange (over TCP, by the transport) on
 *    join and periodically repairs whatever gossip missed.
 *  - Proof of death (ours, not the paper's). When a direct probe goes unanswered, or the caller hints
 *    that a connection to a member reset, the core asks the caller to connect to the member's advertised
 *    address (FTL_OUTPUT_CHECK) and takes the outcome back (ftl_swim_check_done). A refusal from that
 *    address for the life we know proves the process that owned the port is gone: the member is declared
 *    dead at once, without the suspicion wait, and the dead rumor is gossiped as usual. Nothing slow,
 *    paused or partitioned answers with a refusal (its kernel still accepts, or nothing answers), so
 *    those keep the full suspicion path; a restart on the same address accepts, and joins with its new
 *    generation through its own join.
 *  - Identity is (name, generation); a larger generation replaces an entry whatever its state, except that
 *    a name held by a live member is refused to a new life at another address (swim_name.c): the live
 *    member is never displaced by a second process given its name, and the claimant is told and stops.
 *    Dead and left members are reaped after reap_after. A graceful leave is gossiped as `left`, never `dead`.
 * Packets and push-pull frames are plaintext here: the caller's peer channel seals every one on its way
 * out and opens it on arrival (agent/seal.h), and counts what does not open with ftl_swim_count_drop. The
 * keyring is the one key state of the cluster; the core changes it by key operations (swim_keys.c).
 * What fails to decode is dropped and counted. */
#ifndef FTL_MEMBERSHIP_SWIM_H
#define FTL_MEMBERSHIP_SWIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "key_census.h"
#include "members.h"
#include "swim_types.h"

typedef struct ftl_swim ftl_swim;

/* NULL with the reason in the diag when an option is bad (the message names it). */
ftl_swim *ftl_swim_new(const ftl_swim_options *opt, int64_t now_us);
void ftl_swim_delete(ftl_swim *s);

/* Inputs. A datagram, opened (at most FTL_UDP_PACKET_MAX - FTL_KEYRING_OVERHEAD bytes). */
void ftl_swim_receive(ftl_swim *s, int64_t now_us, const uint8_t *data, size_t len);
/* Counts input the caller dropped before it reached the core (a datagram or frame that did not open). */
void ftl_swim_count_drop(ftl_swim *s, ftl_swim_drop why);
void ftl_swim_tick(ftl_swim *s, int64_t now_us);
/* The latest time by which ftl_swim_tick must be called (it may be in the past: call it now). */
int64_t ftl_swim_next_deadline(const ftl_swim *s);
/* Queues a join push-pull with each seed address. */
void ftl_swim_join(ftl_swim *s, const char *const *seed_addrs, size_t n);
/* Graceful leave: gossip `left` about ourselves and stop probing. */
void ftl_swim_leave(ftl_swim *s, int64_t now_us);
/* True once the leave rumor has been sent as often as any rumor is. */
bool ftl_swim_leave_done(const ftl_swim *s);
/* A peer hint (for example a reset connection): probe this member now instead of in its turn.
 * Confirmation rules are unchanged: a hint alone never makes a member suspect. */
void ftl_swim_hint(ftl_swim *s, int64_t now_us, const char *name);

/* The outcome of a check the core asked for, named as the output named it. A refusal declares the
 * member dead at once when it is still that life at that address and still alive or suspect; anything
 * else, or a check the core did not ask for (or asked for too long ago), changes nothing. */
void ftl_swim_check_done(ftl_swim *s, int64_t now_us, const char *name, uint64_t generation, const char *addr,
			 ftl_swim_check_result result);
/* A witness on the member's own host saw that life end: the kernel released a lock only that process held
 * (agent/witness.h). A proof like a refusal, so the same rule: dead at once when it is still that life and
 * still alive or suspect, and told to every live member directly; anything else changes nothing. */
void ftl_swim_witnessed_death(ftl_swim *s, int64_t now_us, const char *name, uint64_t generation);
/* New metadata: gossiped with a raised incarnation. FTL_ERR_INVALID if longer than FTL_META_MAX,
 * FTL_ERR_SYSTEM on OOM. */
ftl_err ftl_swim_set_meta(ftl_swim *s, int64_t now_us, const uint8_t *meta, uint16_t len);

/* A keyring change for the whole cluster: applied here at once, then gossiped so every member applies it
 * (once: each change carries a random serial). Rotate by install, then use, then remove, letting each
 * step reach everyone first (ftlctl keys ...). FTL_ERR_INVALID if it cannot be applied here (the reason in
 * the diag). Refused before anything changes: `use` of a key that some live member does not
 * hold, and `remove` of a key that some live member still seals with (both would cut members off). */
ftl_err ftl_swim_key_op(ftl_swim *s, int64_t now_us, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE]);
/* Which live members hold which keys, as their gossiped fingerprints say (key_census.h). */
void ftl_swim_key_census(ftl_swim *s, ftl_key_census *out);

/* Learns a member without gossiping it or raising an event: for a node that starts from a member list
 * it already trusts (the simulator starting converged, an agent restoring a cached list). FTL_ERR_INVALID
 * for this node, a member already known or a full table; FTL_ERR_SYSTEM on OOM. */
ftl_err ftl_swim_add_known(ftl_swim *s, int64_t now_us, const ftl_msg_alive *a);

/* Push-pull: the plaintext of our full state (malloc'd, the caller frees; the channel seals it), and the
 * merge of a peer's, opened. encode fails with FTL_ERR_SYSTEM on OOM; merge with FTL_ERR_INVALID (counted)
 * for a frame that does not decode, the decoder's reason in the diag, or FTL_ERR_SYSTEM on OOM. */
ftl_err ftl_swim_push_pull_encode(ftl_swim *s, bool is_join, uint8_t **frame, size_t *len);
ftl_err ftl_swim_push_pull_merge(ftl_swim *s, int64_t now_us, const uint8_t *frame, size_t len, bool *is_join);

/* Outputs; each returns false when there is nothing more. */
bool ftl_swim_next_output(ftl_swim *s, ftl_swim_output *out);
bool ftl_swim_next_event(ftl_swim *s, ftl_swim_event *ev);

/* Whether a live member at another address holds our name (a refusal naming our life arrived): the
 * refusal (who holds it where, who said so), or NULL. Once refused the node has stopped: it probes,
 * gossips and takes in nothing more, and the caller should stop with the refusal's sentence. */
const ftl_msg_name_taken *ftl_swim_name_taken(const ftl_swim *s);

/* Reading state. */
const char *ftl_swim_name(const ftl_swim *s);
uint64_t ftl_swim_generation(const ftl_swim *s);
uint64_t ftl_swim_incarnation(const ftl_swim *s);
const ftl_members *ftl_swim_members(const ftl_swim *s); /* self included */
const ftl_member *ftl_swim_find(const ftl_swim *s, const char *name);
uint32_t ftl_swim_count(const ftl_swim *s, ftl_member_state state);
int ftl_swim_health_score(const ftl_swim *s);
const ftl_swim_stats *ftl_swim_get_stats(const ftl_swim *s);
const ftl_swim_config *ftl_swim_get_config(const ftl_swim *s);
ftl_keyring *ftl_swim_keyring(ftl_swim *s);

#endif
