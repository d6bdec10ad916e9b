"""The tree's dependency rule (../shared/DESIGN.md, "Layout"), checked on every #include of the C sources:
a folder includes only the folders below it, and no folder includes another folder's *_internal.h; inside
comm/, the transports sit below the core's headers and shared memory below tcp (ROOMS). A new include that
breaks the rule fails this test, naming the file, the header and the rule.

The places that break the rule today are listed by name in KNOWN below, each with what removes it (issue 27,
items 4 and 5: train/ naming the agent's types, not the rendezvous'; the agent a thin shell around node/):
the list may only shrink, and an entry that no longer matches is itself an error, so a fix cannot leave a stale exception.

    python3 tests/layout/check_includes.py [ROOT]"""
import pathlib
import re
import sys

# folder -> the folders its sources may include (DESIGN's table; base/ holds what every layer may take, and
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
# (file, included header): breaks the rule today; to be removed, never added to
KNOWN = {
    # train/ names the rendezvous' types (the view, ranks) instead of the agent's API's (issue 27, item 4)
    ("train/exec_machine.h", "rendezvous/rendezvous.h"),
    ("train/train_metrics.h", "rendezvous/rendezvous.h"),
    ("train/training.h", "rendezvous/rendezvous.h"),
    # the agent calls membership and the rendezvous directly instead of through node/ (issue 27, item 5)
    ("agent/agent_training.h", "rendezvous/rendezvous.h"),
    ("agent/config.c", "membership/keyring.h"),
    ("agent/config.c", "rendezvous/rendezvous.h"),
    ("agent/config.h", "membership/keyring.h"),
    ("agent/config.h", "membership/message.h"),
    ("agent/config.h", "membership/profile.h"),
    ("agent/metrics.h", "membership/keyring.h"),
    ("agent/metrics.h", "membership/swim.h"),
    ("agent/metrics.h", "rendezvous/rendezvous.h"),
    ("agent/witness.h", "membership/members.h"),
    ("agent/witness_life.h", "membership/message.h"),
}
# Inside comm/ (issue 27, item 6): each file's room, by name, and the rooms its includes may name. The core
# (comm.h: the struct, failure, checks; async ordering; the reductions and the kinds built on the backends'
# calls) names no transport; shared memory knows only the core; tcp chooses shared memory and lends it what
# it needs; nccl stands alone on the core. comm.c, the one face, creates backends through comm.h's
# constructors without including their headers.
ROOMS = {"comm_shm": "shm", "comm_tcp": "tcp", "comm_nccl": "nccl"}  # by file-name prefix; the rest: core
ROOM_ALLOWED = {"core": {"core"}, "shm": {"core", "shm"}, "tcp": {"core", "shm", "tcp"}, "nccl": {"core", "nccl"}}


def comm_room(name: str) -> str:
    return next((room for prefix, room in ROOMS.items() if name.startswith(prefix)), "core")


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
                    if target not in allowed:
                        why = f"{folder}/ may include {', '.join(sorted(allowed))} only"
                    elif header.endswith("_internal.h"):
                        why = f"{header} is {target}/'s own: no folder includes another folder's *_internal.h"
                    if why:
                        yield rel, header, why


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    found = set()
    failed = False
    for rel, header, why in violations(root):
        found.add((rel, header))
        if (rel, header) not in KNOWN:
            print(f"{rel}: #include \"{header}\": {why} (../shared/DESIGN.md, Layout)")
            failed = True
    for rel, header in sorted(KNOWN - found):
        print(f"tests/layout/check_includes.py: KNOWN lists {rel} including {header}, which it no longer "
              f"does: remove the entry")
        failed = True
    print(f"{len(found & KNOWN)} known exceptions, {'FAILED' if failed else 'no new ones'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
