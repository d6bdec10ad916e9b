/* ftl: the public C API, one include for all of it; each header is one object and can be included alone.
 *
 *   ftl/error.h       ftl_err, the error convention and the calling thread's last error
 *   ftl/comm.h        communicators and their collectives, the one allreduce family (usable without an agent)
 *   ftl/agent.h       the agent: membership, views, the control socket
 *   ftl/log.h         log records, their levels and fields, and the line each is written as
 *   ftl/execute.h     ftl_execute, the elastic training step, its state, sampler and job status
 *   ftl/elastic.h     the learning-rate policy as the world size changes
 *   ftl/gradient.h    gradient buckets (bf16 on the wire with error feedback)
 *   ftl/checkpoint.h  reading a checkpoint file or directory
 *   ftl/settings.h    settings by name (the opaque ftl_settings) and the FTL_* names
 *   ftl/version.h     the library's version */
#ifndef FTL_FTL_H
#define FTL_FTL_H

#include "ftl/error.h"
#include "ftl/version.h"
#include "ftl/comm.h"
#include "ftl/log.h"
#include "ftl/agent.h"
#include "ftl/execute.h"
#include "ftl/elastic.h"
#include "ftl/gradient.h"
#include "ftl/checkpoint.h"
#include "ftl/settings.h"

#endif /* FTL_FTL_H */
