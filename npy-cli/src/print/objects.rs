//! Object arrays (read as data with `--allow-pickle-data`) printed in a [`Style`] as typed
//! arrays are: nested JSON lists like `tolist()`, one element per line of text (its index
//! before it from 2-D on), CSV rows for 0-d and 1-D arrays. `--head` / `--tail` cut the first
//! axis. A value that names a class (`range`) is refused before anything is written.

use std::io::Write;

use npy_serde::pickle::{ObjectArray, PyValue};

use crate::format::csv::csv_quote;
use crate::format::objects::{first_global, global_refusal, object_json, object_text};
use crate::input::layout::{product, shape_text};
use crate::print::arrays::{LineIndex, Style};
use crate::print::printable::{select, PResult, PrintError, Range};

/// The elements to print and the shape they have: the first axis cut by `range`; refused if
/// any names a class or function.
pub fn cut(a: &ObjectArray, range: Range) -> PResult<(&[PyValue], Vec<u64>)> {
    let (start, len, shape) = select(&a.shape, range);
    let start = usize::try_from(start)
        .unwrap_or(usize::MAX)
        .min(a.values.len());
    let end = usize::try_from(len)
        .map_or(usize::MAX, |n| start.saturating_add(n))
        .min(a.values.len());
    let values = &a.values[start..end];
    if let Some(name) = values.iter().find_map(first_global) {
        return Err(PrintError::Unsupported(global_refusal(&name)));
    }
    Ok((values, shape))
}

/// Prints the object array in `style`.
pub fn print_objects(out: &mut dyn Write, a: &ObjectArray, style: Style, range: Range) -> PResult {
    let (values, shape) = cut(a, range)?;
    match style {
        Style::Json => {
            json_objects(out, values, &shape, true)?;
            out.write_all(b"\n")?;
            Ok(())
        }
        Style::Text => text_objects(out, values, &shape, ""),
        Style::Csv { header } => csv_objects(out, values, &shape, header),
    }
}

/// The elements nested by `shape` (a bare value for 0-d). With `lines`, the items of the
/// outermost list go on lines of their own, as typed arrays print.
pub fn json_objects(
    out: &mut dyn Write,
    values: &[PyValue],
    shape: &[u64],
    lines: bool,
) -> PResult {
    let Some((&n, rest)) = shape.split_first() else {
        object_json(out, values.first().unwrap_or(&PyValue::None))?;
        return Ok(());
    };
    let per = usize::try_from(product(rest)).unwrap_or(usize::MAX);
    out.write_all(b"[")?;
    for i in 0..usize::try_from(n).unwrap_or(usize::MAX) {
        if i > 0 {
            out.write_all(if lines { b",\n  " } else { b", " })?;
        } else if lines {
            out.write_all(b"\n  ")?;
        }
        let from = i.saturating_mul(per).min(values.len());
        let to = from.saturating_add(per).min(values.len());
        json_objects(out, &values[from..to], rest, false)?;
    }
    if lines && n > 0 {
        out.write_all(b"\n")?;
    }
    out.write_all(b"]")?;
    Ok(())
}

/// One element per line as Python's `repr` writes it, its index before it from 2-D on.
pub fn text_objects(
    out: &mut dyn Write,
    values: &[PyValue],
    shape: &[u64],
    indent: &str,
) -> PResult {
    let mut index = LineIndex::new(shape);
    let mut line = String::new();
    for v in values {
        line.clear();
        line.push_str(indent);
        index.write_next(&mut line);
        object_text(&mut line, v);
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// A header row (`value`, or a record's field names), then a row per element: a `str` as its
/// text, `None` as an empty field, any other value as its JSON text, quoted where CSV needs it.
fn csv_objects(out: &mut dyn Write, values: &[PyValue], shape: &[u64], header: bool) -> PResult {
    if shape.len() > 1 {
        return Err(PrintError::Unsupported(format!(
            "CSV output of an object array is for 0-d and 1-D arrays; this one has shape {} \
             (print it as JSON)",
            shape_text(shape)
        )));
    }
    if header {
        let names: Vec<String> = match values.first() {
            Some(PyValue::Record(fields)) => fields.iter().map(|(n, _)| csv_quote(n)).collect(),
            _ => vec!["value".to_string()],
        };
        writeln!(out, "{}", names.join(","))?;
    }
    for v in values {
        let cells: Vec<String> = match v {
            PyValue::Record(fields) => fields.iter().map(|(_, v)| cell(v)).collect(),
            other => vec![cell(other)],
        };
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// One element as a CSV field.
fn cell(v: &PyValue) -> String {
    match v {
        PyValue::None => String::new(),
        PyValue::Str(s) => csv_quote(s),
        // Their text without JSON's quotes: ISO dates and times, a time zone's name, the
        // decimal's own text.
        PyValue::DateTime(d) => csv_quote(&d.isoformat()),
        PyValue::Date(d) => csv_quote(&d.isoformat()),
        PyValue::Time(t) => csv_quote(&t.isoformat()),
        PyValue::TimeZone(tz) => csv_quote(&tz.tzname()),
        PyValue::Decimal(t) => csv_quote(t),
        other => {
            let mut json = Vec::new();
            // Writing to a Vec cannot fail.
            let _ = object_json(&mut json, other);
            csv_quote(&String::from_utf8_lossy(&json))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(shape: Vec<u64>, values: Vec<PyValue>) -> ObjectArray {
        ObjectArray {
            descr: "'|O'".into(),
            shape,
            fortran_order: false,
            values,
        }
    }

    fn print(a: &ObjectArray, style: Style, range: Range) -> String {
        let mut out = Vec::new();
        match print_objects(&mut out, a, style, range) {
            Ok(()) => String::from_utf8(out).unwrap(),
            Err(PrintError::Unsupported(why)) => format!("refused: {why}"),
            Err(_) => panic!("an I/O error writing to a Vec"),
        }
    }

    #[test]
    fn styles_nest_and_cut_by_the_first_axis() {
        let s = |x: &str| PyValue::Str(x.into());
        let two_d = array(vec![2, 2], vec![s("a"), s("b"), s("c"), PyValue::None]);
        assert_eq!(
            print(&two_d, Style::Json, Range::All),
            "[\n  [\"a\", \"b\"],\n  [\"c\", null]\n]\n"
        );
        assert_eq!(
            print(&two_d, Style::Text, Range::Tail(1)),
            "[0, 0] 'c'\n[0, 1] None\n"
        );
        assert_eq!(
            print(&two_d, Style::Json, Range::Head(1)),
            "[\n  [\"a\", \"b\"]\n]\n"
        );
        assert!(print(&two_d, Style::Csv { header: true }, Range::All).contains("as JSON"));
        let one_d = array(vec![3], vec![s("a,b"), PyValue::None, PyValue::Int(3)]);
        assert_eq!(
            print(&one_d, Style::Csv { header: true }, Range::All),
            "value\n\"a,b\"\n\n3\n"
        );
        let zero_d = array(vec![], vec![PyValue::None]);
        assert_eq!(print(&zero_d, Style::Json, Range::Head(0)), "null\n");
    }

    #[test]
    fn a_class_is_refused_before_anything_is_written() {
        let a = array(
            vec![2],
            vec![
                PyValue::None,
                PyValue::Global {
                    module: "builtins".into(),
                    name: "range".into(),
                },
            ],
        );
        let out = print(&a, Style::Text, Range::All);
        assert!(
            out.starts_with("refused: ") && out.contains("builtins.range"),
            "{out}"
        );
        assert_eq!(print(&a, Style::Text, Range::Head(1)), "None\n");
    }
}
