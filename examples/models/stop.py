"""SIGTERM and SIGINT taken between steps, never in the middle of one.

Why a module of its own, imported before torch: the signals must be blocked before any thread exists
(torch's and the agent's threads inherit the mask), and importing this module does it; the training loop
asks requested() between steps."""
import signal

SIGNALS = {signal.SIGTERM, signal.SIGINT}
signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def requested():
    """True once SIGTERM or SIGINT arrived (each signal is taken once)."""
    return signal.sigtimedwait(SIGNALS, 0) is not None
