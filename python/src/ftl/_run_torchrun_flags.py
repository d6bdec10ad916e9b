"""torchrun's whole command line on ftlrun: every flag of `torchrun --help` (torch 2.15) is taken, and each
means one thing here, said in one sentence (docs/guides/ftlrun.md has the table).

- The same flag: --nproc-per-node, --nnodes, --node-rank, --master-addr, --master-port, -m, --no-python
  (run.py's own options, with torchrun's underscore spellings).
- Mapped onto one of ftlrun's: --shutdown-timeout is --stop-timeout, --local-addr is --host, and
  --rdzv-endpoint HOST[:PORT] is a seed (run.py's Plan: the machine at HOST starts its first worker on
  PORT, 29400 by default, so every machine can give the same endpoint, as with torchrun).
- Accepted and ignored, where the flag asks for something ftl does by design (IGNORED: the reason is
  printed when the flag is given, so a torchrun command line runs unchanged).
- Refused, naming the flag, where ftlrun cannot do what the flag asks and ignoring it would surprise
  (REFUSED): output files and filters, NUMA binding, virtual local ranks.
"""
from ._run_key import Refusal

# flag (without the leading --), takes a value, why it changes nothing under ftl
IGNORED = [
    ("standalone", False, "ftlrun's default already: this machine's workers find each other, with a fresh key"),
    ("rdzv-backend", True, "ftl's rendezvous is its gossip membership; there is no store to choose"),
    ("rdzv-id", True, "the gossip key is the job: workers that share it are one job"),
    ("rdzv-conf", True, "the rendezvous' timings are ftl's settings (FTL_SETTLE_MS, FTL_MIN_WORKERS, ...)"),
    ("max-restarts", True, "ftl restarts no group: the survivors go on without a worker that died, and a new "
                           "worker joins the running job (another ftlrun with --seeds and --key-file)"),
    ("monitor-interval", True, "a worker's death is seen by its exit and by the gossip at once, not by polling"),
    ("start-method", True, "each worker is a process of its own, started afresh (as spawn)"),
    ("event-log-handler", True, "ftl reports its events in its log, on /metrics and through ftlctl"),
    ("role", True, "ftl's workers all have one role"),
    ("run-path", False, "ftlrun runs the script as `python SCRIPT`, which is what run_path does"),
    ("signals-to-handle", True, "ftlrun passes SIGINT and SIGTERM to every worker"),
]
_PRINTS_EVERY_LINE = ("ftlrun prints every worker's stdout and stderr, prefixed by its name; redirect ftlrun's "
                      "own output")
_NO_LOG_FILES = "ftlrun writes no log files to copy lines to"
REFUSED = [
    ("log-dir", True, "ftlrun writes no log files: it prints every worker's lines, prefixed by its name; "
                      "redirect ftlrun's own output"),
    ("redirects", True, _PRINTS_EVERY_LINE, "r"),
    ("tee", True, _PRINTS_EVERY_LINE, "t"),
    ("logs-specs", True, "ftlrun writes no log files: redirect its own output"),
    ("log-line-prefix-template", True, "ftlrun prefixes each line with the worker's name"),
    ("local-ranks-filter", True, "ftlrun prints every worker's lines, prefixed by its name: filter them "
                                 "(grep '^\\[NAME-0\\]')"),
    ("duplicate-stdout-filters", True, _NO_LOG_FILES),
    ("duplicate-stderr-filters", True, _NO_LOG_FILES),
    ("numa-binding", True, "ftlrun binds no worker to a NUMA node: run the program under numactl "
                           "(--no-python numactl ... python script.py)"),
    ("virtual-local-rank", False, "each worker has its own LOCAL_RANK and FTL_CUDA_DEVICE (its GPU)"),
    ("print-completion", True, "ftlrun has no shell completion"),
]
DEFAULT_RDZV_PORT = 29400  # torchrun's, when --rdzv-endpoint names no port


def _spellings(flag, short=None):
    names = [f"--{flag}"] + ([f"--{flag.replace('-', '_')}"] if "-" in flag else [])
    return ([f"-{short}"] if short else []) + names


def add_to(parser):
    """torchrun's flags that are not ftlrun's own, on parser (ftlrun's --help lists them in a group)."""
    group = parser.add_argument_group("torchrun's other flags", "accepted and ignored, or refused, each for "
                                      "the reason shown")
    for kind, table in (("ignored", IGNORED), ("refused", REFUSED)):
        for flag, takes_value, why, *short in table:
            value = {"action": "store", "metavar": "X"} if takes_value else {"action": "store_true"}
            group.add_argument(*_spellings(flag, *short), dest="torchrun_" + flag.replace("-", "_"), default=None,
                               help=f"{kind}: {why}", **value)


def given(args, table):
    """(--flag, why) for each flag of table that the command line gave."""
    return [(f"--{flag}", why) for flag, _, why, *_ in table
            if getattr(args, "torchrun_" + flag.replace("-", "_"), None) not in (None, False)]


def refusal(args):
    """The sentence refusing the first REFUSED flag given, or None."""
    for flag, why in given(args, REFUSED):
        return f"{flag}: {why}"
    if args.torchrun_standalone and (args.seeds or args.rdzv_endpoint):
        return "--standalone is a job of this machine alone; --seeds and --rdzv-endpoint join one elsewhere: give one"
    return None


def notes(args):
    """One line per IGNORED flag given, saying why it changes nothing."""
    return [f"torchrun's {flag} is not needed under ftl: {why}" for flag, why in given(args, IGNORED)]


def rdzv_seed(endpoint):
    """HOST:PORT of --rdzv-endpoint HOST[:PORT] (torchrun's port 29400 when none is given)."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or "]" in port:  # HOST alone, or [v6] alone
        host, port = endpoint, str(DEFAULT_RDZV_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise Refusal(f"--rdzv-endpoint {endpoint}: expected HOST or HOST:PORT (a machine of the job; its first "
                      "worker takes PORT)")
    return host.strip("[]"), int(port)
