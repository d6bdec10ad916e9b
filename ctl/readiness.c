/* The readiness rule of `ftlctl ready` (see readiness.h). */
#include "readiness.h"

#include <stdio.h>
#include <string.h>

/* The phase in which a member that holds a rank is nevertheless not training (rendezvous.c's names). */
static const char waiting_for_quorum[] = "waiting for quorum";

/* This member's rank as the member table reports it, or -1 (null, absent, or self not listed). */
static json_int_t self_rank(const json_t *status)
{
	const char *self = json_string_value(json_object_get(json_object_get(status, "self"), "name"));
	const json_t *member;
	size_t i;
	if (self == NULL)
		return -1;
	json_array_foreach(json_object_get(status, "members"), i, member) {
		const char *name = json_string_value(json_object_get(member, "name"));
		const json_t *rank = json_object_get(member, "rank");
		if (name != NULL && strcmp(name, self) == 0)
			return json_is_integer(rank) ? json_integer_value(rank) : -1;
	}
	return -1;
}

/* What the rendezvous calls a member above FTL_MAX_WORKERS that waits for a rank. */
static const char hot_spare[] = "hot spare";

bool ctl_readiness(const json_t *status, bool is_spare_ready, char *reason, size_t reason_len)
{
	const json_t *view = json_object_get(status, "view");
	const char *phase = json_string_value(json_object_get(view, "phase"));
	json_int_t epoch = json_integer_value(json_object_get(view, "epoch"));
	json_int_t world = json_integer_value(json_object_get(view, "world_size"));
	json_int_t rank = self_rank(status);

	if (!json_is_object(view)) {
		snprintf(reason, reason_len, "not ready: this agent runs no training job (no view)");
		return false;
	}
	if (phase == NULL)
		phase = "?";
	if (epoch <= 0) {
		snprintf(reason, reason_len, "not ready: no view committed yet (%s)", phase);
		return false;
	}
	if (rank < 0 && is_spare_ready && strcmp(phase, hot_spare) == 0) {
		snprintf(reason, reason_len, "ready: hot spare of view %lld (world size %lld; --spares)", (long long)epoch,
			 (long long)world);
		return true;
	}
	if (rank < 0) {
		snprintf(reason, reason_len, "not ready: not a member of view %lld (%s)", (long long)epoch, phase);
		return false;
	}
	if (strcmp(phase, waiting_for_quorum) == 0) {
		snprintf(reason, reason_len, "not ready: %s (rank %lld of %lld in view %lld)", phase, (long long)rank,
			 (long long)world, (long long)epoch);
		return false;
	}
	snprintf(reason, reason_len, "ready: rank %lld of %lld in view %lld (%s)", (long long)rank, (long long)world,
		 (long long)epoch, phase);
	return true;
}
