//! [`MmapArrayMut`]: a `.npy` file mapped writable, NumPy's `np.load(path, mmap_mode='r+')`
//! (changes reach the file), `mmap_mode='c'` (copy on write: changes stay in memory) and
//! `np.lib.format.open_memmap(path, mode='w+')` (a new file of a given dtype and shape,
//! zero-filled without writing the zeros).
//!
//! The header is validated exactly as for reading ([`MmapArray`](crate::MmapArray)) and never
//! trusted beyond the file's length; typed views ([`MmapArrayMut::as_mut_slice`]) refuse the
//! same mismatches as [`MmapArray::as_slice`](crate::MmapArray::as_slice).

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::header::{parse_header, Header, ParsedHeader};
use crate::pod;
use crate::read::{as_elements, data_of, ReaderBuilder};
use crate::record::NpyRecord;

use super::options::fold;

/// A `.npy` file mapped for reading and writing in place.
///
/// Like [`MmapArray`](crate::MmapArray), the map shows the file's current contents: if
/// another process writes to or truncates the file while it is mapped, values change or
/// touching lost pages raises `SIGBUS`. Map only files that nothing else modifies meanwhile.
///
/// ```
/// use npy_serde::MmapArrayMut;
/// # let dir = std::env::temp_dir().join(format!("mmap-mut-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let path = dir.join("grid.npy");
/// // A 1000 x 1000 float64 file of zeros, written as a sparse file (NumPy's open_memmap 'w+').
/// let mut map = MmapArrayMut::create::<f64>(&path, &[1000, 1000])?;
/// let grid: &mut [f64] = map.as_mut_slice()?;
/// grid[1000 * 3 + 4] = 2.5;
/// map.flush()?;
/// drop(map);
///
/// // np.load(path)[3, 4] == 2.5; and in place again (NumPy's mmap_mode='r+'):
/// let mut map = MmapArrayMut::open_rw(&path)?;
/// map.as_mut_slice::<f64>()?[0] += 1.0;
/// assert_eq!(npy_serde::MmapArray::open(&path)?.as_slice::<f64>()?[..1], [1.0]);
/// # drop(map);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct MmapArrayMut {
    map: memmap2::MmapMut,
    header: ParsedHeader,
    data_start: usize,
    data_len: usize,
}

impl std::fmt::Debug for MmapArrayMut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmapArrayMut")
            .field("header", &self.header)
            .field("data_len", &self.data_len)
            .finish_non_exhaustive()
    }
}

impl MmapArrayMut {
    /// Maps the file at `path` for reading and writing: changes reach the file (NumPy's
    /// `mmap_mode='r+'`). Default limits.
    pub fn open_rw<P: AsRef<Path>>(path: P) -> Result<MmapArrayMut> {
        Self::open_rw_with(path, &ReaderBuilder::new())
    }

