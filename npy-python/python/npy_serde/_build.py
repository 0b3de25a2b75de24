"""Python halves of what npy_serde._native builds: NumPy arrays and scalars, datetime and
decimal values from values the data-only pickle reader checked. Nothing here imports or calls
what a file names: the modules are this package's own fixed imports."""

import ast
import datetime as _datetime
import decimal as _decimal

import numpy as np
from numpy.lib import format as _format

_SCALARS = {
    "bool": np.bool_,
    "int": np.int64,
    "uint": np.uint64,
    "float": np.float64,
    "complex": np.complex128,
    "str": np.str_,
    "bytes": np.bytes_,
    "void": np.void,
}


def scalar(kind, value):
    """A NumPy scalar of `kind`, for an element whose dtype is not known: NumPy's 64-bit type
    of that kind (a pickled scalar carries its dtype and goes through `typed_scalar`)."""
    make = _SCALARS.get(kind)
    return value if make is None else make(value)


def typed_scalar(descr, value):
    """A NumPy scalar of the dtype `descr` (its Python literal text) holding `value`, the plain
    value of one element (an int for a datetime64, a tuple for a record)."""
    return np.array(value, dtype=dtype_of(descr))[()]


def dtype_of(descr):
    """NumPy's dtype of a descr given as its Python literal text (``ast.literal_eval``: a
    literal, never code), ``StringDType(...)`` included."""
    if descr.startswith("StringDType"):
        return stringdtype(descr)
    return _format.descr_to_dtype(ast.literal_eval(descr))


def array(descr, shape, values):
    """An array of `descr` and `shape` from its values in C order."""
    dt = dtype_of(descr)
    if dt.hasobject:
        a = np.empty(len(values), dtype=dt)
        for i, v in enumerate(values):
            a[i] = v
    else:
        a = np.array(values, dtype=dt)
    return a.reshape(shape)


def stringdtype(descr):
    """NumPy 2's ``StringDType`` as its descr names it: ``StringDType()``, or with
    ``na_object=None``, ``nan`` or a string."""
    try:
        from numpy.dtypes import StringDType
    except ImportError:
        from .errors import NpyValueError

        raise NpyValueError(
            f"{descr}: NumPy {np.__version__} has no StringDType (NumPy 2 does)"
        ) from None
    inner = descr[len("StringDType("):-1].strip()
    if not inner:
        return StringDType()
    key, _, value = inner.partition("=")
    if key.strip() != "na_object":
        from .errors import NpyValueError

        raise NpyValueError(f"{descr}: an unknown StringDType argument")
    value = value.strip()
    if value == "None":
        return StringDType(na_object=None)
    if value == "nan":
        return StringDType(na_object=np.nan)
    return StringDType(na_object=ast.literal_eval(value))


def datetime(year, month, day, hour, minute, second, microsecond, fold, tzinfo):
    """A ``datetime.datetime`` of checked fields (``tzinfo`` None or a ``timezone``)."""
    return _datetime.datetime(year, month, day, hour, minute, second, microsecond,
                              tzinfo=tzinfo, fold=int(fold))


def date(year, month, day):
    """A ``datetime.date``."""
    return _datetime.date(year, month, day)


def time(hour, minute, second, microsecond, fold, tzinfo):
    """A ``datetime.time``."""
    return _datetime.time(hour, minute, second, microsecond, tzinfo=tzinfo, fold=int(fold))


def timedelta(days, seconds, microseconds):
    """A ``datetime.timedelta`` of its normalised fields."""
    return _datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)


def timezone(offset, name):
    """A ``datetime.timezone``: ``timezone(offset)`` is ``timezone.utc`` for a zero offset, as
    when Python unpickles it."""
    return _datetime.timezone(offset) if name is None else _datetime.timezone(offset, name)


def decimal(text):
    """A ``decimal.Decimal`` of its text (``str(Decimal)``, checked by the reader)."""
    return _decimal.Decimal(text)
