"""ftlrun's gossip key: a fresh one that no file on disk holds, or the user's file, checked before any
worker starts.

Where a fresh key lives, and why there: in a memfd (memfd_create: a file in memory, on no filesystem),
mode 0600, which every worker inherits as an open descriptor and reads like any key file, through
FTL_GOSSIP_KEY_FILE=/proc/self/fd/N. A launcher killed by SIGKILL runs no cleanup, so the key must not be
anywhere that needs one: the memfd's memory goes when the last process holding it exits, and the
workers get SIGTERM when the launcher dies (PR_SET_PDEATHSIG). While the launcher runs, another launcher
of the same user adds workers with --key-file /proc/<launcher pid>/fd/N. Not chosen: a file in a private
directory (what SIGKILL left behind); FTL_GOSSIP_KEY in the environment (readable in /proc/<pid>/environ
for the worker's whole life, copied into every process it starts, and a C worker cannot scrub it); a
pipe the worker reads once (a second agent in the process, or a restarted one, would find it empty).

A key file the user gives must be theirs and private (like ssh's keys): one that others can read, or
that another user owns (and so can change), is refused up front rather than warned about by each worker.
"""
import base64
import binascii
import os
import stat

KEY_BYTES = 32


class Refusal(Exception):
    """Arguments or settings the launcher will not start workers with; the message is one sentence."""


def new_key():
    """A fresh cluster key in `ftlctl keygen`'s format."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode()


def check_key_file(path):
    """Refuses a key file that is not the user's own and private, or that the workers could not use."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            text = f.readline().strip()
    except OSError as e:
        raise Refusal(f"--key-file {path}: cannot read it ({e.strerror})")
    if st.st_uid != os.geteuid():
        raise Refusal(f"--key-file {path} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}): its owner "
                      f"can read and change the cluster key; use a copy of your own (chmod 600)")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise Refusal(f"--key-file {path} has mode {st.st_mode & 0o777:04o}: group or others can read the "
                      f"cluster key; chmod 600 {path}")
    try:
        is_valid = len(base64.b64decode(text, validate=True)) == KEY_BYTES
    except binascii.Error:
        is_valid = False
    if not is_valid:
        raise Refusal(f"--key-file {path}: expected the base64 of {KEY_BYTES} bytes, as `ftlrun --keygen` "
                      f"or `ftlctl keygen` prints")


def fresh_key_descriptor():
    """A memfd, mode 0600, holding a fresh key (see the module's notes); the caller passes it to workers."""
    fd = os.memfd_create("ftl-gossip-key")  # close-on-exec here; Popen(pass_fds=) keeps it in the workers
    os.fchmod(fd, 0o600)
    os.write(fd, (new_key() + "\n").encode())
    return fd


def key_settings(args, env, seeds):
    """The key settings every worker gets, a line telling the user where a fresh key is, and the
    descriptors the workers must inherit."""
    if args.key_file:
        check_key_file(args.key_file)
        return {"FTL_GOSSIP_KEY_FILE": os.path.abspath(args.key_file), "FTL_GOSSIP_KEY": None}, None, ()
    if env.get("FTL_GOSSIP_KEY") or env.get("FTL_GOSSIP_KEY_FILE") or env.get("FTL_INSECURE") == "1":
        return {}, None, ()
    if seeds:
        raise Refusal("--seeds (or --rdzv-endpoint) joins workers started elsewhere, which must share this job's "
                      "gossip key: make one with `ftlrun --keygen > key` (or `ftlctl keygen > key`), copy it to every "
                      "machine, and pass --key-file key (or set FTL_GOSSIP_KEY_FILE) everywhere")
    fd = fresh_key_descriptor()
    note = (f"a fresh gossip key, on no disk (gone with this launcher): --key-file /proc/{os.getpid()}/fd/{fd} "
            f"lets another launcher of yours add workers meanwhile")
    return {"FTL_GOSSIP_KEY_FILE": f"/proc/self/fd/{fd}"}, note, (fd,)
