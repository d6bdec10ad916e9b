"""The tree's dependency rule (docs/concepts/architecture.md, "The dependency rule"), checked on every #include of the C sources:
a folder includes only the folders below it (the public headers of the agent and of training too), train/
includes agent/ through its door alone (agent/agent_training.h), and no folder includes another folder's
*_internal.h; inside
comm/, the transports sit below the core's headers and shared memory below tcp (ROOMS); and the agent and
train/ call no membership or rendezvous function (ftl_swim_*, ftl_rdv_*): what they need of either is the
node's to give (node/node.h), the view's vocabulary types included. A new include or call that breaks the
rule fails this test, naming the file, the header or call, and the rule.

No place is excepted (the last exceptions went with issue 27, items 4 to 6).

    python3 tests/layout/check_includes.py [ROOT]"""
import pathlib
import re
import sys

# folder -> the folders its sources may include (the architecture page's table; base/ holds what every layer may take, and
# channel/ is the sealed peer channel the agent owns, over membership's keyring)
ALLOWED = {
    "base": {"ftl"},
    "membership": {"base", "ftl"},
    "rendezvous": {"base", "membership", "ftl"},
    "node": {"base", "membership", "rendezvous", "ftl"},
    "channel": {"base", "membership", "ftl"},
    "comm": {"base", "ftl"},
    "agent": {"base", "node", "comm", "channel", "ftl"},
    "train": {"base", "agent", "comm", "ftl"},
    "ctl": {"base", "ftl"},
    "libftl": {"ftl"},
}
# Inside comm/ (issue 27, item 6): each file's room, by name, and the rooms its includes may name. The core
# (comm.h: the struct, failure, checks; async ordering; the reductions and the kinds built on the backends'
# calls) names no transport; shared memory knows only the core; tcp chooses shared memory and lends it what
# it needs; nccl stands alone on the core. comm.c, the one face, creates backends through the transport table
# (comm.h's struct ftl_comm_transport, one constant per transport) without including their headers; that no
# file calls back up is check_call_circles.py's to see.
ROOMS = {"comm_shm": "shm", "comm_tcp": "tcp", "comm_nccl": "nccl"}  # by file-name prefix; the rest: core
ROOM_ALLOWED = {"core": {"core"}, "shm": {"core", "shm"}, "tcp": {"core", "shm", "tcp"}, "nccl": {"core", "nccl"}}


# Folders that may include another only through its door: train/ takes the agent's API for the training layer
# and nothing else of agent/ (struct ftl_agent and the agent's rooms stay private to it; the helpers both
# use, such as address parsing, settings and the metrics text, live in base/).
DOORS = {("train", "agent"): {"agent/agent_training.h"}}


# The public headers that are the faces of the agent and of training: the layers below the agent include
# none of them (base/log.h takes the log records from ftl/log.h, not from the agent's header).
ABOVE_FACES = {"ftl/agent.h", "ftl/execute.h", "ftl/checkpoint.h", "ftl/gradient.h", "ftl/elastic.h"}
BELOW_AGENT = ("base", "membership", "rendezvous", "node", "channel", "comm")


def comm_room(name: str) -> str:
    return next((room for prefix, room in ROOMS.items() if name.startswith(prefix)), "core")


# Folders that reach membership and the rendezvous only through the node, and the calls still theirs to make:
# the timing profiles (membership/profile.h) are settings vocabulary the agent's configuration turns
# FTL_PROFILE into, before any node exists.
THROUGH_NODE = ("agent", "train")
CALLS_ALLOWED = {"ftl_swim_profile_from_name", "ftl_swim_config_profile", "ftl_swim_config_check"}
CALL = re.compile(r"\b(ftl_(?:swim|rdv)_[a-z0-9_]+)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = ("*.c", "*.h", "*.cu", "*.cpp")


def header_folder(source: pathlib.Path, header: str, root: pathlib.Path) -> str:
    """The top folder a quoted include names: "ftl/x.h" is the public API, "dir/x.h" a folder of the tree,
    a bare name the including file's own folder."""
    if header.startswith("ftl/"):
        return "ftl"
    if "/" in header:
        return header.split("/", 1)[0]
    return source.relative_to(root).parts[0]


def violations(root: pathlib.Path):
    for folder, allowed in sorted(ALLOWED.items()):
        for pattern in SOURCES:
            for source in sorted((root / folder).rglob(pattern)):
                rel = source.relative_to(root).as_posix()
                for header in INCLUDE.findall(source.read_text(errors="replace")):
                    target = header_folder(source, header, root)
                    if folder in BELOW_AGENT and header in ABOVE_FACES:
                        yield rel, header, (f"{header} is the face of a layer above {folder}/: "
                                            f"{folder}/ includes the public headers of its own level only")
                        continue
                    if folder == "comm" and target == folder:
                        here, there = comm_room(source.name), comm_room(pathlib.PurePath(header).name)
                        if there not in ROOM_ALLOWED[here]:
                            yield rel, header, (f"comm/'s {here} may include the "
                                                f"{', '.join(sorted(ROOM_ALLOWED[here]))} headers only")
                        continue
                    if target == folder and not header.endswith("_internal.h"):
                        continue
                    if target == folder:  # a bare or own-folder *_internal.h: the folder's own
                        continue
                    if target not in ALLOWED and target != "ftl":
                        continue  # a system or generated header in quotes
                    why = None
                    door = DOORS.get((folder, target))
                    if target not in allowed:
                        why = f"{folder}/ may include {', '.join(sorted(allowed))} only"
                    elif header.endswith("_internal.h"):
                        why = f"{header} is {target}/'s own: no folder includes another folder's *_internal.h"
                    elif door is not None and header not in door:
                        why = f"{folder}/ includes {target}/ through its door only ({', '.join(sorted(door))})"
                    if why:
                        yield rel, header, why


def call_violations(root: pathlib.Path):
    for folder in THROUGH_NODE:
        for source in sorted((root / folder).rglob("*.c")):
            code = COMMENT.sub(" ", source.read_text(errors="replace"))
            for name in sorted(set(CALL.findall(code)) - CALLS_ALLOWED):
                yield (source.relative_to(root).as_posix(), f"{name}()",
                       f"{folder}/ reaches membership and the rendezvous through the node only (train/ through the agent's door)")


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    failed = False
    for rel, header, why in violations(root):
        print(f"{rel}: #include \"{header}\": {why} (docs/concepts/architecture.md, The dependency rule)")
        failed = True
    for rel, call, why in call_violations(root):
        print(f"{rel}: calls {call}: {why} (docs/concepts/architecture.md, The dependency rule)")
        failed = True
    print("FAILED" if failed else "the layout holds: no upward include or call")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
