/* The small things every user of rdv_msg.h needs: type names, ballot order, freeing a decoded message. */
#include "rdv_msg.h"

#include <stdlib.h>
#include <string.h>

const char *const rdv_msg_type_strs[RDV_MSG_TYPE_MAX] = {
	[RDV_MSG_READY] = "ready",
	[RDV_MSG_PREPARE] = "prepare",
	[RDV_MSG_PROMISE] = "promise",
	[RDV_MSG_ACCEPT] = "accept",
	[RDV_MSG_ACCEPTED] = "accepted",
	[RDV_MSG_REJECT] = "reject",
	[RDV_MSG_COMMIT] = "commit",
};

int rdv_ballot_cmp(const rdv_ballot *a, const rdv_ballot *b)
{
	if (a->round != b->round)
		return a->round < b->round ? -1 : 1;
	return strcmp(a->by, b->by);
}

void rdv_msg_free(rdv_msg *msg)
{
	free(msg->view.members);
	msg->view.members = NULL;
	msg->view.n = 0;
}
