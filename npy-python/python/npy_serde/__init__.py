"""NumPy ``.npy`` and ``.npz`` files loaded and saved by npy-serde, a Rust library.

``load`` reads what ``np.load`` reads and gives the same arrays (dtype with names, offsets,
titles and alignment, shape, order, byte order, values), through the crate's header parser and
its limits: a hostile file raises a clear :class:`~npy_serde.errors.NpyError`, never a crash or
a huge allocation. Object arrays (dtype ``O``, NumPy 2's ``StringDType``) are read with
``allow_pickle_data=True`` by the crate's data-only pickle reader: **nothing in the file is
imported or run**, where ``np.load(allow_pickle=True)`` runs whatever the pickle names.

``save``, ``savez`` and ``savez_compressed`` write what NumPy writes: for every array
``np.save`` writes without a pickle, the same bytes.

>>> import numpy as np, npy_serde, io
>>> buf = io.BytesIO()
>>> npy_serde.save(buf, np.arange(3, dtype="<i4"))
>>> buf.getvalue() == (lambda b: (np.save(b, np.arange(3, dtype="<i4")), b.getvalue())[1])(io.BytesIO())
True
>>> npy_serde.load(buf.getvalue())
array([0, 1, 2], dtype=int32)
"""

import collections.abc
import glob as _glob
import os

import numpy as np
from numpy.lib import format as _format

from . import _build, _native
from .errors import NpyError, NpyOSError, NpyValueError

__all__ = [
    "load",
    "load_many",
    "save",
    "savez",
    "savez_compressed",
    "NpzFile",
    "scan",
    "scan_npy",
    "read_npy",
    "convert",
    "sql",
    "Query",
    "NpyError",
    "NpyValueError",
    "NpyOSError",
]

#: NumPy's default ``max_header_size``: longer headers are refused unless raised.
MAX_HEADER_SIZE = 10000

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_ZIP_EMPTY = b"PK\x05\x06"
_ENCODINGS = ("ASCII", "latin1", "bytes")
_MMAP_MODES = (None, "r", "r+", "w+", "c")


def _check_options(mmap_mode, encoding):
    if encoding not in _ENCODINGS:
        raise ValueError("encoding must be 'ASCII', 'latin1', or 'bytes'")
    if mmap_mode not in _MMAP_MODES:
        raise ValueError(f"mmap_mode must be one of {_MMAP_MODES[1:]!r}, not {mmap_mode!r}")


def _array(loaded):
    """The array `loaded` describes (what ``_native`` returned), built as ``np.load`` builds it:
    typed arrays come built (their memory the bytes the crate read, owned by the array through
    its base, a ``_native.ArrayMemory``), object arrays from their values."""
    if type(loaded) is not tuple:
        return loaded
    kind = loaded[0]
    if kind == "objects":
        _, descr, shape, fortran, values = loaded
        if descr.startswith("StringDType"):
            dtype = _build.stringdtype(descr)
            na = getattr(dtype, "na_object", None)
            flat = np.array([na if v is None else v for v in values], dtype=dtype)
        else:
            dtype = _build.dtype_of(descr)
            flat = np.empty(len(values), dtype=dtype)
            for i, v in enumerate(values):
                flat[i] = v
        array = flat.reshape(shape)
        return np.asfortranarray(array) if fortran else array
    if kind == "raw":
        return loaded[1]
    raise NpyError(f"internal error: an unknown kind {kind!r}")


def _is_bytes(file):
    return isinstance(file, (bytes, bytearray, memoryview))


def _is_url(file):
    """A ``scheme://`` string: which schemes are read (``s3``, ``http``, ``https``) is the
    crate's to say, and its error lists them."""
    if not isinstance(file, str):
        return False
    scheme, sep, _ = file.partition("://")
    return bool(sep) and len(scheme) >= 2 and scheme[0].isalpha() and all(
        c.isalnum() or c in "+-." for c in scheme)


