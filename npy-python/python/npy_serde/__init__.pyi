"""Type stubs of npy_serde."""

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any, Literal, Optional, Union

import numpy as np
import numpy.typing as npt

from .errors import NpyError as NpyError
from .errors import NpyOSError as NpyOSError
from .errors import NpyValueError as NpyValueError

MAX_HEADER_SIZE: int

_File = Union[str, os.PathLike[str], bytes, bytearray, memoryview, IO[bytes]]
_MmapMode = Optional[Literal["r", "r+", "w+", "c"]]
_Encoding = Literal["ASCII", "latin1", "bytes"]

class NpzFile(Mapping[str, Any]):
    files: list[str]
    def __init__(self, file: Union[str, os.PathLike[str], bytes], *,
                 mmap_mode: Optional[Literal["r", "c"]] = ..., allow_pickle_data: bool = ...,
                 encoding: _Encoding = ..., max_header_size: int = ...) -> None: ...
    def __getitem__(self, key: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> "NpzFile": ...
    def __exit__(self, *exc: object) -> None: ...

def load(file: _File, *, mmap_mode: _MmapMode = ..., allow_pickle_data: bool = ...,
         encoding: _Encoding = ..., max_header_size: int = ...) -> Union[np.ndarray, NpzFile]: ...
def load_many(files: Iterable[Union[str, os.PathLike[str]]], *, threads: Optional[int] = ...,
              allow_pickle_data: bool = ..., encoding: _Encoding = ...,
              max_header_size: int = ...) -> list[np.ndarray]: ...
def save(file: Union[str, os.PathLike[str], IO[bytes]], arr: npt.ArrayLike) -> None: ...
def savez(file: Union[str, os.PathLike[str], IO[bytes]], *args: npt.ArrayLike,
          **kwds: npt.ArrayLike) -> None: ...
def savez_compressed(file: Union[str, os.PathLike[str], IO[bytes]], *args: npt.ArrayLike,
                     **kwds: npt.ArrayLike) -> None: ...

_Layout = Literal["rows", "columns"]
_Policy = Union[str, Mapping[Optional[str], str], None]

def scan(source: Any, *, member: Optional[str] = ..., layout: _Layout = ...,
         columns: Optional[list[str]] = ..., batch_size: Optional[int] = ...,
         allow_pickle_data: bool = ...) -> Any: ...
def scan_npy(source: Any, *, member: Optional[str] = ..., layout: _Layout = ...,
             batch_size: Optional[int] = ..., allow_pickle_data: bool = ...) -> Any: ...
def read_npy(source: Any, *, member: Optional[str] = ..., layout: _Layout = ...,
             columns: Optional[list[str]] = ..., allow_pickle_data: bool = ...) -> Any: ...
def convert(src: Union[str, os.PathLike[str]], dst: Union[str, os.PathLike[str]], *,
            member: Optional[str] = ..., key: Optional[str] = ..., layout: _Layout = ...,
            columns: Union[str, Iterable[str], None] = ...,
            exclude: Union[str, Iterable[str], None] = ..., nulls: _Policy = ...,
            decimals: _Policy = ..., compression: Optional[str] = ...,
            row_group_size: Optional[int] = ..., allow_pickle_data: bool = ...) -> list[str]: ...
