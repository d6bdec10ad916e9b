"""How the ftl example programs start and end: the agent made from the FTL_* settings, the program's
main(agent), and ftl's errors turned into exit statuses, in one place for every program.

Why not in each program: it is the same dozen lines everywhere (torch_digits.py spells them out), and
without them a program's diff against its plain DDP twin (examples/*_ddp.py) shows what ftl changes in the
training loop only. main(agent) registers its state; its first agent.execute starts the agent."""
import os
import sys

import ftl


def run(main):
    """main(agent)'s exit status: 2 for a bad FTL_* setting, 1 when training cannot go on (the reason on
    stderr), 0 when this worker left (SIGTERM in the program, or `ftlctl leave`: a Kubernetes preStop hook)."""
    program = os.path.basename(sys.argv[0])
    try:
        agent = ftl.Agent()
    except ftl.ConfigError as e:
        print(f"{program}: {e}", file=sys.stderr)
        return 2
    try:
        return main(agent)
    except ftl.Error as e:
        if agent.has_left:  # `ftlctl leave`, or a spare whose job's state is gone (its workers left at the end)
            why = e if e.code == ftl.errors.STATE_LOST else "ftlctl leave"
            print(f"{program}: left the job ({why})", file=sys.stderr)
            return 0
        print(f"{program}: {e}", file=sys.stderr)
        return 1
    finally:
        agent.__exit__(None, None, None)  # what `with agent:` does at its end: leave (unless gone), close
