//! `load` of one `.npy` array: the header read once by the crate (its limits, its errors), then
//! the array `np.load` would give built over the bytes read (`array.rs`: the dtype from the
//! descr exactly as written, through `numpy.lib.format`'s own `descr_to_dtype`; no second
//! copy), or, for Python to finish (`npy_serde/__init__.py`), the data offset for `np.memmap`
//! or an object array's values built from the data-only pickle reader's.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::AtomicBool;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use npy_serde::header::{header_literal, read_contents, Contents, Literal, ObjectHeader};
use npy_serde::pickle::{Encoding, PickleOptions};
use npy_serde::{Error, ErrorKind, Limits, ReaderBuilder};

use crate::array::{array_of, dtype_of, literal_to_py, Dtypes};
use crate::errors::{to_py_in, value_error, IntoPy};
use crate::interrupt::{interruptible, is_cancelled, read_exact_cancellable, stopped};
use crate::objects::values_to_py;
use crate::reader::Tee;

/// The options `load` takes, as NumPy names them.
#[derive(Clone, Debug)]
pub struct Options {
    /// Read object arrays as data.
    pub allow_pickle_data: bool,
    /// How Python 2 `str` values in pickles are read.
    pub encoding: Encoding,
    /// The largest header read (NumPy's `max_header_size`).
    pub max_header_size: u64,
}

impl Options {
    /// The options from `load`'s arguments.
    pub fn new(allow_pickle_data: bool, encoding: &str, max_header_size: u64) -> PyResult<Options> {
        let encoding = encoding
            .parse::<Encoding>()
            .map_err(|e| value_error(format!("encoding: {e}")))?;
        Ok(Options {
            allow_pickle_data,
            encoding,
            max_header_size,
        })
    }

    pub fn limits(&self) -> Limits {
        Limits {
            max_header_size: self.max_header_size,
            ..Limits::default()
        }
    }

    /// The crate's reader with these options.
    pub fn reader(&self) -> ReaderBuilder {
        ReaderBuilder::new()
            .with_limits(self.limits())
            .allow_pickle_data(self.allow_pickle_data)
            .pickle_options(PickleOptions::default().encoding(self.encoding))
    }
}

/// A header read from a stream: what it says, and the `descr` exactly as written.
pub struct Head {
    pub contents: Contents,
    /// The descr as written (typed arrays; an object array's is in its header).
    pub descr: Option<Literal>,
}

impl Head {
    /// The typed header and its descr as written; an object array is refused.
    pub fn typed(self) -> npy_serde::Result<(npy_serde::ParsedHeader, Literal)> {
        let parsed = self.contents.typed()?;
        let descr = self
            .descr
            .ok_or_else(|| Error::invalid_value("the header has no descr"))?;
        Ok((parsed, descr))
    }
}

/// The `descr` of a typed header, exactly as written in `header_bytes`.
pub fn descr_of(header_bytes: &[u8], limits: &Limits) -> npy_serde::Result<Option<Literal>> {
    Ok(header_literal(header_bytes, limits)?.get("descr").cloned())
}

/// Reads the header at the start of `r` (left at the first data byte).
pub fn read_head<R: Read + ?Sized>(r: &mut R, limits: &Limits) -> npy_serde::Result<Head> {
    let mut tee = Tee::new(r);
    let contents = read_contents(&mut tee, limits)?;
    let descr = match &contents {
        Contents::Objects(_) => None,
        _ => descr_of(&tee.seen, limits)?,
    };
    Ok(Head { contents, descr })
}

fn shape_tuple<'py>(py: Python<'py>, shape: &[u64]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, shape)
}

/// `("objects", descr, shape, fortran_order, values)`: the values in C order.
pub fn objects_of<'py>(
    py: Python<'py>,
    h: &ObjectHeader,
    pickle: &[u8],
    o: &Options,
) -> PyResult<Bound<'py, PyAny>> {
    if !o.allow_pickle_data {
        return Err(refusal(h));
    }
    let a = o.reader().read_objects_with_header(h, pickle).py()?;
    let values = values_to_py(py, &a.values)?;
    Ok((
        "objects",
        a.descr,
        shape_tuple(py, &a.shape)?,
        a.fortran_order,
        values,
    )
        .into_pyobject(py)?
        .into_any())
}

