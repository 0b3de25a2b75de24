"""The exceptions of npy_serde: the crate's messages, with their positions."""


class NpyError(Exception):
    """Any error npy_serde raises about a file: the crate's message, with where (byte offset,
    record, field path) and what was expected against what was found."""


class NpyValueError(NpyError, ValueError):
    """The file is malformed, truncated, over a limit, or holds what is not data (NumPy raises
    ``ValueError`` for these)."""


class NpyOSError(NpyError, OSError):
    """The system refused an operation (a missing file, a failed read or write)."""
