"""Runs every code block of the documentation that a reader could run, against the build tree, and fails
on the first one that fails: the docs cannot drift from the code unseen.

    python docs/gen/run_snippets.py [--build build] [PAGE.md ...]

Which blocks (the fence's language decides, so every block is a visible choice):
- `python`, `bash`, `sh`: run, in page order, each page in a fresh working directory of its own;
- a runnable block whose first line is `# not run by the docs test: <why>` is skipped (kubectl, a GPU,
  minutes of training); the reason is required;
- a `python` block whose first line is `# file: NAME` is written to NAME in the page's directory and not
  run (a later `bash` block runs it, with ftlrun, say);
- any other language (text, c, diff, yaml, ...) is shown, not run; a fence without a language is an error.

Where they run: the page's directory holds a link to every top-level entry of the repository, so
`build/ctl/ftlctl`, `examples/...` and `scripts/...` resolve as from the root, while files a block writes
stay in the directory. PATH starts with a folder holding `ftlctl`, `ftl-agent` and `ftlrun` (python -m
ftl.run) of the build tree; FTL_LIBRARY and PYTHONPATH point at the build's library and python/src;
FTL_RUN_DIR is a fresh directory per page, so control sockets never meet another job's. Each block gets
BLOCK_TIMEOUT seconds; a bash block runs under `set -euo pipefail` in a process group of its own, which is
killed when the block ends (agents it started in the background go with it).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = {"python", "bash", "sh"}
NORUN = "# not run by the docs test:"
BLOCK_TIMEOUT = 60
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")


def blocks(text):
    """(line number, language, code) of every fenced block of a Markdown text."""
    lines, i, out = text.splitlines(), 0, []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent, fence = i + 1, len(m.group("indent")), m.group("fence")
        lang = m.group("info").strip().split(" ")[0].split("{")[0] if m.group("info").strip() else ""
        body, i = [], i + 1
        while i < len(lines) and not re.match(rf"^ {{0,{indent + 3}}}{re.escape(fence)}\s*$", lines[i]):
            body.append(lines[i][indent:] if not lines[i][:indent].strip() else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise ValueError(f"{start}: a fence that never closes")
        out.append((start, lang, "\n".join(body) + "\n"))
        i += 1
    return out


def tool_dir(build, python):
    """A folder of the build's command-line tools, for the front of PATH."""
    d = Path(tempfile.mkdtemp(prefix="ftl-docs-bin-"))
    for name, target in (("ftlctl", build / "ctl/ftlctl"), ("ftl-agent", build / "agent/ftl-agent")):
        if target.exists():
            (d / name).symlink_to(target.resolve())
    (d / "ftlrun").write_text(f"#!/bin/sh\nexec {python} -m ftl.run \"$@\"\n")
    (d / "ftlrun").chmod(0o755)
    return d


def page_dir():
    d = Path(tempfile.mkdtemp(prefix="ftl-docs-page-"))
    for entry in ROOT.iterdir():
        if entry.name not in (".git",):
            (d / entry.name).symlink_to(entry)
    return d


def run_block(lang, code, cwd, env, python):
    if lang == "python":
        cmd = [python, "-c", code]
    else:
        cmd = ["bash", "-c", "set -euo pipefail\n" + code]
    # Output to a file, not a pipe: agents a block starts in the background keep a pipe open after the
    # block's shell has exited, and the block ends when its shell does.
    with tempfile.TemporaryFile(mode="w+") as log:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            rc = f"timeout after {BLOCK_TIMEOUT} s"
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the block's background processes, or all of it on a timeout
        except ProcessLookupError:
            pass
        p.wait()
        log.seek(0)
        out = log.read()
    return rc, out


def run_page(page, env_base, python):
    try:
        found = blocks(page.read_text())
    except ValueError as e:
        raise SystemExit(f"{page}:{e}") from None
    runnable = []
    for line, lang, code in found:
        where = f"{page.relative_to(ROOT) if ROOT in page.parents else page}:{line}"
        if not lang:
            raise SystemExit(f"{where}: a code block without a language; name one (text if it is not code)")
        if lang not in RUN:
            continue
        first = code.lstrip("\n").split("\n", 1)[0]
        if first.startswith(NORUN):
            if not first[len(NORUN):].strip():
                raise SystemExit(f"{where}: `{NORUN}` needs a reason after the colon")
            continue
        runnable.append((where, lang, code, first))
    if not runnable:
        return 0, 0.0
    cwd = page_dir()
    run_dir = Path(tempfile.mkdtemp(prefix="ftl-docs-run-"))
    run_dir.chmod(0o700)
    env = dict(env_base, FTL_RUN_DIR=str(run_dir))
    t0, ran = time.monotonic(), 0
    try:
        for where, lang, code, first in runnable:
            m = re.match(r"# file: (\S+)$", first)
            if m and lang == "python":
                (cwd / m.group(1)).write_text(code)
                continue
            t = time.monotonic()
            rc, out = run_block(lang, code, cwd, env, python)
            if rc != 0:
                print(f"FAIL {where} ({lang}, exit {rc}):\n{code}\n--- output ---\n{out}", file=sys.stderr)
                raise SystemExit(1)
            ran += 1
            print(f"ok   {where} ({lang}, {time.monotonic() - t:.1f} s)")
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)
    return ran, time.monotonic() - t0


def main():
    p = argparse.ArgumentParser(description="run the documentation's code blocks")
    p.add_argument("--build", default=str(ROOT / "build"), help="the build tree (build)")
    p.add_argument("--python", default=sys.executable, help="the interpreter for python blocks (this one)")
    p.add_argument("pages", nargs="*", help="Markdown pages (every page under docs/)")
    a = p.parse_args()
    build = Path(a.build).resolve()
    lib = build / "lib/libftl.so"
    if not lib.exists():
        raise SystemExit(f"run_snippets: no {lib}: build first (cmake --build {a.build})")
    bindir = tool_dir(build, a.python)
    env = dict(os.environ, FTL_LIBRARY=str(lib), PYTHONPATH=str(ROOT / "python/src"),
               PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONDONTWRITEBYTECODE="1",
               OMP_NUM_THREADS="1")
    pages = [Path(x).resolve() for x in a.pages] or sorted(
        p for p in (ROOT / "docs").rglob("*.md") if (ROOT / "docs/gen") not in p.parents)  # the site's pages
    total, t0 = 0, time.monotonic()
    try:
        for page in pages:
            ran, _ = run_page(page, env, a.python)
            total += ran
    finally:
        shutil.rmtree(bindir, ignore_errors=True)
    print(f"{total} blocks ran in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
