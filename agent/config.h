/* Agent settings: the public ftl_agent_config turned into checked, ready-to-use values. */
#ifndef FTL_AGENT_CONFIG_H
#define FTL_AGENT_CONFIG_H

#include <stdbool.h>
#include <sys/socket.h>

#include "ftl/agent.h"
#include "base/diag.h"
#include "ftl/ftl.h"
#include "base/log.h"
#include "node/node.h" /* the membership and rendezvous settings the node is built from */

typedef struct ftl_agent_settings {
	struct sockaddr_storage bind;
	char advertise[FTL_ADDR_MAX];   /* normalised numeric ip:port */
	ftl_swim_config swim;
	bool is_insecure;
	uint8_t key[FTL_KEY_SIZE];
	struct sockaddr_storage metrics; /* when cfg.metrics_addr is set */
	ftl_logger log;                  /* the agent's logger: its level, name and callback (log.h) */
} ftl_agent_settings;

/* The caller's struct (its struct_size bytes) over this library's defaults into full; FTL_ERR_INVALID when
 * its size is not one this library knows (base/sized.h). */
ftl_err ftl_agent_config_widen(const ftl_agent_config *in, ftl_agent_config *full);

/* Checks every setting; an error with the diagnostic naming the bad one (FTL_* variable) and what is
 * expected. */
ftl_err ftl_agent_config_resolve(const ftl_agent_config *c, ftl_agent_settings *out);

#endif
