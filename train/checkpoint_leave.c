/* Leaving and checkpoints. A worker that leaves (the program's SIGTERM handling calls ftl_agent_leave; a
 * Kubernetes preStop runs `ftlctl leave`) takes no more steps. When it was rank 0 and the job is scaled
 * to zero, or every worker leaves at once, the steps since the last checkpoint would leave with it: so
 * rank 0 writes one more before it goes, and waits until it is durable.
 * Only the thread that runs the steps sees a consistent state (between two steps), so the checkpoint is
 * taken there and nowhere else: by ftl_execute when it finds the agent has left, and by ftl_agent_leave
 * when that very thread calls it between steps (ftl_checkpoint_final checks the thread). A leave asked
 * from another thread while a step runs is picked up by the next ftl_execute, which returns "left". */
#include "agent/agent_training.h"
#include "checkpoint.h"

#include "training.h"

void ftl_checkpoint_before_leaving(ftl_agent *a)
{
	ftl_training *t = ftl_agent_training(a);
	if (!ftl_agent_is_training(a) || !t->ckpt.writer)
		return;
	ftl_agent_lock(a);
	ftl_job_status last = ftl_agent_views_locked(a)->status; /* the view this worker last stepped in, as its training thread left it */
	ftl_agent_unlock(a);
	if (last.rank == 0 && last.world_size > 0)
		ftl_checkpoint_final(&t->ckpt, &t->state, last.view_epoch, (uint32_t)last.world_size);
}
