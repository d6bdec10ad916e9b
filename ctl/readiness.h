/* `ftlctl ready`: is this worker part of the training job right now? A Kubernetes readiness probe (or
 * any script) asks it. Ready means: this member holds a rank in a committed view and its side of the
 * cluster has quorum. A worker still looking for peers, a hot spare above FTL_MAX_WORKERS, and a worker
 * cut off in a minority (waiting for quorum) are not ready. Decided from a STATUS reply (PROTOCOL.md)
 * alone, so it is a pure function.
 *
 * With is_spare_ready (`ftlctl ready --spares`), a hot spare of a committed view is ready too: it is
 * connected, in the side with quorum, and takes a rank at the next view. Kubernetes needs that where a
 * PodDisruptionBudget counts pods: spares that are never ready count as disrupted forever and block
 * `kubectl drain`. */
#ifndef FTL_CTL_READINESS_H
#define FTL_CTL_READINESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* True when ready. Either way, reason gets one line for the probe's log, e.g.
 * "ready: rank 2 of 5 in view 7 (training)" or "not ready: waiting for quorum (rank 2 of 5 in view 7)". */
bool ctl_readiness(const json_t *status, bool is_spare_ready, char *reason, size_t reason_len);

#endif
