"""ftlrun's output: the workers' lines and its own, copied to its stdout and stderr without ever blocking
the launcher's main thread.

Why: the launcher's stdout may be a pipe nobody reads (`ftlrun ... | slow-reader`, a pager left stopped);
once it is full, write() blocks. The main thread forwards SIGINT/SIGTERM and escalates to SIGKILL after
--stop-timeout: if it wrote, or waited for a lock a blocked writer holds, signals would stop reaching the
workers. So only daemon threads write (one copier per worker pipe, one messenger for the launcher's own
lines), each line whole under its descriptor's lock, with os.write on the descriptor: no Python file buffer, whose
lock a blocked thread would still hold at exit. The main thread hands its lines over through a
SimpleQueue (never blocks; safe in a signal handler) and waits for output only up to a deadline.
"""
import os
import queue
import threading
import time

# One lock per descriptor: lines stay whole when workers and the launcher print at once, and a stdout that
# nobody reads does not hold up stderr.
_line_locks = {1: threading.Lock(), 2: threading.Lock()}


def write_line(fd, data):
    """Writes data to fd whole (or nothing more once the reader is gone: a closed pipe drops the line)."""
    with _line_locks.setdefault(fd, threading.Lock()):
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view):]
            except OSError:  # EPIPE and the like: nobody reads any more
                return


class Copier:
    """Copies a worker's pipes to our descriptors line by line, each line prefixed by the worker's name."""

    def __init__(self, prefix):
        self.prefix = prefix.encode()
        self.threads = []

    def follow(self, pipe, fd):
        t = threading.Thread(target=self._copy, args=(pipe, fd), daemon=True)
        t.start()
        self.threads.append(t)

    def _copy(self, pipe, fd):
        with pipe:
            for line in iter(pipe.readline, b""):
                write_line(fd, self.prefix + (line if line.endswith(b"\n") else line + b"\n"))

    def drain(self, deadline):
        """Waits for the rest of the output until deadline (time.monotonic()); a grandchild holding the pipe
        open, or a reader that stopped reading ours, is not waited for beyond it."""
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))


class Messenger:
    """The launcher's own lines (`ftlrun: ...` on stderr), written by a thread of their own."""

    def __init__(self, fd=2):
        self.fd = fd
        self.queue = queue.SimpleQueue()
        threading.Thread(target=self._write, daemon=True).start()

    def say(self, text):
        self.queue.put(f"ftlrun: {text}\n".encode())

    def _write(self):
        while True:
            item = self.queue.get()
            if isinstance(item, threading.Event):
                item.set()
            else:
                write_line(self.fd, item)

    def flush(self, timeout):
        """Waits up to timeout seconds for the lines said so far to be written."""
        done = threading.Event()
        self.queue.put(done)
        done.wait(timeout)
