/* ftlctl's exit statuses, one meaning each, so scripts can tell "no agent" from "agent said no". */
#ifndef FTL_CTL_EXIT_H
#define FTL_CTL_EXIT_H

enum ctl_exit {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAILED = 1,   /* the agent answered ok:false, did not answer in time, or hung up */
	CTL_EXIT_USAGE = 2,    /* bad command line */
	CTL_EXIT_NO_AGENT = 3, /* no socket, or nothing listening on it */
	CTL_EXIT_DENIED = 4,   /* the socket exists but this user may not open it */
};

#endif
