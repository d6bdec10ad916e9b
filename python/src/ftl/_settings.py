"""libftl's settings object (ftl/settings.h) from Python: the one way settings reach the C side, by name,
so no struct layout is copied here and os.environ is never written. Each value is judged by the C reader
of its setting, so a bad one raises ConfigError with the sentence its FTL_* variable would get."""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator

from ._lib import config_error, text
from .errors import ConfigError


def _value_text(key: str, value: Any) -> bytes:
    """A keyword setting's value as the text its FTL_* variable would hold: True is 1."""
    if not key.isidentifier():
        raise ConfigError(f"ftl: setting {key!r} is not a name like min_workers (FTL_MIN_WORKERS)")
    if isinstance(value, bool):
        value = int(value)
    return str(value).encode()


@contextlib.contextmanager
def settings(lib_, values: Dict[str, Any], with_env: bool = False) -> Iterator[int]:
    """A C settings object holding values by their lower-case names (min_workers for FTL_MIN_WORKERS),
    over the FTL_* environment when with_env; freed at the end of the with block."""
    s = lib_.ftl_settings_new()
    if not s:
        raise MemoryError("ftl: out of memory for the settings")
    try:
        if with_env and lib_.ftl_settings_load_env(s) != 0:
            raise config_error(lib_)
        for key, value in values.items():
            if lib_.ftl_settings_set(s, key.lower().encode(), _value_text(key, value)) != 0:
                raise config_error(lib_)
        yield s
    finally:
        lib_.ftl_settings_delete(s)


def from_environment(lib_, name: str) -> str:
    """One setting's text as the FTL_* environment gives it, read by libftl's settings object ("" when unset):
    for a value needed before the agent that will be made from that environment exists."""
    with settings(lib_, {}, with_env=True) as s:
        return text(lib_.ftl_settings_get(s, name.encode()))
