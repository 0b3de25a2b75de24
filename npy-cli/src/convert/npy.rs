//! `npy convert` to `.npy`: re-encode (byte order, memory order, format version) a `.npy` file or
//! an archive member. The data is streamed in blocks when the layout is unchanged, element by
//! element from a memory map (or, for an archive member, from memory) when the memory order
//! changes.

use std::io::{self, Read, Write};

use npy_serde::{ByteOrder, DType, Header, Scalar, Version};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::{open_archive, unwrap_io};
use crate::input::file::{member_bytes, Bytes, NpyFile};
use crate::input::header::{member_header, RawHeader};
use crate::input::layout::{layouts_differ, product, Walk};
use crate::input::spec::Spec;
use crate::progress::progress_bar;

/// How a `.npy` output is encoded; `None` keeps the input's (the smallest version for the
/// header, as numpy.save).
#[derive(Clone, Copy, Debug, Default)]
pub struct Encoding {
    /// `--byte-order`.
    pub byte_order: Option<ByteOrder>,
    /// `--order`: `Some(true)` for Fortran.
    pub fortran_order: Option<bool>,
    /// `--version`.
    pub version: Option<Version>,
}

impl Encoding {
    /// True if any option asks for a change.
    pub fn is_set(&self) -> bool {
        self.byte_order.is_some() || self.fortran_order.is_some() || self.version.is_some()
    }
}

/// Writes the `.npy` file or archive member `spec` (in an archive if `zip`) to `out`, encoded
/// as `enc` says; `output` names `out` in messages.
pub fn write(
    g: &Global,
    spec: &Spec,
    zip: bool,
    enc: &Encoding,
    out: &mut dyn Write,
    output: &str,
) -> CliResult {
    if zip {
        let archive_name = spec.path.display().to_string();
        let mut archive = open_archive(g, &spec.path, &archive_name)?;
        let key = spec.member.as_deref().unwrap_or_default();
        let mut m = archive
            .by_key(key)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let header = member_header(&mut m, &spec.display)?;
        let plan = Plan::new(&header, enc, &spec.display, output)?;
        out.write_all(&plan.header_bytes)
            .map_err(|e| Failure::write(output, e))?;
        if plan.transpose {
            let bytes = member_bytes(m, &spec.display)?;
            plan.copy_transposed(&bytes, out, output)?;
        } else {
            plan.copy_stream(&mut m, out, &spec.display, output)?;
        }
    } else {
        let mut f = NpyFile::open(g, &spec.path, &spec.display)?;
        f.check_complete(&spec.display)?;
        let plan = Plan::new(&f.header, enc, &spec.display, output)?;
        out.write_all(&plan.header_bytes)
            .map_err(|e| Failure::write(output, e))?;
        if plan.transpose {
            let bytes = f.map_data(&spec.display)?;
            plan.copy_transposed(&bytes, out, output)?;
        } else {
            plan.copy_stream(&mut f.reader, out, &spec.display, output)?;
        }
    }
    Ok(())
}

/// What to write for an `.npy` output.
struct Plan {
    /// The output header, as bytes.
    header_bytes: Vec<u8>,
    /// The (input) shape, dtype and layouts.
    shape: Vec<u64>,
    itemsize: usize,
    in_fortran: bool,
    out_fortran: bool,
    /// Elements are reordered (C <-> Fortran with a layout that differs).
    transpose: bool,
    /// Byte swaps applied to every element.
    swaps: Vec<Swap>,
    /// Data bytes.
    data_len: u64,
}

/// Reverse `count` consecutive runs of `unit` bytes starting at `offset` of an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Swap {
    offset: usize,
    unit: usize,
    count: usize,
}

