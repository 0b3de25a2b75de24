//! `npy convert`: re-encode `.npy` (byte order, memory order, version), extract archive
//! members, write JSON / CSV. The data is streamed: in blocks when the layout is unchanged,
//! element by element from a memory map (or, for an archive member, from memory) when the
//! memory order changes.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use npy_serde::{ByteOrder, DType, Header, Scalar, Version};

use crate::input::{self, layouts_differ, Bytes, RawHeader, Walk};
use crate::output::{self, member_header, Range, Style};
use crate::{CliResult, Failure, Global};

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `.npy`
    Npy,
    /// `.json`
    Json,
    /// `.csv`
    Csv,
    /// `.npz`: an archive of the input's members (or of the `.npy` file)
    Npz,
    /// `.parquet` (feature `parquet`)
    Parquet,
    /// `.arrow` / `.feather`: an Arrow IPC file (feature `arrow`)
    Arrow,
}

/// The options of `npy convert`.
#[derive(Clone, Debug)]
pub struct Options {
    /// IN.
    pub input: String,
    /// OUT.
    pub output: String,
    /// `--member`.
    pub member: Option<String>,
    /// `--byte-order`.
    pub byte_order: Option<ByteOrder>,
    /// `--order`: `Some(true)` for Fortran.
    pub fortran_order: Option<bool>,
    /// `--version`.
    pub version: Option<Version>,
    /// `--to`.
    pub to: Option<Target>,
    /// `--align`: stored members of an `.npz` output at 64-byte boundaries.
    pub align: bool,
    /// `--compression` (Parquet output).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))] // read by `tables`
    pub compression: Option<String>,
    /// `--row-group-size` (Parquet output).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))] // read by `tables`
    pub row_group_size: Option<usize>,
    /// `--fill-nulls` (.npy output from a table).
    #[cfg_attr(not(feature = "arrow"), allow(dead_code))] // read by `tables`
    pub fill_nulls: bool,
}