def load(file, *, mmap_mode=None, allow_pickle_data=False, encoding="ASCII",
         max_header_size=MAX_HEADER_SIZE):
    """Load an array from a ``.npy`` file, or an :class:`NpzFile` from a ``.npz`` archive.

    Parameters are ``np.load``'s. `file` is a path (``str``, ``os.PathLike``), a bytes-like
    object holding the file, a binary file object (read from its current position and left
    right after the array, as ``np.load`` leaves it), or an ``s3://bucket/key`` or
    ``http(s)://host/path`` URL, read by ranged GETs (credentials and endpoint from the
    ``AWS_*`` environment; for an archive, only its directory and the members asked for). With `mmap_mode` a ``.npy`` is an
    ``np.memmap``, as ``np.load`` returns it, once its header and size are checked. With
    `allow_pickle_data`, object arrays are read as data: nothing is imported or run.

    Raises :class:`NpyValueError` (a ``ValueError``) for a malformed, truncated or hostile
    file, an object array without `allow_pickle_data`, or a header over `max_header_size`;
    :class:`NpyOSError` (an ``OSError``) when the system refuses.
    """
    _check_options(mmap_mode, encoding)
    opts = (allow_pickle_data, encoding, max_header_size)
    if _is_bytes(file):
        data = bytes(file)
        if data.startswith((_ZIP_MAGIC, _ZIP_EMPTY)):
            return NpzFile(data, allow_pickle_data=allow_pickle_data, encoding=encoding,
                           max_header_size=max_header_size)
        return _array(_native.read_npy_bytes(data, *opts))
    if hasattr(file, "read"):
        start = file.tell() if hasattr(file, "tell") else None
        magic = file.read(len(_NPY_MAGIC))
        if start is not None:
            file.seek(start)
        elif magic:
            raise NpyValueError("a file object must be seekable to tell .npy from .npz")
        if magic.startswith((_ZIP_MAGIC, _ZIP_EMPTY)):
            return NpzFile(file.read(), allow_pickle_data=allow_pickle_data,
                           encoding=encoding, max_header_size=max_header_size)
        return _array(_native.read_npy_file(file, *opts))
    if _is_url(file):
        if mmap_mode is not None:
            raise NpyValueError(f"{file}: mmap_mode maps local files only")
        loaded = _native.read_npy_url(file, *opts)
        if type(loaded) is tuple and loaded[0] == "npz":
            return NpzFile(file, allow_pickle_data=allow_pickle_data, encoding=encoding,
                           max_header_size=max_header_size)
        return _array(loaded)
    path = os.fspath(file)
    with open(path, "rb") as f:
        magic = f.read(len(_NPY_MAGIC))
    if magic.startswith((_ZIP_MAGIC, _ZIP_EMPTY)):
        return NpzFile(path, mmap_mode=mmap_mode, allow_pickle_data=allow_pickle_data,
                       encoding=encoding, max_header_size=max_header_size)
    loaded = _native.read_npy_path(path, mmap_mode is not None, *opts)
    if type(loaded) is tuple and loaded[0] == "mapped":
        # Checked by the crate (header, limits, size): mapped as np.load maps it.
        return _format.open_memmap(path, mode=mmap_mode, max_header_size=max_header_size)
    return _array(loaded)


def load_many(files, *, threads=None, allow_pickle_data=False, encoding="ASCII",
              max_header_size=MAX_HEADER_SIZE):
    """Load many ``.npy`` files at once: a list of arrays, in the order of `files` (paths).

    The files are read on `threads` threads (all cores by default) with the GIL released, each
    checked as :func:`load` checks it; the arrays are then built as ``np.load`` builds them,
    each owning its memory (one dtype per distinct descr; a record dtype is copied for each
    array, so setting ``names`` on one renames no other's fields).
    The first file that cannot be read raises, its path in the message.
    """
    _check_options(None, encoding)
    if threads is not None and threads < 1:
        raise ValueError("threads must be at least 1")
    paths = [os.fspath(f) for f in files]
    loaded = _native.read_npy_many(paths, threads, allow_pickle_data, encoding, max_header_size)
    return [_array(x) for x in loaded]