/// The byte swaps that turn an element of `dt` into `target` byte order.
fn swap_plan(dt: &DType, target: ByteOrder, base: usize, out: &mut Vec<Swap>) {
    match dt {
        DType::Plain(p) => {
            let s = p.scalar();
            if !s.has_byte_order() || p.order() == target || p.itemsize() == 0 {
                return;
            }
            let unit = match s {
                Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                    p.itemsize() / 2
                }
                Scalar::Unicode(_) => 4,
                _ => p.itemsize(),
            };
            push_swap(
                out,
                Swap {
                    offset: base,
                    unit,
                    count: p.itemsize() / unit,
                },
            );
        }
        DType::Record(r) => {
            for f in r.fields() {
                swap_plan(&f.dtype, target, base + f.offset, out);
            }
        }
        DType::Array(b, dims) => {
            if b.itemsize() == 0 {
                return;
            }
            let n = product(dims);
            if let DType::Plain(_) = **b {
                // One run for the whole subarray (its items are contiguous).
                let mut one = Vec::new();
                swap_plan(b, target, base, &mut one);
                if let Some(s) = one.first() {
                    push_swap(
                        out,
                        Swap {
                            count: s.count.saturating_mul(n as usize),
                            ..*s
                        },
                    );
                }
                return;
            }
            let size = b.itemsize();
            // Each item has at least one byte, so n is bounded by the element size.
            for i in 0..n as usize {
                swap_plan(b, target, base + i * size, out);
            }
        }
    }
}

/// Appends, merging with the previous run when contiguous with the same unit.
fn push_swap(out: &mut Vec<Swap>, s: Swap) {
    if let Some(last) = out.last_mut() {
        if last.unit == s.unit && last.offset + last.unit * last.count == s.offset {
            last.count += s.count;
            return;
        }
    }
    out.push(s);
}

fn apply_swaps(swaps: &[Swap], elem: &mut [u8]) {
    for s in swaps {
        for j in 0..s.count {
            let start = s.offset + j * s.unit;
            if let Some(b) = elem.get_mut(start..start + s.unit) {
                b.reverse();
            }
        }
    }
}

impl Plan {
    fn new(h: &RawHeader, o: &Encoding, input: &str, output: &str) -> CliResult<Plan> {
        let mut shape = h.header().shape.clone();
        let mut dtype = h.dtype().clone();
        let in_fortran = h.header().fortran_order;
        // A subarray dtype at the top (NumPy folds it into the shape on reading): fold it
        // here too, which leaves a C-order data layout unchanged.
        while let DType::Array(base, dims) = dtype {
            if in_fortran && layouts_differ(&shape) {
                return Err(Failure::file(
                    input,
                    "a Fortran-order array whose dtype is a subarray cannot be converted",
                ));
            }
            shape.extend_from_slice(&dims);
            dtype = *base;
        }
        let out_fortran = match o.fortran_order {
            None => in_fortran,
            // As numpy.save: an array that is both C- and Fortran-contiguous is saved as C.
            Some(f) => f && layouts_differ(&shape),
        };
        // Zero-byte elements have no data to reorder, however many there are.
        let transpose = in_fortran != out_fortran && layouts_differ(&shape) && dtype.itemsize() > 0;
        let mut swaps = Vec::new();
        let out_dtype = match o.byte_order {
            Some(b) => {
                swap_plan(&dtype, b, 0, &mut swaps);
                dtype.to_byte_order(b)
            }
            None => dtype.clone(),
        };
        let header = Header {
            dtype: out_dtype,
            shape: shape.clone(),
            fortran_order: out_fortran,
        };
        let header_bytes = header
            .to_bytes_with_version(o.version)
            .map_err(|e| Failure::file(output, e))?;
        Ok(Plan {
            header_bytes,
            shape,
            itemsize: dtype.itemsize(),
            in_fortran,
            out_fortran,
            transpose,
            swaps,
            data_len: h.data_len(),
        })
    }

    fn progress(&self) -> Option<indicatif::ProgressBar> {
        progress_bar(self.data_len)
    }