/// The refusal of an object array without `allow_pickle_data`, in Python's terms.
fn refusal(h: &ObjectHeader) -> PyErr {
    let at = h.refusal().position().byte;
    value_error(format!(
        "object arrays ('|O', StringDType) hold Python pickles: load them with \
         allow_pickle_data=True, which reads them as data (nothing is imported or run, unlike \
         np.load's allow_pickle=True){}",
        at.map(|b| format!(" (at byte {b})")).unwrap_or_default()
    ))
}

fn truncated(expected: u64, found: u64) -> Error {
    Error::new(ErrorKind::UnexpectedEof {
        what: "the array data",
        expected,
        found,
    })
}

/// A `.npy` file read without the GIL: what [`to_loaded`] hands to Python.
pub enum Raw {
    /// A typed array: the descr as written, the shape, the order, the data bytes.
    Typed(Literal, Vec<u64>, bool, Vec<u8>),
    /// A typed array read with its file in one buffer: the data starts at the offset.
    TypedIn(Literal, Vec<u64>, bool, Vec<u8>, usize),
    /// A typed array left to `np.memmap`: its data offset.
    Mapped(Literal, Vec<u64>, bool, u64),
    /// An object array: its header and pickle.
    Objects(ObjectHeader, Vec<u8>),
    /// An archive member that is not a `.npy` file: its bytes (what `np.load` gives for one).
    Bytes(Vec<u8>),
}

/// Files up to this size are read whole, in one `read`, into the buffer the array then owns
/// (the header before the data, a few hundred bytes): a header read apart costs a `read` per
/// piece of it (magic, length, text), which is most of a small file's time besides the copy.
const WHOLE: u64 = 1 << 20;

/// Reads the `.npy` file at `path` (no Python object is touched: callers run it without the
/// GIL); with `mmap`, only the header, once the file is known to hold the data.
pub fn read_path(
    path: &str,
    mmap: bool,
    limits: &Limits,
    cancel: &AtomicBool,
) -> npy_serde::Result<Raw> {
    let f = File::open(path)?;
    let len = f.metadata()?.len();
    read_file(f, len, mmap, limits, cancel)
}

/// Reads the `.npy` file `f` of `len` bytes (see [`read_path`]).
fn read_file(
    mut f: File,
    len: u64,
    mmap: bool,
    limits: &Limits,
    cancel: &AtomicBool,
) -> npy_serde::Result<Raw> {
    if !mmap && len <= WHOLE {
        return read_whole(&f, len, limits);
    }
    let head = read_head(&mut f, limits)?;
    match head.contents {
        Contents::Objects(_) if mmap => Err(Error::invalid_value(
            "an object array cannot be memory-mapped (its data is a pickle): load it without \
             mmap_mode",
        )),
        Contents::Objects(h) => {
            let mut pickle = Vec::new();
            f.read_to_end(&mut pickle)?;
            Ok(Raw::Objects(h, pickle))
        }
        contents => {
            let (p, descr) = Head { contents, ..head }.typed()?;
            let need = p.header.data_len()?;
            let have = len.saturating_sub(p.data_offset);
            if have < need {
                return Err(truncated(need, have).at_byte(len));
            }
            let (shape, fortran) = (p.header.shape, p.header.fortran_order);
            if mmap {
                return Ok(Raw::Mapped(descr, shape, fortran, p.data_offset));
            }
            // The file holds `need` bytes after the header (checked above): allocated once,
            // read straight into the buffer the array will own.
            let n = usize::try_from(need)
                .map_err(|_| Error::invalid_value("the array is too large for this machine"))?;
            let mut data = buffer(n);
            read_data(&mut f, p.data_offset, &mut data, cancel)?;
            Ok(Raw::Typed(descr, shape, fortran, data))
        }
    }
}

/// A small file read whole: one `read` into a buffer of the size `fstat` gave (not zeroed
/// first), the header parsed from it, the data left where it is.
fn read_whole(f: &File, len: u64, limits: &Limits) -> npy_serde::Result<Raw> {
    let file = read_up_to(f, len as usize)?;
    let mut rest = &file[..];
    let head = read_head(&mut rest, limits)?;
    match head.contents {
        Contents::Objects(h) => Ok(Raw::Objects(h, rest.to_vec())),
        contents => {
            let (p, descr) = Head { contents, ..head }.typed()?;
            let need = p.header.data_len()?;
            let read = file.len() as u64;
            let have = read.saturating_sub(p.data_offset);
            if have < need {
                return Err(truncated(need, have).at_byte(read));
            }
            // `data_offset <= read`, the buffer's length: a `usize`.
            let offset = p.data_offset as usize;
            let (shape, fortran) = (p.header.shape, p.header.fortran_order);
            Ok(Raw::TypedIn(descr, shape, fortran, file, offset))
        }
    }
}