class NpzFile(collections.abc.Mapping):
    """A ``.npz`` archive, read lazily like NumPy's ``NpzFile``: ``keys()``, ``in``, ``[]``
    (``"x"`` or ``"x.npy"``), ``len``, iteration, ``files``, and a context manager. Each
    member is read when asked, its CRC-32 checked. With ``mmap_mode='r'`` (or ``'c'``) a
    stored member of an archive on disk is an ``np.memmap`` of its bytes in place, which
    ``np.load`` does not do; compressed members are read into memory."""

    def __init__(self, file, *, mmap_mode=None, allow_pickle_data=False, encoding="ASCII",
                 max_header_size=MAX_HEADER_SIZE):
        _check_options(mmap_mode, encoding)
        if mmap_mode not in (None, "r", "c"):
            raise ValueError("an archive's members are mapped read-only ('r') or "
                             "copy-on-write ('c')")
        if _is_bytes(file):
            self._path = None
            self._native = _native.Npz(None, bytes(file), max_header_size)
        elif _is_url(file):
            # Read by ranged GETs: the directory now, each member when asked for.
            self._path = None
            self._native = _native.Npz(None, None, max_header_size, file)
        else:
            self._path = os.fspath(file)
            self._native = _native.Npz(self._path, None, max_header_size)
        self._mmap_mode = mmap_mode
        self._allow_pickle_data = allow_pickle_data
        self._encoding = encoding
        self.files = self._native.keys()

    def _key(self, key):
        if key in self.files:
            return key
        if isinstance(key, str) and key.endswith(".npy") and key[:-4] in self.files:
            return key[:-4]
        raise KeyError(f"{key} is not a file in the archive")

    def __getitem__(self, key):
        if self._native is None:
            raise ValueError("the archive is closed")
        key = self._key(key)
        if self._mmap_mode is not None:
            m = self._native.mapped(key)
            if m is not None:
                _, descr, shape, fortran, offset = m
                return np.memmap(self._path, dtype=_format.descr_to_dtype(descr),
                                 mode=self._mmap_mode, offset=offset, shape=shape,
                                 order="F" if fortran else "C")
        return _array(self._native.read(key, self._allow_pickle_data, self._encoding))

    def __contains__(self, key):
        try:
            self._key(key)
        except KeyError:
            return False
        return True

    def __iter__(self):
        return iter(self.files)

    def __len__(self):
        return len(self.files)

    def close(self):
        """Close the archive (its file, if it has one)."""
        self._native = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        where = self._path if self._path is not None else "bytes"
        return f"NpzFile {where!r} with keys: {', '.join(self.files[:5])}" + (
            "..." if len(self.files) > 5 else "")


def _npy_parts(arr):
    """The ``.npy`` header and data (a ``uint8`` view, or bytes) of `arr`, as np.save writes."""
    if arr.dtype.hasobject or arr.dtype.kind == "T":
        return b"", _objects_npy(arr)
    fortran = bool(arr.flags.f_contiguous and not arr.flags.c_contiguous)
    descr = repr(_format.dtype_to_descr(arr.dtype))
    header = _native.npy_header(descr, [int(d) for d in arr.shape], fortran)
    body = np.ascontiguousarray(arr.T if fortran else arr)
    if body.dtype.itemsize == 0 or body.size == 0:
        return header, np.empty(0, dtype=np.uint8)
    return header, body.reshape(-1).view(np.uint8)


def _objects_npy(arr):
    """An object array through the crate's pickle writer (NumPy 1.26 and 2.x load it): any
    shape, its elements ``str``, ``bytes``, ``int``, ``float``, ``complex``, ``bool``,
    ``None``, and lists, tuples and dicts of them; or a 1-D ``StringDType`` array of ``str``
    (``None`` its ``na_object``)."""
    if arr.dtype.kind == "T":
        if arr.ndim != 1:
            raise NpyValueError(
                f"saving a StringDType array of shape {arr.shape}: this writer takes 1-D ones "
                "(save arr.ravel() and reshape it after loading)")
        values = arr.tolist()
        na = getattr(arr.dtype, "na_object", _MISSING)
        if na is not _MISSING and na is not None:
            raise NpyValueError("saving a StringDType array: its na_object must be None")
        values = [None if (na is not _MISSING and v is na) else v for v in values]
        return np.frombuffer(_native.strings_npy(values, True, na is not _MISSING), np.uint8)
    values = list(arr.ravel(order="C"))
    return np.frombuffer(_native.objects_npy(values, [int(d) for d in arr.shape]), np.uint8)