    /// Copies the data from a stream in blocks of whole elements, swapping bytes as planned.
    fn copy_stream(
        &self,
        reader: &mut dyn Read,
        out: &mut dyn Write,
        input: &str,
        output: &str,
    ) -> CliResult {
        let pb = self.progress();
        let itemsize = self.itemsize.max(1);
        let per_block = (1usize << 20).div_ceil(itemsize).max(1);
        let mut buf = vec![0u8; per_block * itemsize];
        let mut left = self.data_len;
        while left > 0 {
            let n = (buf.len() as u64).min(left) as usize;
            let chunk = &mut buf[..n];
            read_exactly(reader, chunk).map_err(|e| {
                let done = self.data_len - left;
                match e {
                    ReadErr::Eof(got) => Failure::file(
                        input,
                        format!(
                            "truncated data: needs {} data bytes, only {} present",
                            self.data_len,
                            done + got as u64
                        ),
                    ),
                    ReadErr::Io(e) => Failure::file(input, unwrap_io(e)),
                }
            })?;
            if !self.swaps.is_empty() {
                for elem in chunk.chunks_exact_mut(self.itemsize) {
                    apply_swaps(&self.swaps, elem);
                }
            }
            out.write_all(chunk)
                .map_err(|e| Failure::write(output, e))?;
            left -= n as u64;
            if let Some(pb) = &pb {
                pb.inc(n as u64);
            }
        }
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        Ok(())
    }

    /// Writes the elements of `data` (in the input layout) in the output layout.
    fn copy_transposed(&self, data: &Bytes, out: &mut dyn Write, output: &str) -> CliResult {
        let pb = self.progress();
        let count = product(&self.shape);
        let mut elem = vec![0u8; self.itemsize];
        let walk = Walk::new(&self.shape, self.in_fortran, self.out_fortran, 0, count);
        for (i, pos) in walk.enumerate() {
            let start = pos as usize * self.itemsize;
            let Some(src) = data.get(start..start + self.itemsize) else {
                return Err(Failure::input(format!(
                    "internal error: element {pos} is outside the data"
                )));
            };
            elem.copy_from_slice(src);
            apply_swaps(&self.swaps, &mut elem);
            out.write_all(&elem)
                .map_err(|e| Failure::write(output, e))?;
            if let Some(pb) = &pb {
                if i % 65_536 == 0 {
                    pb.set_position(i as u64 * self.itemsize as u64);
                }
            }
        }
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        Ok(())
    }
}

enum ReadErr {
    /// The input ended after this many bytes of the chunk.
    Eof(usize),
    Io(io::Error),
}

fn read_exactly(r: &mut dyn Read, buf: &mut [u8]) -> Result<(), ReadErr> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Err(ReadErr::Eof(got)),
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadErr::Io(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_per_scalar_unit() {
        let dt: DType =
            "[('a', '<i4'), ('b', '|u1'), ('c', '<c8'), ('u', '<U2'), ('v', '<i2', (3,))]"
                .parse()
                .unwrap();
        let mut s = Vec::new();
        swap_plan(&dt, ByteOrder::Big, 0, &mut s);
        // c8 (two 4-byte halves) and U2 (two 4-byte code units) are adjacent: one merged run.
        assert_eq!(
            s,
            [
                Swap {
                    offset: 0,
                    unit: 4,
                    count: 1
                },
                Swap {
                    offset: 5,
                    unit: 4,
                    count: 4
                },
                Swap {
                    offset: 21,
                    unit: 2,
                    count: 3
                },
            ]
        );
        let mut elem: Vec<u8> = (0..27).collect();
        apply_swaps(&s, &mut elem);
        assert_eq!(&elem[..5], [3, 2, 1, 0, 4]);
        assert_eq!(&elem[21..], [22, 21, 24, 23, 26, 25]);
        let mut none = Vec::new();
        swap_plan(&dt, ByteOrder::Little, 0, &mut none);
        assert!(none.is_empty());
    }
}
