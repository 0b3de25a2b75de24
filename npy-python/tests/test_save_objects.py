"""Object arrays saved through the crate's pickle writer: any shape, the plain Python types
and containers of them, loaded back equal (values and types) by NumPy and by this package;
anything else raises, naming the element."""

import io

import numpy as np
import pytest

import npy_serde
from npy_serde import NpyValueError


def objects(values, shape):
    a = np.empty(len(values), dtype=object)
    a[:] = values
    return a.reshape(shape)


CASES = {
    "mixed 2-D": (["a", b"\x00\xff", 1, -(2**70), 2.5, 1 + 2j, True, None], (2, 4)),
    "containers": ([[1, [2, "x"]], (None,), (), {"k": [1.5], 2: (b"b",)}, [], {}], (6,)),
    "0-d": ([{"only": "one"}], ()),
    "3-D ints": ([i * 2**40 for i in range(24)], (2, 3, 4)),
    "long strings": (["é" * 300, "x" * 70000], (2,)),
    "big ints": ([2**63, -(2**63) - 1, 2**64, 2**200, -1, 0, 127, 128, 255, 256], (10,)),
    "empty": ([], (0, 3)),
}


def typed(x):
    """A value with the types of every part (so 1 and True and 1.0 differ)."""
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [typed(v) for v in x])
    if isinstance(x, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in x.items()])
    return (type(x).__name__, x)


@pytest.mark.parametrize("name", list(CASES))
def test_numpy_and_this_package_read_it_back(name):
    values, shape = CASES[name]
    a = objects(values, shape)
    buf = io.BytesIO()
    npy_serde.save(buf, a)
    data = buf.getvalue()
    for back in (np.load(io.BytesIO(data), allow_pickle=True),
                 npy_serde.load(data, allow_pickle_data=True)):
        assert back.dtype == object and back.shape == a.shape, name
        assert [typed(v) for v in back.ravel()] == [typed(v) for v in a.ravel()], name


def test_fortran_order_arrays_keep_their_values():
    a = np.asfortranarray(objects(list("abcdef"), (2, 3)))
    buf = io.BytesIO()
    npy_serde.save(buf, a)
    back = np.load(io.BytesIO(buf.getvalue()), allow_pickle=True)
    assert back.tolist() == a.tolist()


def test_other_elements_are_refused_by_index():
    for bad, what in [(np.float32(1), "numpy.float32"), (object(), "object"),
                      ({1, 2}, "set"), (range(3), "range")]:
        with pytest.raises(NpyValueError, match=f"element 1: a <class '{what}'>"):
            npy_serde.save(io.BytesIO(), objects(["ok", bad], (2,)))
    deep = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(NpyValueError, match="nested more than 100"):
        npy_serde.save(io.BytesIO(), objects([deep], (1,)))
