"""No module of the ftl package but agent.py and _door.py reads an Agent attribute that starts with "_": the
others go through the agent's door (ftl/_door.py), so Agent can change its insides without breaking
ftl.torch, ftl.lightning, GradientBucket and the rest, and a reader finds in one place what they rely on.

Static, over the source (an AST walk), so it covers the paths no test runs. An access is a reach into the
agent when
- the attribute is one of Agent's private names (the `self._x` it assigns, the `_x` methods it defines: read
  from agent.py, so a new one is covered at once), on anything but `self` or `cls`, in a module whose own
  classes define no such name (Request's `_keep` is its own); or
- the object looks like an agent (a name or attribute ending in "agent": agent, self._agent,
  self.loop.agent) and the attribute starts with "_", whatever it is (a slot hung on the agent ad hoc).
getattr, hasattr, setattr and delattr with a literal name count as the access they spell.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, List, Optional, Set

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "src" / "ftl"
INSIDE = {"agent.py", "_door.py"}  # the agent itself and its door
_BY_NAME = {"getattr", "hasattr", "setattr", "delattr"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names(tree: ast.AST) -> Set[str]:
    """The private attributes (assigned to self) and methods that the classes in tree define."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names |= {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" and \
                isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if _is_private(n)}


def agent_private_names(agent_py: Path) -> Set[str]:
    """The private attributes and methods of class Agent in agent.py."""
    tree = ast.parse(agent_py.read_text())
    return private_names(next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Agent"))


def _identifier(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _looks_like_agent(node: ast.AST) -> bool:
    name = _identifier(node)
    return name is not None and name.strip("_").lower().endswith("agent")


def _accesses(tree: ast.AST) -> Iterator[tuple]:
    """(line, the object's node, the attribute's name) of every attribute access, spelled or by name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            yield node.lineno, node.value, node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BY_NAME and \
                len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            yield node.lineno, node.args[0], node.args[1].value


def reaches(package: Path) -> List[str]:
    """Every reach into an Agent's private attributes outside agent.py and the door, as "file:line: text"."""
    private = agent_private_names(package / "agent.py")
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name in INSIDE and path.parent == package:
            continue
        tree = ast.parse(path.read_text())
        agents = private - private_names(tree)  # a name the module's own classes define is theirs too
        for line, obj, attr in sorted(_accesses(tree), key=lambda a: a[0]):
            is_agents_name = attr in agents and _identifier(obj) not in ("self", "cls")
            if _is_private(attr) and (is_agents_name or _looks_like_agent(obj)):
                found.append(f"{path.relative_to(package)}:{line}: {ast.unparse(obj)}.{attr}")
    return found


def test_no_module_reaches_into_the_agent():
    found = reaches(PACKAGE)
    assert not found, ("these modules read Agent's private attributes; go through the agent's door "
                       "(ftl/_door.py: door_of(agent)) instead:\n  " + "\n  ".join(found))


def test_the_check_sees_every_spelling(tmp_path):
    """Each way of reaching in is found; the module's own attributes and a group's are not."""
    (tmp_path / "agent.py").write_text("class Agent:\n    def __init__(self):\n        self._ptr = None\n"
                                       "    def _handle(self):\n        return self._ptr\n")
    (tmp_path / "user.py").write_text(
        "def f(agent, a, group):\n"
        "    agent._handle()\n"                      # a private method, on an agent
        "    a._ptr\n"                               # a private name of Agent, whatever the object is called
        "    self._agent._slot = 1\n"                # a new slot hung on the agent
        "    getattr(group.agent, '_loop', None)\n"  # by name
        "    self._ptr, group._calls, agent.rank\n"  # not reaches: its own, a group's, a public one
    )
    assert [r.split(": ")[1] for r in reaches(tmp_path)] == [
        "agent._handle", "a._ptr", "self._agent._slot", "group.agent._loop"]
