//! Handing out an array's elements in logical C order: streamed (constant memory) whenever the
//! layout allows, from random-access bytes (a map, or a member in memory) when it does not.

use std::io::{self, Read, Seek, SeekFrom};

use crate::failure::{CliResult, Failure};
use crate::input::archive::{unwrap_io, Member};
use crate::input::file::{member_bytes, Bytes, NpyFile};
use crate::input::header::RawHeader;
use crate::input::layout::{layouts_differ, Walk};

/// Zero-byte items (an empty record, `V0`) allowed in one subarray when decoding a value:
/// the library's default.
pub const MAX_EMPTY_ITEMS: u64 = 1 << 24;

/// Elements of an array in logical C order, from a stream or from random-access bytes.
pub enum Elements<'a> {
    /// The data read sequentially (C-order storage, or a layout identical to it).
    Stream {
        /// Positioned at the first element wanted.
        reader: Box<dyn Read + 'a>,
        /// One element.
        buf: Vec<u8>,
        /// Elements left.
        left: u64,
        /// Stream offset of the next element (for error messages).
        offset: u64,
        /// Index of the next element (for error messages).
        index: u64,
    },
    /// Random access over Fortran-order storage.
    Random {
        /// The whole data.
        bytes: Bytes,
        /// Storage positions in logical C order.
        walk: Walk,
        /// Bytes per element.
        itemsize: usize,
        /// Offset of the data in the stream (for error messages).
        data_offset: u64,
        /// Index of the next element.
        index: u64,
    },
}

/// One element handed out by [`Elements::next`].
pub struct Elem<'b> {
    /// Its bytes.
    pub bytes: &'b [u8],
    /// Its logical C-order index.
    pub index: u64,
    /// Offset of its first byte in the `.npy` stream.
    pub offset: u64,
}

impl Elements<'_> {
    /// Reads the remaining elements without handing them out (checking that they are there).
    pub fn drain(&mut self) -> npy_serde::Result<()> {
        match self {
            Elements::Stream {
                reader,
                buf,
                left,
                offset,
                index,
            } => {
                let want = left.saturating_mul(buf.len() as u64);
                let got = io::copy(&mut reader.take(want), &mut io::sink()).map_err(unwrap_io)?;
                if got < want {
                    let itemsize = buf.len().max(1) as u64;
                    return Err(npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                        what: "the array data",
                        expected: want,
                        found: got,
                    })
                    .at_record(*index + got / itemsize)
                    .at_byte(*offset + got));
                }
                *left = 0;
                Ok(())
            }
            Elements::Random { walk, .. } => {
                walk.skip_rest();
                Ok(())
            }
        }
    }

    /// The next element, or `None` at the end.
    pub fn next(&mut self) -> npy_serde::Result<Option<Elem<'_>>> {
        match self {
            Elements::Stream {
                reader,
                buf,
                left,
                offset,
                index,
            } => {
                if *left == 0 {
                    return Ok(None);
                }
                let mut got = 0;
                while got < buf.len() {
                    match reader.read(&mut buf[got..]) {
                        Ok(0) => {
                            return Err(npy_serde::Error::new(
                                npy_serde::ErrorKind::UnexpectedEof {
                                    what: "an element",
                                    expected: buf.len() as u64,
                                    found: got as u64,
                                },
                            )
                            .at_record(*index)
                            .at_byte(*offset + got as u64))
                        }
                        Ok(k) => got += k,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(unwrap_io(e)),
                    }
                }
                *left -= 1;
                let elem = Elem {
                    bytes: buf,
                    index: *index,
                    offset: *offset,
                };
                *index += 1;
                *offset += buf.len() as u64;
                Ok(Some(elem))
            }
            Elements::Random {
                bytes,
                walk,
                itemsize,
                data_offset,
                index,
            } => {
                let Some(pos) = walk.next() else {
                    return Ok(None);
                };
                let start = (pos as usize).wrapping_mul(*itemsize);
                let b = bytes
                    .get(start..start.wrapping_add(*itemsize))
                    .ok_or_else(|| {
                        npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                            what: "an element",
                            expected: *itemsize as u64,
                            found: 0,
                        })
                        .at_record(*index)
                    })?;
                let elem = Elem {
                    bytes: b,
                    index: *index,
                    offset: *data_offset + start as u64,
                };
                *index += 1;
                Ok(Some(elem))
            }
        }
    }
}

/// The elements `[start, start + len)` (logical C order) of an open `.npy` file.
pub fn file_elements<'a>(
    file: &'a mut NpyFile,
    display: &str,
    start: u64,
    len: u64,
) -> CliResult<Elements<'a>> {
    file.check_complete(display)?;
    let h = file.header.header().clone();
    let itemsize = h.dtype.itemsize();
    let data_offset = file.header.parsed.data_offset;
    if h.fortran_order && layouts_differ(&h.shape) {
        let bytes = file.map_data(display)?;
        return Ok(Elements::Random {
            bytes,
            walk: Walk::new(&h.shape, true, false, start, len),
            itemsize,
            data_offset,
            index: start,
        });
    }
    let skip = start.saturating_mul(itemsize as u64);
    if skip > 0 && file.file_len.is_some() {
        file.reader
            .seek(SeekFrom::Start(data_offset + skip))
            .map_err(|e| Failure::file(display, e))?;
    } else if skip > 0 {
        // A pipe: read past the elements not wanted.
        let got = io::copy(&mut (&mut file.reader).take(skip), &mut io::sink())
            .map_err(|e| Failure::file(display, e))?;
        if got < skip {
            let err = npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                what: "the array data",
                expected: skip,
                found: got,
            });
            return Err(Failure::file(display, err));
        }
    }
    Ok(Elements::Stream {
        reader: Box::new(&mut file.reader),
        buf: vec![0; itemsize],
        left: len,
        offset: data_offset + skip,
        index: start,
    })
}

/// The elements `[start, start + len)` (logical C order) of an archive member whose header
/// was read.
pub fn member_elements<'a>(
    mut member: Member<'a>,
    header: &RawHeader,
    display: &str,
    start: u64,
    len: u64,
) -> CliResult<Elements<'a>> {
    let h = header.header();
    let itemsize = h.dtype.itemsize();
    let data_offset = header.parsed.data_offset;
    if h.fortran_order && layouts_differ(&h.shape) {
        let bytes = member_bytes(member, display)?;
        return Ok(Elements::Random {
            bytes,
            walk: Walk::new(&h.shape, true, false, start, len),
            itemsize,
            data_offset,
            index: start,
        });
    }
    let skip = start.saturating_mul(itemsize as u64);
    if skip > 0 {
        io::copy(&mut (&mut member).take(skip), &mut io::sink())
            .map_err(|e| Failure::file(display, unwrap_io(e)))?;
    }
    Ok(Elements::Stream {
        reader: Box::new(member),
        buf: vec![0; itemsize],
        left: len,
        offset: data_offset + skip,
        index: start,
    })
}
