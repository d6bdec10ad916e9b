"""MkDocs hook (mkdocs.yml `hooks:`): writes the generated reference pages before every build, so
`mkdocs build` and `mkdocs serve` always show what the sources say. FTL_CTL names the ftlctl binary
(default build/ctl/ftlctl)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference  # noqa: E402  (docs/gen/reference.py, beside this file)


def on_pre_build(config):
    try:
        reference.generate(Path(config["docs_dir"]) / "reference")
    except reference.GenError as e:
        from mkdocs.exceptions import PluginError
        raise PluginError(f"docs/gen/reference.py: {e}") from None
