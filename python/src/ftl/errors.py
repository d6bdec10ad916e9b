"""The exceptions ftl raises: one base class, with the C library's message as the text.

Every error carries the C error code (`code`, an int, and `code_name`, e.g. "peer lost") so a program can
tell a peer that is gone (retryable: `agent.execute` runs the step again on the next view) from a
mistake in the program or the settings.
"""
from __future__ import annotations

import builtins
from typing import Optional

# ftl_err values (include/ftl/error.h).
OK, INVALID, PEER_LOST, ABORTED, TIMEOUT, SYSTEM, BACKEND, UNSUPPORTED, REFUSED, STATE_LOST = range(10)
# A collective that failed with one of these lost a peer: the step is run again on the next view.
PEER_CODES = frozenset((PEER_LOST, ABORTED, TIMEOUT))


def code_name(code: int) -> str:
    """The C library's short name of an ftl_err ("peer lost", "timed out": ftl_strerror, from its ftl_err_strs
    table, not a copy here); "error N" when the library cannot be loaded."""
    try:
        from ._lib import lib, text
        return text(lib().ftl_strerror(code))
    except (ImportError, OSError):
        return f"error {code}"


class Error(RuntimeError):
    """Something ftl could not do; str(e) says what and, where it can, what to do. A RuntimeError, as
    torch's own distributed errors are (torch code that tries a call and catches RuntimeError, such as
    asking a group for a C++ backend, catches ftl's refusal too)."""

    def __init__(self, message: str, code: int = INVALID):
        super().__init__(message)
        self.code = code

    @property
    def code_name(self) -> str:
        return code_name(self.code)


class ConfigError(Error, ValueError):
    """A setting (an FTL_* variable or its keyword argument) was refused; `variable` names it (the FTL_*
    name libftl gives with its refusal, ftl_error_setting), or is None when the refusal is about no one setting."""

    def __init__(self, message: str, variable: Optional[str] = None):
        super().__init__(message, INVALID)
        self.variable = variable


class PeerLostError(Error):
    """A peer died, stopped answering, or the view changed during a collective (retryable)."""


class TimeoutError(PeerLostError, builtins.TimeoutError):  # noqa: A001 (ftl.TimeoutError, as asyncio's)
    """A collective did not complete within its timeout (FTL_COLLECTIVE_TIMEOUT_MS): a peer that stopped
    answering without dying, most often. A PeerLostError too (retryable: the step runs again on the next
    view), and Python's TimeoutError, so code that waits with a deadline can catch it as such."""


class LibraryNotFoundError(Error, ImportError):
    """libftl.so could not be loaded."""


def from_code(code: int, message: str) -> Error:
    """The exception for an ftl_err and its message."""
    if code == TIMEOUT:
        return TimeoutError(message, code)
    if code in PEER_CODES:
        return PeerLostError(message, code)
    return Error(message or code_name(code), code)