_MISSING = object()


def _write(file, parts, suffix):
    """Writes `parts` (bytes-likes) to a path (`suffix` appended as NumPy appends it) or a
    file object."""
    if hasattr(file, "write"):
        for p in parts:
            file.write(p)
        return
    path = os.fspath(file)
    if not str(path).endswith(suffix):
        path = f"{path}{suffix}"
    with open(path, "wb") as f:
        for p in parts:
            f.write(p)


def save(file, arr):
    """Save an array to a ``.npy`` file, as ``np.save`` does: for every array it writes without
    a pickle, the same bytes. A path without the ``.npy`` extension gets it. Object arrays of
    any shape holding ``str``, ``bytes``, ``int``, ``float``, ``complex``, ``bool``, ``None``
    and lists, tuples and dicts of them, and 1-D ``StringDType`` arrays, are written by the
    crate's pickle writer (NumPy 1.26 and 2.x load them with ``allow_pickle=True``; this
    package with ``allow_pickle_data=True``); any other element raises."""
    arr = np.asanyarray(arr)
    header, data = _npy_parts(arr)
    _write(file, [header, data], ".npy")


def _members(args, kwds):
    named = {}
    for i, a in enumerate(args):
        named[f"arr_{i}"] = a
    for k, a in kwds.items():
        if k in named:
            raise ValueError(f"Cannot use un-named variables and keyword {k}")
        named[k] = a
    out = []
    for k, a in named.items():
        header, data = _npy_parts(np.asanyarray(a))
        out.append((f"{k}.npy", header, data))
    return out


def _savez(file, args, kwds, compressed):
    members = _members(args, kwds)
    if hasattr(file, "write"):
        file.write(_native.write_npz(None, members, compressed))
        return
    path = os.fspath(file)
    if not str(path).endswith(".npz"):
        path = f"{path}.npz"
    _native.write_npz(str(path), members, compressed)


def savez(file, *args, **kwds):
    """Save several arrays into an uncompressed ``.npz`` archive, named as ``np.savez`` names
    them (``arr_0``, ... for positional ones): each member holds the bytes ``np.save`` writes."""
    _savez(file, args, kwds, False)


def savez_compressed(file, *args, **kwds):
    """:func:`savez` with deflated members (``np.savez_compressed``)."""
    _savez(file, args, kwds, True)


def _paths(source):
    """The ``.npy`` files `source` names: a file, a directory's ``*.npy`` (sorted), a glob
    (sorted), or a list of them."""
    if isinstance(source, (list, tuple)):
        out = []
        for s in source:
            out.extend(_paths(s))
        return out
    path = os.fspath(source)
    if os.path.isdir(path):
        files = sorted(_glob.glob(os.path.join(_glob.escape(path), "*.npy")))
        if not files:
            raise NpyValueError(f"{path}: a directory without .npy files")
        return files
    if any(c in path for c in "*?["):
        files = sorted(_glob.glob(path))
        if not files:
            raise NpyValueError(f"{path}: no file matches")
        return files
    return [path]