/// Up to `n` bytes of `f` (fewer at its end), read with one `read` when the file has them:
/// into a buffer not zeroed first (std's `read_to_end` reads in growing pieces, 8 KiB first).
#[cfg(target_os = "linux")]
fn read_up_to(f: &File, n: usize) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut buf = Vec::<u8>::with_capacity(n);
    while buf.len() < n {
        let left = n - buf.len();
        // SAFETY: the `left` bytes after the buffer's first `len` lie in its capacity (`n`);
        // `read` writes at most `left` bytes there and returns how many it wrote, which are
        // then initialised, so `set_len` covers only written bytes.
        let got = unsafe {
            let at = buf.as_mut_ptr().add(buf.len());
            libc::read(f.as_raw_fd(), at.cast(), left)
        };
        match got {
            0 => break,
            k if k > 0 => {
                // SAFETY: see above: `k <= left` bytes were written after the initialised ones.
                unsafe { buf.set_len(buf.len() + k as usize) }
            }
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(buf)
}

/// Up to `n` bytes of `f` (fewer at its end).
#[cfg(not(target_os = "linux"))]
fn read_up_to(f: &File, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    f.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Reads below this size run on the calling thread (the GIL released): a worker thread for
/// Ctrl-C costs more than such a read.
const SMALL: u64 = 16 << 20;

/// A zeroed buffer of `n` bytes for array data. A large one is advised to the kernel as huge
/// pages, as NumPy advises its large arrays: read into 4 KiB pages, each one costs a page fault
/// (`load` of a 200 MB file ran at 0.17x `np.load` without it).
fn buffer(n: usize) -> Vec<u8> {
    // calloc: a large buffer is fresh zero pages, none touched yet.
    let v = vec![0u8; n];
    #[cfg(target_os = "linux")]
    if n >= 4 << 20 {
        const PAGE: usize = 4096;
        let start = v.as_ptr() as usize;
        let aligned = start.next_multiple_of(PAGE);
        let end = start + n;
        if end > aligned {
            // SAFETY: [aligned, end) lies inside the buffer this Vec owns; madvise changes no
            // byte of it, only how the kernel backs its pages, and fails harmlessly (ignored)
            // where transparent huge pages are off.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    v
}

/// Arrays at least this large are read on every core (positioned reads of 8 MiB chunks).
const PARALLEL: usize = 64 << 20;

/// Fills `data` with the file's bytes from `offset`: on all cores for a large array (one copy,
/// from the page cache straight into the array's buffer), each chunk looking at `cancel`.
fn read_data(
    f: &mut File,
    offset: u64,
    data: &mut [u8],
    cancel: &AtomicBool,
) -> std::io::Result<()> {
    #[cfg(unix)]
    if data.len() >= PARALLEL {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        const CHUNK: usize = 8 << 20;
        let file = &*f;
        return data
            .par_chunks_mut(CHUNK)
            .enumerate()
            .try_for_each(|(i, chunk)| {
                if is_cancelled(cancel) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::Interrupted,
                        "interrupted",
                    ));
                }
                file.read_exact_at(chunk, offset + (i * CHUNK) as u64)
            });
    }
    let _ = offset;
    read_exact_cancellable(f, data, cancel)
}

/// What [`read_path`] read, as the array (typed arrays) or the tuple the package builds its
/// array from.
pub fn to_loaded<'py>(py: Python<'py>, raw: Raw, o: &Options) -> PyResult<Bound<'py, PyAny>> {
    to_loaded_with(py, raw, o, None)
}

