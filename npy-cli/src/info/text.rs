//! `npy info`'s readable summary: an array header line by line, the dtype as a tree with offsets
//! and padding, plain types in words.

use npy_serde::npz::MemberInfo;
use npy_serde::{ByteOrder, DType, PlainType, Scalar};

use crate::input::header::RawHeader;
use crate::input::layout::shape_text;

/// An archive member's compression and sizes.
pub fn member_text(text: &mut String, info: &MemberInfo) {
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
    line(text, "shape:", shape_text(&hd.shape));
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
            out.push_str(&format!("{indent}subarray {} of:\n", shape_text(dims)));
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
            (format!("{} of {inner}", shape_text(dims)), nested)
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
