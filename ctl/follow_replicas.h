/* `ftlctl follow-replicas`: lets `kubectl scale` drive the job's maximum (see follow_replicas.c). */
#ifndef FTL_CTL_FOLLOW_REPLICAS_H
#define FTL_CTL_FOLLOW_REPLICAS_H

#include "socket_choice.h"

/* Runs the command: argv[0] is "follow-replicas", its options follow. Returns only on SIGTERM or SIGINT
 * (CTL_EXIT_OK) or a bad option (CTL_EXIT_USAGE). Built without libcurl, it says so and fails. */
int ctl_follow_replicas(const ctl_target *target, int argc, char **argv);

#endif
