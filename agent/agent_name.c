/* The two sentences of a name held twice (membership/swim_name.c). Where a second process claims a live
 * member's name, each member that refuses it warns, naming the name, both addresses and the fix; the second
 * process hears that it was refused and stops with that error, kept for ftl_agent_error (and ftl-agent exits
 * 1 with it): it never joins, and the live member is never displaced. */
#include "agent_internal.h"

#include <string.h>

#include "base/log.h"

#define NAME_FIX "give each process its own FTL_NAME (ftlrun: --name-prefix)"

static void warn_refused(ftl_agent *a, const ftl_swim_event *ev)
{
	bool is_ours = strcmp(ev->name, a->cfg.name) == 0;
	ftl_log(&a->set.log, FTL_LOG_WARN, "membership",
		FTL_MSG("refused the name %s to a second process at %s: the live member %s at %s%s holds it; " NAME_FIX,
			ev->name, ev->addr, ev->name, ev->holder_addr, is_ours ? " (this agent)" : ""),
		FTL_F_STR("member", ev->name), FTL_F_STR("addr", ev->addr), FTL_F_STR("holder_addr", ev->holder_addr),
		FTL_F_UINT("generation", ev->generation));
}

static void stop_taken(ftl_agent *a, const ftl_swim_event *ev)
{
	ftl_diag_set(FTL_ERR_REFUSED,
		     "the name %s is taken: the live member %s at %s holds it (%s refused this agent at %s); this agent "
		     "stops: choose another FTL_NAME for it (ftlrun: --name-prefix)",
		     ev->name, ev->name, ev->holder_addr, ev->from, ev->addr);
	ftl_log(&a->set.log, FTL_LOG_ERROR, "membership", ftl_diag_message(), FTL_F_STR("member", ev->name),
		FTL_F_STR("addr", ev->addr), FTL_F_STR("holder_addr", ev->holder_addr), FTL_F_STR("from", ev->from));
	ftl_agent_fail(a);
}

void ftl_agent_name_event(ftl_agent *a, const ftl_swim_event *ev)
{
	if (ev->type == FTL_EVENT_NAME_REFUSED)
		warn_refused(a, ev);
	else if (ev->type == FTL_EVENT_NAME_TAKEN)
		stop_taken(a, ev);
}