def scan(source, *, member=None, layout="rows", columns=None, batch_size=None,
         allow_pickle_data=False):
    """Scan ``.npy`` files as Arrow record batches, through the Arrow PyCapsule interface:
    ``pyarrow.table(s)``, ``polars.DataFrame(s)`` and ``duckdb.sql("FROM s")`` take the result
    (no pyarrow needed here), and each of them reads the files anew.

    `source` is a ``.npy`` file, a directory (its ``*.npy`` files, sorted), a glob, or a list
    of them, every file of one schema; or an ``.npz`` archive with `member` the key of one of
    its arrays. With ``layout="columns"`` `source` is a column table: an ``.npz`` archive whose
    members are the columns (what ``np.savez(path, **columns)`` writes) or a directory of
    ``COLUMN.npy`` files, every array of one length; a 1-D array is a column of its type, an
    N-d one a fixed-size-list column, a record array a struct column.

    `columns` picks fields of a record array (of a column table: its columns), in order; a
    consumer's ``requested_schema`` does too. Record fields become columns, subarrays
    fixed-size lists, as npy-arrow maps them; object arrays of strings with `allow_pickle_data`.

    >>> import numpy as np, npy_serde, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.savez(os.path.join(d, "t.npz"), id=np.arange(3), x=np.ones(3, "<f4"))
    >>> npy_serde.scan(os.path.join(d, "t.npz"), layout="columns").column_names  # pa.table(..)
    ['id', 'x']
    """
    if layout not in ("rows", "columns"):
        raise ValueError(f"layout must be 'rows' or 'columns', not {layout!r}")
    if layout == "columns":
        if member is not None:
            raise ValueError("a column table is a whole archive or directory: no member")
        return _native.Scan([], os.fspath(source), None, columns, batch_size,
                            allow_pickle_data, True)
    if member is not None:
        archive = os.fspath(source)
        return _native.Scan([], archive, member, columns, batch_size, allow_pickle_data)
    return _native.Scan(_paths(source), None, None, columns, batch_size, allow_pickle_data)


#: Rows per DataFrame that ``scan_npy`` hands to Polars (the reader's batches concatenated).
_POLARS_ROWS = 1 << 20


