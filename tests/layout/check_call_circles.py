"""No call circles inside a folder that is built in layers (issue 42): among the .c files of each folder in
LAYERED, no file calls a function of another that calls back into it, directly or around a longer loop.
A circle means no file of it can be read, tested or changed alone: comm/ had two (the face and factory
in comm.c with every transport calling back into its helpers, and the exact allreduce calling the public
allreduce that dispatches to it), split in comm_core.c and ftl_comm_async_allreduce. agent/ had one of
nine files: every handler fed the node and then called ftl_agent_flush itself, and the flush dispatched
back into the handlers; now the handlers only feed (agent_turn.c), the loop drains the node once per turn
from one place (agent_drain.c, a check handle), and what several rooms tell the control socket sits below
them (agent_notices.c), so the agent is a star around its drain.

The call graph is read from the code: a file's external functions are the non-static definitions at the
start of a line; a file calls another when it names one of that file's functions followed by "(",
comments and string literals left out. Calls through a function pointer (an ops table, the transport
table) are not calls here: they are how a lower layer is reached without a circle.

Not checked: the protocol state machines (membership/, rendezvous/, node/, train/), whose message handlers
answer each other by design.

    python3 tests/layout/check_call_circles.py [ROOT]"""
import pathlib
import re
import sys

LAYERED = ("base", "channel", "comm", "ctl", "libftl", "agent")

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
DEFINITION = re.compile(r"^([A-Za-z_][\w \t\*]*?)\b([a-z_][a-z0-9_]*)\s*\([^;{}]*\)\s*\{", re.M)
CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\(")


def read_sources(folder: pathlib.Path) -> dict:
    return {p.name: STRING.sub('""', COMMENT.sub(" ", p.read_text())) for p in sorted(folder.glob("*.c"))}


def call_graph(sources: dict) -> dict:
    """file -> {callee file: [functions of it that file calls]}"""
    defined_in = {}
    for name, text in sources.items():
        for m in DEFINITION.finditer(text):
            if "static" not in m.group(1).split():
                defined_in[m.group(2)] = name
    graph = {name: {} for name in sources}
    for name, text in sources.items():
        for fn in sorted(set(CALL.findall(text))):
            callee = defined_in.get(fn)
            if callee is not None and callee != name:
                graph[name].setdefault(callee, []).append(fn)
    return graph


def circles(graph: dict) -> list:
    """The strongly connected components of more than one file (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def describe(folder: str, component: list, graph: dict) -> list:
    lines = [f"{folder}/: {len(component)} files call each other around a loop: {', '.join(component)}"]
    for caller in component:
        for callee, fns in sorted(graph[caller].items()):
            if callee in component:
                lines.append(f"  {folder}/{caller} -> {folder}/{callee}: {', '.join(fns)}")
    return lines


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    failed = False
    for folder in LAYERED:
        graph = call_graph(read_sources(root / folder))
        found = circles(graph)
        for component in found:
            failed = True
            print("\n".join(describe(folder, component, graph)))
        if not found:
            print(f"{folder}/: no call circle among its {len(graph)} files")
    if failed:
        print("break the circle: move what both sides call into a file below them (as comm_core.c or "
              "agent_notices.c), call the layer below instead of the public entry (as ftl_comm_async_allreduce), "
              "or let handlers only feed a state machine that one place drains (as agent_drain.c)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