/// [`to_loaded`], dtypes taken from `dtypes` when given.
fn to_loaded_with<'py>(
    py: Python<'py>,
    raw: Raw,
    o: &Options,
    dtypes: Option<&mut Dtypes<'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (descr, shape, fortran, data, offset) = match raw {
        Raw::Typed(descr, shape, fortran, data) => (descr, shape, fortran, data, 0),
        Raw::TypedIn(descr, shape, fortran, file, offset) => (descr, shape, fortran, file, offset),
        Raw::Mapped(descr, shape, fortran, offset) => {
            return Ok((
                "mapped",
                literal_to_py(py, &descr)?,
                shape_tuple(py, &shape)?,
                fortran,
                offset,
            )
                .into_pyobject(py)?
                .into_any());
        }
        Raw::Objects(h, pickle) => return objects_of(py, &h, &pickle, o),
        Raw::Bytes(b) => {
            return Ok(("raw", pyo3::types::PyBytes::new(py, &b))
                .into_pyobject(py)?
                .into_any());
        }
    };
    let dtype = match dtypes {
        Some(d) => d.get(py, &descr)?,
        None => dtype_of(py, &descr)?,
    };
    array_of(py, dtype, &shape, fortran, data, offset)
}

/// `load` of the `.npy` file at `path`; with `mmap`, the data is left to `np.memmap`
/// (`("mapped", descr, shape, fortran_order, data_offset)`) once the file is known to hold it.
pub fn from_path<'py>(
    py: Python<'py>,
    path: &str,
    mmap: bool,
    o: &Options,
) -> PyResult<Bound<'py, PyAny>> {
    let limits = o.limits();
    let (f, len) = py
        .detach(|| -> npy_serde::Result<(File, u64)> {
            let f = File::open(path)?;
            let len = f.metadata()?.len();
            Ok((f, len))
        })
        .py()?;
    let raw = if mmap || len < SMALL {
        let never = AtomicBool::new(false);
        py.detach(|| read_file(f, len, mmap, &limits, &never))
            .py()?
    } else {
        interruptible(py, |cancel| read_file(f, len, mmap, &limits, cancel))?
    };
    to_loaded(py, raw, o)
}

/// `load_many`: every file read on a pool of `threads` (rayon's global pool, on all cores, if
/// `None`) without the GIL, then each array built under it, in order, one dtype per distinct
/// descr. The first file that cannot be read raises, named.
pub fn many<'py>(
    py: Python<'py>,
    paths: &[String],
    threads: Option<usize>,
    o: &Options,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    use rayon::prelude::*;
    let limits = o.limits();
    let pool = match threads {
        None => None,
        Some(n) => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| value_error(format!("cannot start {n} threads: {e}")))?,
        ),
    };
    let read: Vec<npy_serde::Result<Raw>> = interruptible(py, |cancel| {
        let all = || -> Vec<npy_serde::Result<Raw>> {
            paths
                .par_iter()
                .map(|p| match is_cancelled(cancel) {
                    true => Err(stopped()),
                    false => read_path(p, false, &limits, cancel),
                })
                .collect()
        };
        let read = match &pool {
            Some(pool) => pool.install(all),
            None => all(),
        };
        match is_cancelled(cancel) {
            true => Err(stopped()),
            false => Ok(read),
        }
    })?;
    let mut dtypes = Dtypes::default();
    read.into_iter()
        .zip(paths)
        .map(|(r, p)| match r {
            Ok(raw) => to_loaded_with(py, raw, o, Some(&mut dtypes)),
            Err(e) => Err(to_py_in(e, p)),
        })
        .collect()
}

/// Reads a `.npy` stream without touching Python (callers over a Rust source release the
/// GIL): the header, then exactly the data it declares (growing with the bytes present), the
/// stream left after it.
pub fn read_stream<R: Read + ?Sized>(r: &mut R, limits: &Limits) -> npy_serde::Result<Raw> {
    let head = read_head(r, limits)?;
    match head.contents {
        Contents::Objects(h) => {
            let mut pickle = Vec::new();
            r.read_to_end(&mut pickle)?;
            Ok(Raw::Objects(h, pickle))
        }
        contents => {
            let (p, descr) = Head { contents, ..head }.typed()?;
            let need = p.header.data_len()?;
            let mut data = Vec::new();
            r.take(need).read_to_end(&mut data)?;
            if (data.len() as u64) < need {
                return Err(truncated(need, data.len() as u64));
            }
            Ok(Raw::Typed(
                descr,
                p.header.shape,
                p.header.fortran_order,
                data,
            ))
        }
    }
}

/// `load` of a `.npy` stream held by Python (`bytes`, or a file object read through its
/// `read`, which needs the GIL held).
pub fn from_reader<'py, R: Read>(
    py: Python<'py>,
    r: &mut R,
    o: &Options,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = read_stream(r, &o.limits()).py()?;
    to_loaded(py, raw, o)
}