def scan_npy(source, *, member=None, layout="rows", batch_size=None, allow_pickle_data=False):
    """A Polars ``LazyFrame`` over ``.npy`` files or a column table (see :func:`scan` for
    `source`, `member` and `layout`), through Polars' IO plugins
    (``polars.io.plugins.register_io_source``, unstable in Polars; tested with Polars 2.1).

    Pushed into the scan:

    - the projection (``select``, ``with_columns``): only those fields are decoded;
    - ``head(n)`` / ``n_rows``: the scan stops once n rows are out;
    - the filter's conjuncts (terms joined by ``&``) that compare one column with a literal:
      ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (either side), ``is_between``,
      ``is_null()``, ``is_not_null()``, on integer, float, boolean and string columns. They are
      evaluated on each batch in Rust, so the rows they drop never become Polars frames. A term
      whose literal the column cannot hold exactly, a float compared with zero or a
      non-finite value, and every other expression (``|``, ``is_in``, arithmetic, dates) are
      left to Polars.

    Polars applies the whole predicate to what the scan gives, so the answer is always the
    predicate's, exactly.
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    s = scan(source, member=member, layout=layout, batch_size=batch_size,
             allow_pickle_data=allow_pickle_data)
    schema = pl.DataFrame(s.empty()).schema

    def batches(with_columns, predicate, n_rows, batch_size_hint):
        left = n_rows
        terms = _polars_filter(predicate) if predicate is not None else []
        it = s.batches(with_columns, terms or None)
        # A DataFrame costs Polars the same whatever its rows: hand over large ones.
        rows = max(batch_size_hint or 0, _POLARS_ROWS)
        while True:
            if left is not None and left <= 0:
                return
            b = it.next_rows(rows if left is None else min(rows, left))
            if b is None:
                return
            df = pl.DataFrame(b)
            if predicate is not None:
                df = df.filter(predicate)
            if left is not None:
                df = df.head(left)
                left -= df.height
            yield df

    return register_io_source(io_source=batches, schema=schema)


_FLIPPED = {"Eq": "==", "NotEq": "!=", "Lt": ">", "LtEq": ">=", "Gt": "<", "GtEq": "<="}
_OPS = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_NO_LITERAL = object()


def _polars_literal(node):
    """The Python value of a Polars literal node (its JSON form), or ``_NO_LITERAL``."""
    lit = node.get("Literal") if isinstance(node, dict) else None
    if not isinstance(lit, dict) or len(lit) != 1:
        return _NO_LITERAL
    (kind, value), = lit.items()
    if not isinstance(value, dict) or len(value) != 1:
        return _NO_LITERAL
    (typ, v), = value.items()
    if kind == "Dyn" and typ in ("Int", "Float"):
        return v
    if kind == "Scalar":
        if typ == "Boolean" and isinstance(v, bool):
            return v
        if typ == "String" and isinstance(v, str):
            return v
        if typ.startswith(("Int", "UInt")) and isinstance(v, int) and not isinstance(v, bool):
            return v
        if typ.startswith("Float") and isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return _NO_LITERAL


def _polars_terms(node, out):
    """Appends the pushable conjuncts of the Polars expression `node` (its JSON form)."""
    if not isinstance(node, dict) or len(node) != 1:
        return
    (kind, body), = node.items()
    if kind == "BinaryExpr":
        op, left, right = body.get("op"), body.get("left"), body.get("right")
        if op in ("And", "LogicalAnd"):
            _polars_terms(left, out)
            _polars_terms(right, out)
        elif op in _OPS:
            if isinstance(left, dict) and isinstance(left.get("Column"), str):
                v = _polars_literal(right)
                if v is not _NO_LITERAL:
                    out.append((left["Column"], _OPS[op], v))
            elif isinstance(right, dict) and isinstance(right.get("Column"), str):
                v = _polars_literal(left)
                if v is not _NO_LITERAL:
                    out.append((right["Column"], _FLIPPED[op], v))
    elif kind == "Function":
        inputs, function = body.get("input"), body.get("function")
        if not isinstance(inputs, list) or not inputs or not isinstance(inputs[0], dict):
            return
        column = inputs[0].get("Column")
        if not isinstance(column, str) or not isinstance(function, dict):
            return
        boolean = function.get("Boolean")
        if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1:
            out.append((column, "is_null" if boolean == "IsNull" else "is_not_null", None))
        elif isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
            closed = boolean["IsBetween"].get("closed")
            lo, hi = _polars_literal(inputs[1]), _polars_literal(inputs[2])
            if lo is not _NO_LITERAL and closed in ("Both", "Left", "Right", "None"):
                out.append((column, ">=" if closed in ("Both", "Left") else ">", lo))
            if hi is not _NO_LITERAL and closed in ("Both", "Left", "Right", "None"):
                out.append((column, "<=" if closed in ("Both", "Right") else "<", hi))


def _polars_filter(predicate):
    """The conjuncts of a Polars predicate the scan evaluates (see :func:`scan_npy`); none if
    its form is not one this package reads (Polars then applies it alone, as always)."""
    import json

    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # a Polars without the JSON form: nothing is pushed
        return []
    out = []
    _polars_terms(tree, out)
    return out


def read_npy(source, *, member=None, layout="rows", columns=None, allow_pickle_data=False):
    """A Polars ``DataFrame`` of ``.npy`` files or a column table (see :func:`scan`), read now."""
    import polars as pl

    return pl.DataFrame(scan(source, member=member, layout=layout, columns=columns,
                             allow_pickle_data=allow_pickle_data))


def _policies(what, policy):
    """`nulls` / `decimals` as ``(column or None, policy)`` pairs: a string for every column,
    a mapping of column names (``None`` for the others) to policies."""
    if policy is None:
        return []
    if isinstance(policy, str):
        return [(None, policy)]
    if isinstance(policy, collections.abc.Mapping):
        return [(None if k is None else str(k), str(v)) for k, v in policy.items()]
    raise TypeError(f"{what} must be a str or a mapping of column names to policies")


def convert(src, dst, *, member=None, key=None, layout="rows", columns=None, exclude=None,
            nulls=None, decimals=None, compression=None, row_group_size=None,
            allow_pickle_data=False):
    """Convert a table from one format to another, as ``npy convert`` does: the formats by
    extension, ``.npy``, ``.npz``, ``.parquet``, ``.arrow`` (Arrow IPC, also ``.feather``),
    and column tables (an ``.npz`` of columns or a directory of ``COLUMN.npy`` files).

    - `src`: a ``.npy`` file, an ``.npz`` archive with `member` the key of an array (without
      it, the archive is read as a column table), a directory (a column table), a Parquet or
      an Arrow IPC file.
    - `dst`: the output; written under a temporary name beside it and renamed over it when
      complete (a failed conversion leaves no file). An ``.npz`` output holds the table as
      the member `key` (default: `src`'s stem); with ``layout="columns"`` it is a column table
      (stored members, each one's data aligned at 64 bytes), and a `dst` without one of the
      extensions above a directory of ``COLUMN.npy`` files.
    - `columns`, `exclude`: the top-level columns, in order (others are never decoded).
    - `nulls`, `decimals` (``.npy`` / ``.npz`` output): a policy for every column
      (``nulls="nan"``) or a mapping of column names to policies (``{"price": "fill=0",
      None: "nan"}``, ``None`` for the others). Nulls: ``error`` (default: an error naming
      column and row), ``nan``, ``fill=VALUE``, ``mask`` (a ``NAME_valid`` field beside each
      nullable column; not for column tables). Decimals: ``auto`` (default: float64 up to 15
      digits, exact back), ``f8``, ``scaled`` (int64 of the unscaled value).
    - `compression` (Parquet output): ``none``, ``snappy`` (default), ``zstd`` or
      ``zstd:LEVEL``; `row_group_size`: most rows per row group.
    - `allow_pickle_data`: object arrays of ``str`` / ``bytes`` read as data (never run).

    A string column from a table is as wide (``U<n>``) as its widest value anywhere in it.
    Returns, for a column table, the columns whose Arrow type a plain array cannot keep (their
    values exact, their type the dtype's own on reading); else an empty list.

    >>> import numpy as np, npy_serde, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "a.npy"), np.array([(1, 2.5)], dtype=[("id", "<i8"), ("x", "<f8")]))
    >>> npy_serde.convert(os.path.join(d, "a.npy"), os.path.join(d, "a.parquet"))
    []
    >>> npy_serde.convert(os.path.join(d, "a.parquet"), os.path.join(d, "cols.npz"), layout="columns")
    []
    >>> np.load(os.path.join(d, "cols.npz"))["x"]
    array([2.5])
    """
    if exclude is not None and isinstance(exclude, str):
        exclude = [exclude]
    if columns is not None and isinstance(columns, str):
        columns = [columns]
    return _native.convert(
        os.fspath(src), os.fspath(dst), member, key, layout,
        None if columns is None else list(columns), list(exclude or []),
        _policies("nulls", nulls), _policies("decimals", decimals),
        compression, row_group_size, allow_pickle_data)


class Query:
    """The result of :func:`sql`: an Arrow stream (``__arrow_c_stream__``; ``pyarrow.table``,
    ``polars.DataFrame`` and DuckDB take it), the query run anew for each consumer, or a record
    array (:meth:`to_numpy`)."""

    def __init__(self, native):
        self._native = native

    @property
    def column_names(self):
        """The result's columns."""
        return self._native.column_names

    def __arrow_c_stream__(self, requested_schema=None):
        return self._native.__arrow_c_stream__(requested_schema)

    def to_numpy(self):
        """The result as a record array (one field per column), as npy-arrow writes it."""
        return load(self._native.npy_bytes())


def sql(query, tables, *, memory_limit=None):
    """Run SQL over tables named by table specs, the specs ``npy sql -t NAME=SPEC`` takes:
    a ``.npy`` file, a directory of shards or a glob, ``npz(a.npz, member=x)``, column tables
    (``npy(dir, layout=columns)``), Parquet, Arrow IPC and CSV files, ``s3://`` and
    ``http(s)://`` URLs, with options (``allow_pickle_data=true``, ...).

    `tables` maps table names to specs. With `memory_limit` (``"2GiB"``) the query spills to
    disk past it. Returns a :class:`Query`. Needs the package's ``sql`` feature (a build with
    DataFusion: ``MATURIN_PEP517_ARGS="--features sql" pip install ./npy-python``).
    """
    native = getattr(_native, "Query", None)
    if native is None:
        raise NpyError("this npy_serde was built without the `sql` feature: install it with "
                       "MATURIN_PEP517_ARGS=\"--features sql\" pip install ./npy-python")
    return Query(native(query, [(str(k), os.fspath(v)) for k, v in dict(tables).items()],
                        memory_limit))
