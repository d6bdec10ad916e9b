"""The names of the C API's enums, read from the *_strs tables libftl exports (ftl_dtype_strs, ...): an
enum's value is its name's place in the table, so the Python side holds no second copy of the names or
their order, and its messages list what the library it loaded accepts.

What is copied here: each table's length, its enum's _MAX, since C exports the array without it. An enum
of the ABI only grows at its end, so a newer library's table starts with these entries;
tests/python/test_names.py checks the lengths against include/ftl/*.h. Read at first use, not at import
(importing ftl does not load the library).
"""
from __future__ import annotations

import ctypes
import functools
from typing import Tuple

from ._lib import lib, text

DTYPE, REDUCE_OP = "ftl_dtype_strs", "ftl_reduce_op_strs"                   # include/ftl/comm.h
COMPRESS, SAMPLER_ORDER = "ftl_compress_strs", "ftl_sampler_order_strs"     # include/ftl/execute.h
LENGTHS = {DTYPE: 9, REDUCE_OP: 8, COMPRESS: 3, SAMPLER_ORDER: 3}          # FTL_DTYPE_MAX, ...


@functools.lru_cache(maxsize=None)
def names(table: str) -> Tuple[str, ...]:
    """The names of one of libftl's *_strs tables, in the enum's order."""
    return tuple(text(entry) for entry in (ctypes.c_char_p * LENGTHS[table]).in_dll(lib(), table))


def value(table: str, name: object) -> int:
    """The enum value of name: its place in the table; ValueError when the table has no such name."""
    return names(table).index(name)
