//! Whole arrays streamed element by element in a [`Style`]: nested JSON lists, CSV rows (0-d,
//! 1-D and 2-D arrays), or one element per line of text.

use std::io::Write;

use crate::format::csv::{csv_cell, csv_quote, leaf_paths};
use crate::format::json::write_json;
use crate::format::text::text_value;
use crate::input::layout::{product, shape_text};
use crate::print::printable::{PResult, PrintError, Printable};

/// Output style of `cat` (and `convert` to JSON / CSV).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Readable text.
    Text,
    /// The JSON convention.
    Json,
    /// CSV, with or without the header row.
    Csv {
        /// Print the header row.
        header: bool,
    },
}

/// Streams the array as nested JSON lists (a bare value for 0-d). With `lines`, the items of
/// the outermost list go on lines of their own.
pub fn json_array(out: &mut dyn Write, p: &mut Printable<'_>, lines: bool) -> PResult {
    let shape = p.shape.clone();
    json_dims(out, p, &shape, lines)
}

fn json_dims(out: &mut dyn Write, p: &mut Printable<'_>, dims: &[u64], lines: bool) -> PResult {
    let Some((&n, rest)) = dims.split_first() else {
        let v = p.next_value()?;
        write_json(out, &v)?;
        return Ok(());
    };
    out.write_all(b"[")?;
    for i in 0..n {
        if i > 0 {
            out.write_all(if lines { b",\n  " } else { b", " })?;
        } else if lines {
            out.write_all(b"\n  ")?;
        }
        json_dims(out, p, rest, false)?;
    }
    if lines && n > 0 {
        out.write_all(b"\n")?;
    }
    out.write_all(b"]")?;
    Ok(())
}

/// The C-order index of each element in turn, written before it from 2-D on (`[0, 1] `).
pub struct LineIndex {
    shape: Vec<u64>,
    idx: Vec<u64>,
}

impl LineIndex {
    /// The first element's index of an array of `shape`.
    pub fn new(shape: &[u64]) -> Self {
        LineIndex {
            shape: shape.to_vec(),
            idx: vec![0; shape.len()],
        }
    }

    /// Appends `[i, j, ..] ` for a 2-D or larger array (nothing otherwise), then moves on to
    /// the next element.
    pub fn write_next(&mut self, line: &mut String) {
        if self.shape.len() >= 2 {
            let at: Vec<String> = self.idx.iter().map(u64::to_string).collect();
            line.push('[');
            line.push_str(&at.join(", "));
            line.push_str("] ");
        }
        for k in (0..self.shape.len()).rev() {
            self.idx[k] += 1;
            if self.idx[k] < self.shape[k] {
                break;
            }
            self.idx[k] = 0;
        }
    }
}

/// One element per line (prefixed by its index for 2-D and more); a 0-d array is one line.
pub fn text_array(out: &mut dyn Write, p: &mut Printable<'_>, indent: &str) -> PResult {
    let shape = p.shape.clone();
    let count = product(&shape);
    let dtype = p.dtype.clone();
    let mut index = LineIndex::new(&shape);
    let mut line = String::new();
    for _ in 0..count {
        let v = p.next_value()?;
        line.clear();
        line.push_str(indent);
        index.write_next(&mut line);
        text_value(&mut line, &v, &dtype, &[]);
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

fn csv_array(out: &mut dyn Write, p: &mut Printable<'_>, header: bool) -> PResult {
    let shape = p.shape.clone();
    if shape.len() > 2 {
        return Err(PrintError::Unsupported(format!(
            "CSV needs a 0-d, 1-D or 2-D array, this one has shape {}",
            shape_text(&shape)
        )));
    }
    let (rows, per_row) = match shape.as_slice() {
        [] => (1, 1),
        [n] => (*n, 1),
        [n, m] => (*n, *m),
        _ => (0, 0),
    };
    if header {
        let mut elem = Vec::new();
        leaf_paths(&p.dtype, "", &mut elem);
        let mut cols = Vec::new();
        if shape.len() == 2 {
            for j in 0..per_row {
                for e in &elem {
                    cols.push(if e.is_empty() {
                        format!("[{j}]")
                    } else if e.starts_with('[') {
                        format!("[{j}]{e}")
                    } else {
                        format!("[{j}].{e}")
                    });
                }
            }
        } else {
            for e in elem {
                cols.push(if e.is_empty() { "value".to_string() } else { e });
            }
        }
        let cols: Vec<String> = cols.iter().map(|c| csv_quote(c)).collect();
        writeln!(out, "{}", cols.join(","))?;
    }
    let mut cells = Vec::new();
    for _ in 0..rows {
        cells.clear();
        for _ in 0..per_row {
            let v = p.next_value()?;
            csv_cell(&v, &mut cells);
        }
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// Prints one array in `style`.
pub fn print_array(out: &mut dyn Write, p: &mut Printable<'_>, style: Style) -> PResult {
    match style {
        Style::Json => {
            json_array(out, p, true)?;
            out.write_all(b"\n")?;
            Ok(())
        }
        Style::Csv { header } => csv_array(out, p, header),
        Style::Text => text_array(out, p, ""),
    }
}