/// `npy convert`.
pub fn run(g: &Global, o: &Options) -> CliResult {
    if npz_member_output(&o.output).is_some() {
        if !is_table_name(&o.input) {
            return Err(Failure::usage(format!(
                "{}: OUT.npz:KEY names the member a table (.parquet, .arrow) is written to; \
                 a .npy or .npz input keeps its member names (convert IN OUT.npz)",
                o.output
            )));
        }
        return tables(g, o, Target::Npz);
    }
    let target = match o.to {
        Some(t) => t,
        None => target_from_name(&o.output)?,
    };
    if matches!(target, Target::Parquet | Target::Arrow) || is_table_name(&o.input) {
        return tables(g, o, target);
    }
    if target != Target::Npy
        && (o.byte_order.is_some() || o.fortran_order.is_some() || o.version.is_some())
    {
        return Err(Failure::usage(
            "--byte-order, --order and --version apply to .npy output only",
        ));
    }
    if o.align && target != Target::Npz {
        return Err(Failure::usage("--align applies to .npz output only"));
    }
    let spec = input::resolve(&o.input, o.member.as_deref())?;
    let zip = input::is_zip(&spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if zip && spec.member.is_none() && target == Target::Npy {
        return Err(Failure::usage(format!(
            "{}: an .npz archive holds several arrays: name one with --member KEY or {}:KEY",
            spec.display, spec.display
        )));
    }
    if !zip && spec.member.is_some() {
        return Err(Failure::usage(format!(
            "{}: not an .npz archive, so it has no members",
            spec.path.display()
        )));
    }
    if target == Target::Npz {
        return crate::archive_out::run(g, &spec, zip, &o.output, o.align);
    }
    let mut sink = Sink::create(&o.output)?;
    match target {
        // Returned above: tables by `tables`, archives by `archive_out`.
        Target::Npz | Target::Parquet | Target::Arrow => unreachable!("handled above"),
        Target::Json | Target::Csv => {
            let style = if target == Target::Json {
                Style::Json
            } else {
                Style::Csv { header: true }
            };
            output::write_input(
                g,
                &spec,
                style,
                Range::All,
                &mut sink.writer,
                &o.output,
                true,
            )?;
        }
        Target::Npy if zip => {
            let archive_name = spec.path.display().to_string();
            let mut archive = input::open_archive(g, &spec.path, &archive_name)?;
            let key = spec.member.as_deref().unwrap_or_default();
            let mut m = archive
                .by_key(key)
                .map_err(|e| Failure::file(&archive_name, e))?;
            let header = member_header(&mut m, &spec.display)?;
            let plan = Plan::new(&header, o, &spec.display, &o.output)?;
            sink.writer
                .write_all(&plan.header_bytes)
                .map_err(|e| Failure::write(&o.output, e))?;
            if plan.transpose {
                let bytes = input::member_bytes(m, &spec.display)?;
                plan.copy_transposed(&bytes, &mut sink.writer, &o.output)?;
            } else {
                plan.copy_stream(&mut m, &mut sink.writer, &spec.display, &o.output)?;
            }
        }
        Target::Npy => {
            let mut f = input::NpyFile::open(g, &spec.path, &spec.display)?;
            f.check_complete(&spec.display)?;
            let plan = Plan::new(&f.header, o, &spec.display, &o.output)?;
            sink.writer
                .write_all(&plan.header_bytes)
                .map_err(|e| Failure::write(&o.output, e))?;
            if plan.transpose {
                let bytes = f.map_data(&spec.display)?;
                plan.copy_transposed(&bytes, &mut sink.writer, &o.output)?;
            } else {
                plan.copy_stream(&mut f.reader, &mut sink.writer, &spec.display, &o.output)?;
            }
        }
    }
    sink.commit()
}

#[cfg(feature = "arrow")]
fn is_table_name(name: &str) -> bool {
    crate::tables::is_table(name)
}

#[cfg(not(feature = "arrow"))]
fn is_table_name(name: &str) -> bool {
    let ext = Path::new(name).extension().and_then(|e| e.to_str());
    matches!(ext, Some("parquet" | "pq" | "arrow" | "feather" | "ipc"))
}

#[cfg(feature = "arrow")]
fn tables(g: &Global, o: &Options, target: Target) -> CliResult {
    crate::tables::run(g, o, target)
}

#[cfg(not(feature = "arrow"))]
fn tables(_: &Global, o: &Options, _: Target) -> CliResult {
    Err(Failure::usage(format!(
        "{} -> {}: this npy was built without Arrow support: install it with \
         `cargo install npy-serde --features cli,parquet`",
        o.input, o.output
    )))
}

/// `ARCHIVE.npz:KEY` as an output: the archive's path and the member's key.
pub(crate) fn npz_member_output(out: &str) -> Option<(&str, &str)> {
    let i = out.to_ascii_lowercase().find(".npz:")?;
    let (archive, key) = (&out[..i + 4], &out[i + 5..]);
    (!key.is_empty()).then_some((archive, key))
}

/// The temporary file an output is written to before it is renamed over `target`: beside it
/// (so the rename stays on one file system), hidden, named for this process.
pub(crate) fn temp_path_for(target: &Path) -> PathBuf {
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    dir.join(format!(".{name}.npy-tmp-{}", std::process::id()))
}

fn target_from_name(out: &str) -> CliResult<Target> {
    let ext = Path::new(out)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("npy") => Ok(Target::Npy),
        Some("json") => Ok(Target::Json),
        Some("csv") => Ok(Target::Csv),
        Some("npz") => Ok(Target::Npz),
        Some("parquet" | "pq") => Ok(Target::Parquet),
        Some("arrow" | "feather" | "ipc") => Ok(Target::Arrow),
        _ => Err(Failure::usage(format!(
            "{out}: cannot tell the output format from the name: use a .npy, .json, .csv, \
             .npz, .parquet or .arrow (.feather) extension, or --to"
        ))),
    }
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
            let n = input::product(dims);
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
    fn new(h: &RawHeader, o: &Options, input: &str, output: &str) -> CliResult<Plan> {
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
        output::progress_bar(self.data_len)
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
                    ReadErr::Io(e) => Failure::file(input, input::unwrap_io(e)),
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
        let count = input::product(&self.shape);
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

/// The output: standard output, or a temporary file next to OUT that replaces OUT only when
/// everything was written (so a failed conversion leaves no partial file, and converting a
/// file onto itself is safe).
struct Sink {
    writer: BufWriter<Box<dyn Write>>,
    tmp: Option<(PathBuf, PathBuf)>,
}

impl Sink {
    fn create(out: &str) -> CliResult<Sink> {
        if out == "-" {
            return Ok(Sink {
                writer: BufWriter::with_capacity(1 << 16, Box::new(io::stdout())),
                tmp: None,
            });
        }
        let target = PathBuf::from(out);
        let tmp = crate::convert::temp_path_for(&target);
        let file = File::create(&tmp).map_err(|e| Failure::file(out, e))?;
        Ok(Sink {
            writer: BufWriter::with_capacity(1 << 16, Box::new(file)),
            tmp: Some((tmp, target)),
        })
    }

    fn commit(mut self) -> CliResult {
        let name = match &self.tmp {
            Some((_, t)) => t.display().to_string(),
            None => "standard output".to_string(),
        };
        self.writer.flush().map_err(|e| Failure::write(&name, e))?;
        if let Some((tmp, target)) = self.tmp.take() {
            if let Err(e) = std::fs::rename(&tmp, &target) {
                let _ = std::fs::remove_file(&tmp);
                return Err(Failure::write(&name, e));
            }
        }
        Ok(())
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.tmp.take() {
            // Not committed: remove the partial output.
            let _ = std::fs::remove_file(tmp);
        }
    }
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

    #[test]
    fn npz_member_outputs() {
        assert_eq!(npz_member_output("a/t.npz:x"), Some(("a/t.npz", "x")));
        assert_eq!(npz_member_output("T.NPZ:a:b"), Some(("T.NPZ", "a:b")));
        assert_eq!(npz_member_output("t.npz"), None);
        assert_eq!(npz_member_output("t.npz:"), None);
    }

    #[test]
    fn output_format_from_name() {
        assert_eq!(target_from_name("a/b.NPY").unwrap(), Target::Npy);
        assert_eq!(target_from_name("x.json").unwrap(), Target::Json);
        assert_eq!(target_from_name("x.txt").unwrap_err().code, 2);
    }
}
