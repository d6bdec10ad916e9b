"""The agent's log records in Python's `logging`, instead of its own lines on stderr.

`ftl.Agent(logger=logging.getLogger("myjob"))` (or `logger=True` for the logger named "ftl") hands libftl a
C callback that turns every record at or above FTL_LOG_LEVEL into a LogRecord on a child logger named after
its component ("myjob.membership", "myjob.rendezvous", "myjob.training", "myjob.checkpoint", ...): the level
mapped (debug, info, warn, error to DEBUG, INFO, WARNING, ERROR), the time libftl stamped, the message as
msg, and the typed fields as values, not text, in `record.ftl_fields` (a dict: str, int, float or bool), with
`record.ftl_agent` (the agent's name) and `record.ftl_component`. Without a logger the records stay lines on
stderr, as from C, which is what the launcher and the tests read.

Threads: libftl calls back on the training thread and the checkpoint writer as they log, and ctypes takes
the GIL for each record. Records of the agent's loop thread (membership, rendezvous) are queued and handed
over from one delivery thread instead (base/log_defer.c), so a handler that blocks, or a record waiting for
a GIL that a long C call holds, never holds up gossip: it only delays the records behind it (and past 4096
queued records, newer ones are dropped and counted in a warning). Still keep handlers quick (a
QueueHandler in front of a slow sink). The callback is kept alive by its Agent until the
agent is closed; agents that log into Python are closed at interpreter exit, before finalization, so no
record ever arrives in an interpreter that is going away.
"""
from __future__ import annotations

import atexit
import logging
import weakref
from typing import Any, Callable, Dict, Optional, Union

from ._lib import LOG_FN, text

# enum ftl_log_level, in order
_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
# enum ftl_log_field_type: END, STR, INT, UINT, HEX, DOUBLE, BOOL -> how to read the value union
_READ = {1: lambda v: text(v.str), 2: lambda v: v.i, 3: lambda v: v.u, 4: lambda v: v.u, 5: lambda v: v.d,
         6: lambda v: bool(v.b)}

_open_agents: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _close_open_agents() -> None:
    for agent in list(_open_agents):
        agent.close()


atexit.register(_close_open_agents)


def resolve(logger: Union[logging.Logger, bool, None]) -> Optional[logging.Logger]:
    """The logger an Agent's logger= argument names: a Logger, True for "ftl", None or False for none."""
    if logger is True:
        return logging.getLogger("ftl")
    if logger is None or logger is False:
        return None
    if not isinstance(logger, logging.Logger):
        raise TypeError(f"ftl: logger= expects a logging.Logger, True or None, not {type(logger).__name__}")
    return logger


def fields_of(rec) -> Dict[str, Any]:
    """The record's fields as a dict of values."""
    out = {}
    for i in range(rec.n_fields):
        f = rec.fields[i]
        read = _READ.get(f.type)
        if read is not None:
            out[text(f.key)] = read(f.value)
    return out


def callback(logger: logging.Logger) -> Callable:
    """A C log callback (LOG_FN) that hands each record to logger's child for its component."""
    def on_record(rec_p, _user) -> None:
        try:
            rec = rec_p.contents
            level = _LEVELS[rec.level] if 0 <= rec.level < len(_LEVELS) else logging.ERROR
            component = text(rec.component) or "agent"
            target = logger.getChild(component)
            if not target.isEnabledFor(level):
                return
            record = target.makeRecord(target.name, level, "libftl", 0, text(rec.message), None, None,
                                       extra={"ftl_fields": fields_of(rec), "ftl_agent": text(rec.agent),
                                              "ftl_component": component})
            record.created = rec.time_us / 1e6
            record.msecs = (rec.time_us % 1000000) / 1000.0
            record.relativeCreated = (record.created - logging._startTime) * 1000.0
            target.handle(record)
        except Exception:  # never let an exception reach C; logging reports its own handler errors
            logging.getLogger("ftl").exception("ftl: a log record could not be handed to logging")
    return LOG_FN(on_record)


def track(agent: Any) -> None:
    """Closes agent at interpreter exit if it is still open (its callback must not outlive Python)."""
    _open_agents.add(agent)
