/* Proof of death: a refused connection from a member's own address declares it dead at once.
 *
 * Why it is safe: suspicion exists because silence is ambiguous (slow, paused, partitioned or dead look
 * alike). A refusal is not silence. The kernel at the member's advertised address answered, and said no
 * process listens on the port our member owned: the process is gone. A paused process keeps its
 * listening socket (its kernel still accepts), a partitioned one answers nothing, an unreachable host
 * is an error other than a refusal: none of them can produce this proof, so they keep the full SWIM +
 * Lifeguard path. The proof is about one life: a result for a generation we no longer hold, or an
 * address the member no longer advertises, proves nothing (a restart on the same port accepts, and
 * joins with its new generation).
 *
 * When: the caller hints that a connection to the member reset (ftl_swim_hint), or a direct probe of it
 * went unanswered (swim_probe.c). The core stays pure: it asks (FTL_OUTPUT_CHECK, with a timeout of one
 * probe timeout) and the caller reports (ftl_swim_check_done). At most FTL_SWIM_MAX_PROOFS checks are
 * outstanding, one per member life; a result after its deadline is ignored. O(FTL_SWIM_MAX_PROOFS).
 *
 * Telling everyone: a proven death is gossiped like any other, but no other node has run a suspicion of
 * its own as a backstop. A node that missed every copy of the rumor (λ=2 in the local profile leaves a
 * few of 100) would keep the member alive until its own probe reaches it, and after the others reap
 * it, its push-pull would bring the member back as a join. So the prover also sends the dead rumor to
 * every live member once, directly: N-1 packets per proven death, which is rare.
 *
 * A second proof, from the caller: a witness on the member's own host saw the kernel release a lock that
 * only the member's process held (agent/witness.h). The kernel does that as the process's threads exit,
 * before it frees the process's memory and long before its sockets close, so it comes first where both
 * could. Same rule, same telling. */
#include "swim_internal.h"

#include <string.h>

static void forget_expired(ftl_swim *s, int64_t now_us)
{
	for (int i = s->n_proofs; i-- > 0;)
		if (now_us > s->proofs[i].expires_us)
			s->proofs[i] = s->proofs[--s->n_proofs];
}

/* Index of the check outstanding for that life, or -1 when there is none (a lookup). */
static int find_proof(const ftl_swim *s, const char *name, uint64_t generation)
{
	for (int i = 0; i < s->n_proofs; i++)
		if (s->proofs[i].generation == generation && strcmp(s->proofs[i].name, name) == 0)
			return i;
	return -1;
}

void ftl_swim_proof_request(ftl_swim *s, int64_t now_us, const ftl_member *m)
{
	forget_expired(s, now_us);
	if (s->n_proofs == FTL_SWIM_MAX_PROOFS || find_proof(s, m->name, m->generation) >= 0 ||
	    !ftl_swim_is_live(s, m, now_us) || strcmp(m->name, s->name) == 0)
		return;
	ftl_swim_output *out = ftl_fifo_push(&s->outputs);
	if (!out)
		return;
	int64_t timeout = s->cfg.probe_timeout_us;
	memset(out, 0, offsetof(ftl_swim_output, data));
	out->kind = FTL_OUTPUT_CHECK;
	strcpy(out->to_addr, m->addr);
	strcpy(out->to_name, m->name);
	out->generation = m->generation;
	out->timeout_us = timeout;
	ftl_proof *p = &s->proofs[s->n_proofs++];
	strcpy(p->name, m->name);
	strcpy(p->addr, m->addr);
	p->generation = m->generation;
	p->expires_us = now_us + 2 * timeout; /* room for the caller's own lateness */
	s->stats.checks++;
}

static void tell_everyone(ftl_swim *s, int64_t now_us, const ftl_member *dead)
{
	ftl_msg msg;
	ftl_swim_fill_rumor(&msg, FTL_MSG_DEAD, dead, s->name);
	for (uint32_t i = 0; i < s->members.len; i++) {
		const ftl_member *m = &s->members.arr[i];
		if (m != dead && strcmp(m->name, s->name) != 0 && ftl_swim_is_live(s, m, now_us))
			ftl_swim_send(s, m->name, m->addr, &msg, NULL);
	}
}

void ftl_swim_check_done(ftl_swim *s, int64_t now_us, const char *name, uint64_t generation, const char *addr,
			 ftl_swim_check_result result)
{
	forget_expired(s, now_us);
	int i = find_proof(s, name, generation);
	if (i < 0)
		return; /* not asked, or asked too long ago */
	bool is_same_addr = strcmp(s->proofs[i].addr, addr) == 0;
	s->proofs[i] = s->proofs[--s->n_proofs];
	if (result != FTL_CHECK_REFUSED || !is_same_addr || s->is_leaving)
		return;
	s->stats.checks_refused++;
	ftl_member *m = ftl_members_find(&s->members, name);
	if (!m || m->generation != generation || strcmp(m->addr, addr) != 0 || !ftl_swim_is_live(s, m, now_us))
		return;
	ftl_swim_declare_dead(s, now_us, m, FTL_DEATH_REFUSED);
	tell_everyone(s, now_us, m);
}

void ftl_swim_witnessed_death(ftl_swim *s, int64_t now_us, const char *name, uint64_t generation)
{
	s->stats.witnessed++;
	ftl_member *m = ftl_members_find(&s->members, name);
	if (s->is_leaving || !m || m->generation != generation || strcmp(name, s->name) == 0 ||
	    !ftl_swim_is_live(s, m, now_us))
		return;
	ftl_swim_declare_dead(s, now_us, m, FTL_DEATH_WITNESSED);
	tell_everyone(s, now_us, m);
}
