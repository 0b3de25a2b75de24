//! `npy info`: the header as a readable summary (dtype as a tree with offsets) or as JSON.

use std::io::{self, BufWriter, Write};

use serde::Serialize;
use serde_json::Value as Json;

use npy_serde::npz::MemberInfo;
use npy_serde::{ByteOrder, DType, PlainType, Scalar};

use crate::input::{self, RawHeader};
use crate::literal;
use crate::object;
use crate::output::{member_header, member_header_if_npy};
use crate::{CliResult, Failure, Global};

/// `info --json` for one array.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ArrayInfo {
    version: [u8; 2],
    descr: Json,
    shape: Vec<u64>,
    fortran_order: bool,
    data_offset: u64,
    itemsize: u64,
    count: u64,
}

/// `info --json` for one archive member.
#[derive(Serialize, Debug)]
struct MemberJson {
    name: String,
    key: String,
    compression: String,
    compressed_size: u64,
    size: u64,
    array: Option<AnyInfo>,
    /// Where the member's data is, if it can be mapped in place.
    in_place: Option<InPlace>,
    /// Why the member cannot be read (then `array` is null and the exit status is 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// A member's array: one this tool reads, or an object array (header only).
#[derive(Serialize, Debug)]
#[serde(untagged)]
enum AnyInfo {
    Array(ArrayInfo),
    Object(object::ObjectInfo),
}

/// A member that `npy_serde::npz::MmapNpz` can view in place: where its data starts in the
/// archive, and the largest power of two (up to 64) dividing that offset.
#[derive(Serialize, Debug, Clone, Copy)]
struct InPlace {
    data_offset: u64,
    alignment: u64,
}

/// The members of the archive at `path` that can be mapped in place (by index), or why none
/// can (the archive fails the mapped archive's checks).
fn in_place(g: &Global, path: &std::path::Path) -> Result<Vec<Option<InPlace>>, String> {
    let npz = npy_serde::NpzReaderBuilder::new()
        .max_header_size(g.max_header_size)
        .open_mmap(path)
        .map_err(|e| e.to_string())?;
    Ok((0..npz.len())
        .map(|i| {
            let data_offset = npz.data_offset(&npz.members()[i].key).ok()?;
            let alignment = 1u64 << data_offset.trailing_zeros().min(6);
            Some(InPlace {
                data_offset,
                alignment,
            })
        })
        .collect())
}

/// `info --json` for an archive.
#[derive(Serialize, Debug)]
struct ArchiveJson {
    members: Vec<MemberJson>,
}

/// The header's descr as written, tuples as lists (the normalised descr if the header text
/// cannot be re-read, which does not happen for headers the library accepted).
pub fn descr_json(h: &RawHeader) -> Json {
    // The header was accepted already; its length is below data_offset.
    let limits = npy_serde::Limits {
        max_header_size: h.parsed.data_offset,
        ..npy_serde::Limits::default()
    };
    literal::header_descr(&h.bytes, &limits).unwrap_or_else(|_| Json::String(h.dtype().descr()))
}

/// The JSON info object of an array.
pub fn array_info(h: &RawHeader) -> ArrayInfo {
    let (major, minor) = h.parsed.version.as_tuple();
    ArrayInfo {
        version: [major, minor],
        descr: descr_json(h),
        shape: h.header().shape.clone(),
        fortran_order: h.header().fortran_order,
        data_offset: h.parsed.data_offset,
        itemsize: h.dtype().itemsize() as u64,
        count: h.count(),
    }
}

/// `npy info`.
pub fn run(g: &Global, file: &str, member: Option<&str>, json: bool) -> CliResult {
    let spec = input::resolve(file, member)?;
    let stdout = io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    let w = |e: io::Error| Failure::write("standard output", e);
    let zip = input::is_zip(&spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if !zip {
        if spec.member.is_some() {
            return Err(Failure::usage(format!(
                "{}: not an .npz archive, so it has no members",
                spec.path.display()
            )));
        }
        let f = match input::NpyFile::open(g, &spec.path, &spec.display) {
            Ok(f) => f,
            // An object array: its header, and what its data is.
            Err(fail) => match object::read(&spec.path, &input::limits(g)) {
                Some(o) => {
                    if json {
                        json_line(&mut out, &o).map_err(w)?;
                    } else {
                        out.write_all(o.text(Some(&spec.display), "").as_bytes())
                            .map_err(w)?;
                    }
                    return out.flush().map_err(w);
                }
                None => return Err(fail),
            },
        };
        if json {
            json_line(&mut out, &array_info(&f.header)).map_err(w)?;
        } else {
            let mut text = format!("file:        {}\n", spec.display);
            array_text(&mut text, &f.header, "");
            if let Some(len) = f.file_len {
                let end = f.header.parsed.data_offset + f.header.data_len();
                if len < end {
                    text.push_str(&format!(
                        "warning:     the file is truncated: {} of {} data bytes present\n",
                        len.saturating_sub(f.header.parsed.data_offset),
                        f.header.data_len()
                    ));
                } else if len > end {
                    text.push_str(&format!(
                        "trailing:    {} bytes after the data (ignored)\n",
                        len - end
                    ));
                }
            }
            out.write_all(text.as_bytes()).map_err(w)?;
        }
        return out.flush().map_err(w);
    }

    let archive_name = spec.path.display().to_string();
    let mut archive = input::open_archive(g, &spec.path, &archive_name)?;
    if let Some(key) = &spec.member {
        let mut m = archive
            .by_key(key)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let h = match member_header(&mut m, &spec.display) {
            Ok(h) => h,
            Err(fail) => {
                let info = m.info().clone();
                drop(m);
                let o = archive
                    .by_key(key)
                    .ok()
                    .and_then(|m| object::from_reader(m, &input::limits(g)));
                let Some(o) = o else { return Err(fail) };
                if json {
                    json_line(&mut out, &o).map_err(w)?;
                } else {
                    let mut text = format!("member:      {}\n", spec.display);
                    member_text(&mut text, &info);
                    text.push_str(&o.text(None, ""));
                    out.write_all(text.as_bytes()).map_err(w)?;
                }
                return out.flush().map_err(w);
            }
        };
        if json {
            json_line(&mut out, &array_info(&h)).map_err(w)?;
        } else {
            let mut text = format!("member:      {}\n", spec.display);
            member_text(&mut text, m.info());
            array_text(&mut text, &h, "");
            out.write_all(text.as_bytes()).map_err(w)?;
        }
        return out.flush().map_err(w);
    }

    let mapped = in_place(g, &spec.path);
    let mut members = Vec::new();
    // The first member that cannot be read: listed with the others, then the exit status 1.
    let mut failed: Option<Failure> = None;
    let mut text = format!(
        "archive:     {archive_name} ({} member{})\n",
        archive.len(),
        if archive.len() == 1 { "" } else { "s" }
    );
    for index in 0..archive.len() {
        let info = archive.members()[index].clone();
        let display = format!("{archive_name}:{}", info.key);
        // Members this crate cannot read (other compression methods, encryption) are listed
        // with the reason and without an array; a bad .npy header is an error.
        let first = match archive.by_index(index) {
            Ok(mut m) => Ok(member_header_if_npy(&mut m, &display)),
            Err(e) => Err(e),
        };
        let mut objects = None;
        let (header, unreadable) = match first {
            Ok(Ok(h)) => (h, None),
            Ok(Err(fail)) => {
                // An object array: its header, read again from the member's start.
                objects = archive
                    .by_index(index)
                    .ok()
                    .and_then(|m| object::from_reader(m, &input::limits(g)));
                if objects.is_none() {
                    return Err(fail);
                }
                (None, None)
            }
            Err(e) => {
                let why = e.to_string();
                failed.get_or_insert_with(|| Failure::file(&display, &e));
                (None, Some(why))
            }
        };
        text.push_str(&format!(
            "\nmember:      {} (key {})\n",
            info.name, info.key
        ));
        member_text(&mut text, &info);
        let place = mapped
            .as_ref()
            .ok()
            .and_then(|m| m.get(index).copied().flatten());
        match (&place, &mapped) {
            (Some(p), _) => text.push_str(&format!(
                "  in place:    yes: data at byte {} of the archive, {}-byte aligned\n",
                p.data_offset, p.alignment
            )),
            (None, Err(why)) => text.push_str(&format!("  in place:    no ({why})\n")),
            (None, Ok(_)) => text.push_str(&format!(
                "  in place:    no ({})\n",
                if info.compression != npy_serde::npz::Compression::Stored {
                    "compressed"
                } else {
                    "not a stored .npy array"
                }
            )),
        }
        match (&header, &unreadable) {
            (Some(h), _) => array_text(&mut text, h, "  "),
            (None, None) if objects.is_some() => text.push_str(
                &objects
                    .as_ref()
                    .map_or(String::new(), |o| o.text(None, "  ")),
            ),
            (None, Some(why)) => text.push_str(&format!("  cannot be read: {why}\n")),
            (None, None) => text.push_str("  not an .npy array\n"),
        }
        members.push(MemberJson {
            name: info.name.clone(),
            key: info.key.clone(),
            compression: info.compression.to_string(),
            compressed_size: info.compressed_size,
            size: info.size,
            array: match objects {
                Some(o) => Some(AnyInfo::Object(o)),
                None => header.as_ref().map(|h| AnyInfo::Array(array_info(h))),
            },
            in_place: place,
            error: unreadable.clone(),
        });
    }
    if json {
        json_line(&mut out, &ArchiveJson { members }).map_err(w)?;
    } else {
        out.write_all(text.as_bytes()).map_err(w)?;
    }
    out.flush().map_err(w)?;
    match failed {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

fn json_line<T: Serialize>(out: &mut dyn Write, v: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, v).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

fn member_text(text: &mut String, info: &MemberInfo) {
    text.push_str(&format!(
        "  compression: {}, {} bytes stored, {} bytes uncompressed\n",
        info.compression, info.compressed_size, info.size
    ));
}

/// The readable summary of an array header, each line prefixed by `indent`.
pub fn array_text(text: &mut String, h: &RawHeader, indent: &str) {
    let (major, minor) = h.parsed.version.as_tuple();
    let hd = h.header();
    let line = |text: &mut String, k: &str, v: String| {
        text.push_str(&format!("{indent}{k:<13}{v}\n"));
    };
    line(text, "version:", format!("{major}.{minor}"));
    match h.dtype() {
        DType::Plain(p) => line(
            text,
            "dtype:",
            format!("{} ({})", p.typestr(), describe_plain(*p)),
        ),
        dt => {
            line(text, "dtype:", dt.descr());
            dtype_tree(text, dt, &format!("{indent}  "));
        }
    }
    line(text, "shape:", input::shape_text(&hd.shape));
    line(
        text,
        "order:",
        if hd.fortran_order {
            "Fortran (column-major)".into()
        } else {
            "C (row-major)".into()
        },
    );
    line(text, "itemsize:", h.dtype().itemsize().to_string());
    line(text, "count:", h.count().to_string());
    line(text, "data offset:", h.parsed.data_offset.to_string());
    line(text, "data bytes:", h.data_len().to_string());
}

/// What a plain type is, in words: `float64, little-endian`.
pub fn describe_plain(p: PlainType) -> String {
    let name = match p.scalar() {
        Scalar::Bool => "bool".to_string(),
        Scalar::I8 => "int8".into(),
        Scalar::I16 => "int16".into(),
        Scalar::I32 => "int32".into(),
        Scalar::I64 => "int64".into(),
        Scalar::U8 => "uint8".into(),
        Scalar::U16 => "uint16".into(),
        Scalar::U32 => "uint32".into(),
        Scalar::U64 => "uint64".into(),
        Scalar::F16 => "float16".into(),
        Scalar::F32 => "float32".into(),
        Scalar::F64 => "float64".into(),
        Scalar::LongDouble => "longdouble (x87 80-bit in 16 bytes)".into(),
        Scalar::Complex64 => "complex64".into(),
        Scalar::Complex128 => "complex128".into(),
        Scalar::ComplexLongDouble => "clongdouble (2 x87 80-bit)".into(),
        Scalar::Bytes(n) => format!("bytes, {n} long"),
        Scalar::Unicode(n) => format!("str, {n} code points (UCS-4)"),
        Scalar::Void(n) => format!("void, {n} bytes"),
        Scalar::DateTime(..) | Scalar::TimeDelta(..) => {
            let code = p.scalar().type_code();
            let unit = code.get(2..).unwrap_or("");
            let kind = if matches!(p.scalar(), Scalar::DateTime(..)) {
                "datetime64"
            } else {
                "timedelta64"
            };
            if unit.is_empty() {
                format!("{kind} (generic unit)")
            } else {
                format!("{kind}{unit}")
            }
        }
    };
    match p.order() {
        ByteOrder::Little => format!("{name}, little-endian"),
        ByteOrder::Big => format!("{name}, big-endian"),
        ByteOrder::NotApplicable => name,
    }
}

/// The dtype as a tree: `offset size name: type (description)`, padding shown.
fn dtype_tree(out: &mut String, dt: &DType, indent: &str) {
    match dt {
        DType::Plain(p) => out.push_str(&format!("{indent}({})\n", describe_plain(*p))),
        DType::Array(base, dims) => {
            out.push_str(&format!(
                "{indent}subarray {} of:\n",
                input::shape_text(dims)
            ));
            fields_tree(out, base, 0, 1, &format!("{indent}  "));
        }
        DType::Record(_) => {
            out.push_str(&format!("{indent}{:>8} {:>6}  field\n", "offset", "size"));
            fields_tree(out, dt, 0, 0, indent);
        }
    }
}

fn fields_tree(out: &mut String, dt: &DType, base: usize, depth: usize, indent: &str) {
    let pad = "  ".repeat(depth);
    match dt {
        DType::Record(r) => {
            let mut pos = 0usize;
            for f in r.fields() {
                if f.offset > pos {
                    out.push_str(&format!(
                        "{indent}{:>8} {:>6}  {pad}(padding)\n",
                        base + pos,
                        f.offset - pos
                    ));
                }
                let name = match &f.title {
                    Some(t) => format!("{} (title {t:?})", f.name),
                    None => f.name.clone(),
                };
                let (ty, nested) = type_summary(&f.dtype);
                out.push_str(&format!(
                    "{indent}{:>8} {:>6}  {pad}{name}: {ty}\n",
                    base + f.offset,
                    f.dtype.itemsize()
                ));
                if let Some(inner) = nested {
                    fields_tree(out, inner, base + f.offset, depth + 1, indent);
                }
                pos = f.offset + f.dtype.itemsize();
            }
            if r.itemsize() > pos {
                out.push_str(&format!(
                    "{indent}{:>8} {:>6}  {pad}(padding)\n",
                    base + pos,
                    r.itemsize() - pos
                ));
            }
        }
        DType::Array(inner, _) => fields_tree(out, inner, base, depth, indent),
        DType::Plain(p) => out.push_str(&format!(
            "{indent}{:>8} {:>6}  {pad}{} ({})\n",
            base,
            p.itemsize(),
            p.typestr(),
            describe_plain(*p)
        )),
    }
}

/// A one-line type for a field, and the record to expand below it (for record fields and
/// subarrays of records).
fn type_summary(dt: &DType) -> (String, Option<&DType>) {
    match dt {
        DType::Plain(p) => (format!("{} ({})", p.typestr(), describe_plain(*p)), None),
        DType::Record(r) => (format!("record, {} fields", r.fields().len()), Some(dt)),
        DType::Array(base, dims) => {
            let (inner, nested) = type_summary(base);
            (format!("{} of {inner}", input::shape_text(dims)), nested)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_descriptions() {
        let p = PlainType::from_typestr(">m8[25ms]").unwrap();
        assert_eq!(describe_plain(p), "timedelta64[25ms], big-endian");
        let p = PlainType::from_typestr("<M8").unwrap();
        assert_eq!(
            describe_plain(p),
            "datetime64 (generic unit), little-endian"
        );
        let p = PlainType::from_typestr("|S5").unwrap();
        assert_eq!(describe_plain(p), "bytes, 5 long");
    }

    #[test]
    fn tree_shows_offsets_and_padding() {
        let dt: DType = "[('a', '|u1'), ('', '|V3'), ('pos', [('x', '<f4'), ('y', '<f4')], (2,))]"
            .parse()
            .unwrap();
        let mut s = String::new();
        dtype_tree(&mut s, &dt, "");
        let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
        assert_eq!(
            lines,
            [
                "  offset   size  field",
                "       0      1  a: |u1 (uint8)",
                "       1      3  (padding)",
                "       4     16  pos: (2,) of record, 2 fields",
                "       4      4    x: <f4 (float32, little-endian)",
                "       8      4    y: <f4 (float32, little-endian)",
            ]
        );
    }
}