    /// [`open_rw`](Self::open_rw) with the given reading options (header limits).
    pub fn open_rw_with<P: AsRef<Path>>(path: P, rb: &ReaderBuilder) -> Result<MmapArrayMut> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        // SAFETY: `MmapMut::map_mut` is unsafe because the mapping aliases the file: another
        // process (or another map of this process) changing or truncating it changes our bytes
        // or makes them fault. Every typed view of the map validates its bytes (bool leaves)
        // when it is taken; the type's docs tell the caller that nothing else may modify the
        // file meanwhile, as `MmapArray` does.
        let map = unsafe { memmap2::MmapMut::map_mut(&file)? };
        Self::checked(map, rb)
    }

    /// Maps the file at `path` copy-on-write: it reads as the file, and changes stay in this
    /// process's memory, never reaching the file (NumPy's `mmap_mode='c'`).
    pub fn open_cow<P: AsRef<Path>>(path: P) -> Result<MmapArrayMut> {
        let file = File::open(path)?;
        // SAFETY: as in `open_rw`; a private copy-on-write map never writes to the file, but
        // pages not yet written still show the file's changes.
        let map = unsafe { memmap2::MmapOptions::new().map_copy(&file)? };
        Self::checked(map, &ReaderBuilder::new())
    }

    /// Creates the file at `path` (replacing any) holding a zero-filled array of `T`s with
    /// `shape` and maps it writable (NumPy's `open_memmap(path, mode='w+', dtype, shape)`):
    /// the header is the one `np.save` writes, a subarray dtype folds into the shape as
    /// `np.save` does (`[f32; 3]` elements give `shape + (3,)` of `<f4`), and the data is a
    /// hole in a sparse file, so an array larger than memory costs no time and no disk until
    /// it is written.
    ///
    /// Unlike the other writers to a path (see [`StagedFile`](crate::staged::StagedFile)), the file is
    /// created under `path` itself, at its full size, and the caller writes through the map:
    /// until [`flush`](Self::flush) and drop, a crash leaves a file of the right size whose
    /// unwritten records are zeros. An existing file at `path` is truncated first (its other
    /// hard links see the new contents); create under a temporary name and rename it when
    /// done if readers must never see a partial array.
    pub fn create<T: NpyRecord>(path: impl AsRef<Path>, shape: &[u64]) -> Result<MmapArrayMut> {
        let (base, sub) = fold(&T::dtype());
        let mut full = shape.to_vec();
        full.extend_from_slice(&sub);
        Self::create_with(path, &Header::new(base, full))
    }

    /// [`create`](Self::create) for a header given at run time (any dtype, shape and order).
    pub fn create_with(path: impl AsRef<Path>, header: &Header) -> Result<MmapArrayMut> {
        if matches!(header.dtype, DType::Array(..)) {
            return Err(Error::write(
                "a subarray dtype folds into the shape (as np.save writes it): give its base \
                 dtype and the longer shape, or use MmapArrayMut::create",
            ));
        }
        let head = header.to_bytes()?;
        let total = (head.len() as u64)
            .checked_add(header.data_len()?)
            .ok_or_else(|| Error::overflow("the file size"))?;
        if usize::try_from(total).is_err() {
            return Err(Error::limit("the file size", usize::MAX as u64, total));
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        std::io::Write::write_all(&mut file, &head)?;
        // The data is a hole: reads as zeros, takes no blocks until written.
        file.set_len(total)?;
        // SAFETY: as in `open_rw`; the file was just created by us with this length.
        let map = unsafe { memmap2::MmapMut::map_mut(&file)? };
        Self::checked(map, &ReaderBuilder::new())
    }

    fn checked(map: memmap2::MmapMut, rb: &ReaderBuilder) -> Result<MmapArrayMut> {
        let header = parse_header(&map, rb.limits())?;
        // The data must be in the file: never trusted beyond its length.
        let data_len = data_of(&map, &header, rb)?.len();
        Ok(MmapArrayMut {
            data_start: header.data_offset as usize,
            data_len,
            header,
            map,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header.header
    }

    /// The shape.
    pub fn shape(&self) -> &[u64] {
        &self.header.header.shape
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.header.header.count().unwrap_or(0)
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw data bytes (storage order, the file's byte order).
    pub fn data(&self) -> &[u8] {
        &self.map[self.data_start..self.data_start + self.data_len]
    }

    /// The raw data bytes, writable. Any bytes may be written: typed views check theirs when
    /// they are taken.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.data_start..self.data_start + self.data_len]
    }

    /// The data as `&[T]` (see [`MmapArray::as_slice`](crate::MmapArray::as_slice)).
    pub fn as_slice<T: NpyRecord>(&self) -> Result<&[T]> {
        let proof = as_elements::<T>(&self.header.header)?;
        pod::cast(proof, self.data(), self.header.data_offset)
    }

    /// The data as `&mut [T]`, written in place: the same conditions as
    /// [`as_slice`](Self::as_slice), whose errors say what does not fit.
    pub fn as_mut_slice<T: NpyRecord>(&mut self) -> Result<&mut [T]> {
        let proof = as_elements::<T>(&self.header.header)?;
        let offset = self.header.data_offset;
        pod::cast_mut(proof, self.data_mut(), offset)
    }

    /// The offset of the first data byte in the file.
    #[cfg(feature = "ndarray")]
    pub(crate) fn data_offset(&self) -> u64 {
        self.header.data_offset
    }

    /// Writes the changes to the file (a no-op for a copy-on-write map's file, which is never
    /// written) and waits for the write to finish.
    pub fn flush(&self) -> Result<()> {
        self.map.flush()?;
        Ok(())
    }
}
