"""The enum names the Python side reads from libftl's *_strs tables (ftl/_names.py): each length it assumes
is its enum's _MAX in include/ftl/*.h, the dtype names it maps NumPy's and torch's dtypes to are the ones C
gives those element sizes, and its refusals list the library's names."""
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from ftl import _buffers, _names
from ftl._lib import lib
from ftl.errors import ConfigError, Error
from ftl.gradient import mode_code

HEADERS = Path(__file__).resolve().parents[2] / "include" / "ftl"


def enum_max(table: str) -> int:
    """The value of the _MAX that sizes table's declaration in the headers, counted in its enum."""
    code = re.sub(r"/\*.*?\*/", "", "".join(p.read_text() for p in sorted(HEADERS.glob("*.h"))), flags=re.S)
    size = re.search(rf"\b{table}\[(\w+)\]", code).group(1)
    body = re.search(rf"enum\s+\w+\s*{{([^}}]*\b{size}\b[^}}]*)}}", code).group(1)
    value = -1
    for item in filter(None, (i.strip() for i in body.split(","))):
        name, _, given = item.partition("=")
        value = int(given) if given.strip() else value + 1
        if name.strip() == size:
            return value
    raise AssertionError(f"{size} not found in its enum")


@pytest.mark.parametrize("table", sorted(_names.LENGTHS))
def test_each_table_is_read_as_long_as_its_enum(table):
    assert _names.LENGTHS[table] == enum_max(table)
    assert len(_names.names(table)) == _names.LENGTHS[table] and all(_names.names(table))


def test_numpy_and_torch_dtypes_map_to_the_library_dtype_of_their_size():
    for dtype, name in _buffers._NUMPY.items():
        assert lib().ftl_dtype_size(_names.value(_names.DTYPE, name)) == dtype.itemsize, name
    for dtype, name in _buffers._TORCH.items():
        itemsize = getattr(torch, dtype.split(".")[1]).itemsize
        assert lib().ftl_dtype_size(_names.value(_names.DTYPE, name)) == itemsize, name
    assert _buffers.describe(np.zeros(2, np.int8), "x").dtype == _names.value(_names.DTYPE, "i8")


def test_refusals_list_the_librarys_names():
    with pytest.raises(Error, match="use one of " + ", ".join(_names.names(_names.REDUCE_OP))):
        _buffers.op_code("mean")
    with pytest.raises(ConfigError, match=", ".join(_names.names(_names.COMPRESS))):
        mode_code("fp8")
    assert _names.names(_names.SAMPLER_ORDER)[0] == "shuffle"  # set_sampler's default order, value 0
