//! `npy convert --allow-pickle-data` of an object array (dtype O, NumPy 2 StringDType) to JSON
//! or CSV: its pickle read as data by `npy_serde::pickle` (nothing imported or run), each
//! element as `cat --allow-pickle-data` prints it (a `str` as a JSON string, `None` as null,
//! numbers, lists and dicts as JSON).
//!
//! JSON: one document, the elements nested by the shape (as `ndarray.tolist()`). CSV (0-d and
//! 1-D arrays): a header row (`value`, or a record's field names), then a row per element; a
//! `str` as its text, `None` as an empty field, any other value as its JSON text, quoted
//! where CSV needs it.

use std::io::Write;

use npy_serde::pickle::{ObjectArray, PyValue};
use serde_json::Value as Json;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::spec::Spec;
use crate::output::Target;

/// Writes the object array of `spec` to `out` as `target` (JSON or CSV); `false` if the input
/// is not an object array (it is then converted as any other).
pub fn write(
    g: &Global,
    spec: &Spec,
    target: Target,
    out: &mut dyn Write,
    out_name: &str,
) -> CliResult<bool> {
    let Some(array) = crate::input::objects::read(g, spec)? else {
        return Ok(false);
    };
    let text = match target {
        Target::Csv => csv(&array).map_err(|e| Failure::file(&spec.display, e))?,
        _ => {
            let values = array
                .values
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Failure::file(&spec.display, e))?;
            let mut doc = nest(&values, &array.shape).to_string();
            doc.push('\n');
            doc
        }
    };
    out.write_all(text.as_bytes())
        .map_err(|e| Failure::write(out_name, e))?;
    Ok(true)
}

/// The flat `values` nested by `shape` (C order); a 0-d array is its one element.
fn nest(values: &[Json], shape: &[u64]) -> Json {
    match shape.split_first() {
        None => values.first().cloned().unwrap_or(Json::Null),
        Some((&n, rest)) => {
            let per: usize = rest.iter().map(|&d| d as usize).product();
            let items = (0..n as usize)
                .map(|i| nest(values.get(i * per..(i + 1) * per).unwrap_or(&[]), rest))
                .collect();
            Json::Array(items)
        }
    }
}

/// The CSV text of a 0-d or 1-D object array.
fn csv(a: &ObjectArray) -> Result<String, String> {
    if a.shape.len() > 1 {
        return Err(format!(
            "CSV output of an object array is for 0-d and 1-D arrays; this one's shape is {:?} \
             (convert it to .json)",
            a.shape
        ));
    }
    let mut out = String::new();
    let names: Vec<String> = match a.values.first() {
        Some(PyValue::Record(fields)) => fields.iter().map(|(n, _)| n.clone()).collect(),
        _ => vec!["value".to_string()],
    };
    line(&mut out, names.iter().map(|n| field(n)));
    for v in &a.values {
        match v {
            PyValue::Record(fields) => line(&mut out, fields.iter().map(|(_, v)| cell(v))),
            other => line(&mut out, std::iter::once(cell(other))),
        }
    }
    Ok(out)
}

fn line(out: &mut String, cells: impl Iterator<Item = String>) {
    let cells: Vec<String> = cells.collect();
    out.push_str(&cells.join(","));
    out.push('\n');
}

/// One element as a CSV field.
fn cell(v: &PyValue) -> String {
    match v {
        PyValue::None => String::new(),
        PyValue::Str(s) => field(s),
        other => field(&serde_json::to_string(other).unwrap_or_default()),
    }
}

/// `s` quoted where CSV needs it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_nulls() {
        let a = ObjectArray {
            descr: "'|O'".into(),
            shape: vec![4],
            fortran_order: false,
            values: vec![
                PyValue::Str("a,b".into()),
                PyValue::None,
                PyValue::Int(3),
                PyValue::Str("say \"hi\"".into()),
            ],
        };
        assert_eq!(
            csv(&a).unwrap(),
            "value\n\"a,b\"\n\n3\n\"say \"\"hi\"\"\"\n"
        );
        let two = ObjectArray {
            shape: vec![1, 1],
            ..a
        };
        assert!(csv(&two).unwrap_err().contains(".json"));
    }

    #[test]
    fn json_nests_by_shape() {
        let v: Vec<Json> = (0..6).map(Json::from).collect();
        assert_eq!(nest(&v, &[2, 3]).to_string(), "[[0,1,2],[3,4,5]]");
        assert_eq!(nest(&v[..1], &[]).to_string(), "0");
    }
}
