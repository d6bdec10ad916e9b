"""The repository stands on its own: no file in it points a reader at something outside it (the design notes
beside the repository that a user who cloned it or installed the package does not have). What a reader needs of
the design is in docs/ (docs/concepts/architecture.md is the map). Fails naming each file and line.

Looks at every text file of the tree except build folders (a CMakeCache.txt in them), virtual environments,
.git and other hidden folders.

    python3 tests/layout/check_self_contained.py [ROOT]"""
import pathlib
import sys

# Spelled in pieces, so that this file does not find itself.
OUTSIDE = ["../" + "shared", "DESIGN" + ".md", "STYLE" + ".md"]


def skipped(folder: pathlib.Path) -> bool:
    return folder.name.startswith(".") or (folder / "CMakeCache.txt").exists() or (folder / "pyvenv.cfg").exists()


def text_files(root: pathlib.Path):
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                if not skipped(entry):
                    stack.append(entry)
            elif entry.is_file() and entry.stat().st_size < (1 << 20):
                try:
                    yield entry, entry.read_text(encoding="utf-8")
                except UnicodeDecodeError:  # not text
                    continue


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    found = []
    for path, text in text_files(root):
        for n, line in enumerate(text.splitlines(), 1):
            for outside in OUTSIDE:
                if outside in line:
                    found.append(f"{path.relative_to(root)}:{n}: points outside the repository ({outside}): "
                                 "say it in docs/ (docs/concepts/architecture.md is the map) and point there")
    for line in found:
        print(line)
    if not found:
        print("the repository stands on its own: nothing in it points outside it")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
