//! Whole-array decoding behind the doors: checking the data against the header and the
//! limits, and decoding it as one serde value following the shape ([`Whole`]) or as a flat
//! `Vec` of elements ([`Elements`], with the exact tier when the type has one).

use std::fs::File;
use std::io::Read;
use std::marker::PhantomData;
use std::path::Path;

use serde::de::Deserialize;

use super::exact::{self, TierFn};
use super::options::ReaderBuilder;
use super::plan::Ctx;
use super::shape::{collect_elements, ShapeDe};
use super::source::{BlockReader, BlockSource, FortranWalk, SliceSource, Source};
use crate::error::{Error, Result};
use crate::header::{read_contents, Contents, Header, ParsedHeader};
use crate::NpyRecord;

/// Opens a file, reads its header and checks the declared data size against the file size; an
/// object array is refused (naming `allow_pickle_data`).
pub fn open_checked(path: &Path, rb: &ReaderBuilder) -> Result<(File, ParsedHeader)> {
    let (file, contents) = open_contents(path, rb)?;
    Ok((file, contents.typed()?))
}

/// Opens a file and reads its header once: a typed array's declared data size is checked
/// against the file size, an object array's pickle is left to the door that reads it.
pub fn open_contents(path: &Path, rb: &ReaderBuilder) -> Result<(File, Contents)> {
    let mut file = File::open(path)?;
    let contents = read_contents(&mut file, &rb.limits)?;
    let Contents::Typed(header) = &contents else {
        return Ok((file, contents));
    };
    let (_, len) = rb.check(&header.header)?;
    let file_len = file.metadata()?.len();
    let avail = file_len.saturating_sub(header.data_offset);
    if avail < len {
        return Err(Error::eof("the array data", len, avail).at_byte(header.data_offset + avail));
    }
    Ok((file, contents))
}

/// The data bytes of a whole-file slice, checked against the header's size.
pub fn data_of<'a>(bytes: &'a [u8], header: &ParsedHeader, rb: &ReaderBuilder) -> Result<&'a [u8]> {
    let (_, len) = rb.check(&header.header)?;
    let start = usize::try_from(header.data_offset).unwrap_or(usize::MAX);
    let avail = bytes.get(start..).unwrap_or(&[]);
    match usize::try_from(len).ok().and_then(|n| avail.get(..n)) {
        Some(d) => Ok(d),
        None => Err(Error::eof("the array data", len, avail.len() as u64)
            .at_byte(header.data_offset + avail.len() as u64)),
    }
}

/// Deserializes the whole array from its data bytes (already checked to be complete).
pub(crate) fn deserialize_data<'de, T: Deserialize<'de>>(
    data: &'de [u8],
    borrowable: bool,
    header: &ParsedHeader,
    rb: &ReaderBuilder,
) -> Result<T> {
    decode_slice(data, borrowable, header, rb, Whole::<T>(PhantomData))
}

/// Deserializes every element from the array's data bytes (already checked to be complete).
pub(crate) fn vec_from_data<'de, T: Deserialize<'de>>(
    data: &'de [u8],
    borrowable: bool,
    header: &ParsedHeader,
    rb: &ReaderBuilder,
    elements: Elements<T>,
) -> Result<Vec<T>> {
    decode_slice(data, borrowable, header, rb, elements)
}

/// Decodes an array's data bytes (already checked to be complete) as `what` asks.
pub(super) fn decode_slice<'de, W: Decode<'de>>(
    data: &'de [u8],
    borrowable: bool,
    header: &ParsedHeader,
    rb: &ReaderBuilder,
    what: W,
) -> Result<W::Out> {
    let h = &header.header;
    let mut src = SliceSource::new(
        data,
        borrowable,
        &h.dtype,
        &h.shape,
        h.fortran_order,
        header.data_offset,
    )?;
    let count = src.remaining();
    what.decode(&mut src, h, count, true, &mut rb.ctx())
}

/// What to make of an array's elements: the whole array as one `T` following its shape
/// ([`Whole`]), or a flat `Vec` of its elements ([`Elements`]). `present` says that the
/// `count` elements' bytes are known to exist (not merely declared by the header).
pub(super) trait Decode<'de> {
    type Out;
    fn decode<S: Source<'de>>(
        self,
        src: &mut S,
        header: &Header,
        count: u64,
        present: bool,
        ctx: &mut Ctx,
    ) -> Result<Self::Out>;
}

pub(super) struct Whole<T>(pub(super) PhantomData<fn() -> T>);

impl<'de, T: Deserialize<'de>> Decode<'de> for Whole<T> {
    type Out = T;
    fn decode<S: Source<'de>>(
        self,
        src: &mut S,
        h: &Header,
        _: u64,
        _: bool,
        ctx: &mut Ctx,
    ) -> Result<T> {
        T::deserialize(ShapeDe::new(src, &h.dtype, &h.shape, ctx))
    }
}

/// Every element into a flat `Vec`, with the exact tier for `T` if it has one.
pub(crate) struct Elements<T> {
    pub(super) tier: TierFn<T>,
}

impl<T> Elements<T> {
    /// Without the exact tier (any `T`).
    pub(crate) fn plain() -> Self {
        Elements { tier: |_| None }
    }

    /// With the exact tier of `T`'s compile-time layout.
    pub(crate) fn records<'de>() -> Self
    where
        T: Deserialize<'de> + NpyRecord,
    {
        Elements {
            tier: exact::tier::<T>,
        }
    }
}

impl<'de, T: Deserialize<'de>> Decode<'de> for Elements<T> {
    type Out = Vec<T>;
    fn decode<S: Source<'de>>(
        self,
        src: &mut S,
        h: &Header,
        count: u64,
        present: bool,
        ctx: &mut Ctx,
    ) -> Result<Vec<T>> {
        // Declared but unproven data gets at most 1 MiB up front (as serde's own `Vec` impl);
        // the `Vec` then grows as elements arrive.
        let reserve = match present {
            true => count,
            false => count.min((1 << 20) / std::mem::size_of::<T>().max(1) as u64),
        };
        collect_elements(src, &h.dtype, count, reserve, ctx, (self.tier)(&h.dtype))
    }
}

// ---------------------------------------------------------------------------------------------

impl ReaderBuilder {
    /// Decodes the data that follows `header` in `reader` as `what` asks; `present` says that
    /// the data is known to be all there (a file whose size was checked).
    pub(super) fn read_data<R: Read, W: for<'de> Decode<'de, Out = O>, O>(
        &self,
        reader: R,
        header: &ParsedHeader,
        what: W,
        present: bool,
    ) -> Result<O> {
        let h = &header.header;
        let (count, len) = self.check(h)?;
        let mut block = BlockReader::new(reader, header.data_offset, len);
        let mut ctx = self.ctx();
        if h.fortran_order && FortranWalk::new(&h.shape).is_some() {
            // Logical C order needs random access: read the data (in blocks, as it arrives).
            let data = block.read_all()?;
            let mut src =
                SliceSource::new(&data, false, &h.dtype, &h.shape, true, header.data_offset)?;
            return what.decode(&mut src, h, count, true, &mut ctx);
        }
        let mut src = BlockSource {
            block,
            itemsize: h.dtype.itemsize(),
            count,
            next: 0,
        };
        let value = what.decode(&mut src, h, count, present, &mut ctx)?;
        src.block.drain()?;
        Ok(value)
    }
}
