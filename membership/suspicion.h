/* Lifeguard's dynamic suspicion timeout, alone (memberlist's suspicion.go is the model).
 *
 * A suspicion starts at the longest timeout, max, and shrinks toward min as independent members confirm
 * it: after c of the k expected confirmations the timeout is
 *     max - (max - min) * log(c + 1) / log(k + 1),   never below min.
 * Only confirmations from distinct members count, and the member that raised the suspicion is not a
 * confirmation. A pure function of time: the caller asks for the deadline and compares with `now`. */
#ifndef FTL_MEMBERSHIP_SUSPICION_H
#define FTL_MEMBERSHIP_SUSPICION_H

#include <stdbool.h>
#include <stdint.h>

#include "message.h"

#define FTL_SUSPICION_MAX_WITNESSES 16

typedef struct ftl_suspicion {
	int64_t start_us;
	int64_t min_us;
	int64_t max_us;
	int k;                  /* confirmations expected */
	int confirmations;      /* distinct confirmers so far (at most k are stored) */
	char witnesses[FTL_SUSPICION_MAX_WITNESSES][FTL_NAME_MAX]; /* [0] is the accuser */
	int n_witnesses;
	int checks;             /* times the owner has pinged the suspect itself (see swim_rumor.c) */
} ftl_suspicion;

void ftl_suspicion_start(ftl_suspicion *s, int64_t now_us, int64_t min_us, int64_t max_us, int k,
			 const char *accuser);
/* Records a confirmation; true if it was new (the caller then re-gossips the suspicion). */
bool ftl_suspicion_confirm(ftl_suspicion *s, const char *from);
/* When the member is declared dead unless it refutes first. */
int64_t ftl_suspicion_deadline(const ftl_suspicion *s);

#endif
