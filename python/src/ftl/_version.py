"""The package's version: include/ftl/version.h is the one place it is written. From a source tree it is
read there; from an installed package, from the metadata the build took from the same header."""
import re
from pathlib import Path


def _version() -> str:
    header = Path(__file__).resolve().parents[3] / "include" / "ftl" / "version.h"
    if header.is_file():
        found = re.search(r'#define FTL_VERSION_STRING "([^"]+)"', header.read_text())
        if found:
            return found.group(1)
    try:
        from importlib.metadata import version
        return version("ftl")
    except Exception:
        return "0+unknown"


__version__ = _version()
