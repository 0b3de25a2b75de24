//! The values of an input (a file, an archive, or one member) written in a [`Style`]: what `cat`
//! prints and what `convert` writes to `.json` / `.csv`.

use std::io::{self, Write};

use npy_serde::DType;

use crate::failure::{CliResult, Failure};
use crate::format::json::json_str;
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::elements::{file_elements, member_elements};
use crate::input::file::NpyFile;
use crate::input::header::{member_header, member_header_if_npy};
use crate::input::layout::shape_text;
use crate::input::spec::{is_zip, Spec};
use crate::print::arrays::{json_array, print_array, text_array, Style};
use crate::print::printable::{select, Printable, Range};

/// Writes the values of `spec` (a file, an archive, or one member) to `out` in `style`.
pub fn write_input(
    g: &Global,
    spec: &Spec,
    style: Style,
    range: Range,
    out: &mut dyn Write,
    out_name: &str,
    progress: bool,
) -> CliResult {
    let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if !zip {
        if spec.member.is_some() {
            return Err(Failure::usage(format!(
                "{}: not an .npz archive, so it has no members",
                spec.path.display()
            )));
        }
        let mut f = NpyFile::open(g, &spec.path, &spec.display)?;
        let (start, len, shape) = select(&f.header.header().shape, range);
        let dtype = f.header.dtype().clone();
        check_empty(g, &dtype, &shape, &spec.display)?;
        let elems = file_elements(&mut f, &spec.display, start, len)?;
        let mut p = Printable::new(shape, dtype, elems, progress);
        return print_array(out, &mut p, style).map_err(|e| e.fail(&spec.display, out_name));
    }
    let archive_name = spec.path.display().to_string();
    let mut archive = open_archive(g, &spec.path, &archive_name)?;
    if let Some(key) = &spec.member {
        let mut m = archive
            .by_key(key)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let header = member_header(&mut m, &spec.display)?;
        let (start, len, shape) = select(&header.header().shape, range);
        check_empty(g, header.dtype(), &shape, &spec.display)?;
        let elems = member_elements(m, &header, &spec.display, start, len)?;
        let mut p = Printable::new(shape, header.dtype().clone(), elems, progress);
        return print_array(out, &mut p, style).map_err(|e| e.fail(&spec.display, out_name));
    }
    if matches!(style, Style::Csv { .. }) {
        return Err(Failure::usage(format!(
            "{archive_name}: CSV prints one array: pick a member with --member KEY or {archive_name}:KEY"
        )));
    }
    let w = |e: io::Error| Failure::write(out_name, e);
    if style == Style::Json {
        out.write_all(b"{").map_err(w)?;
    }
    let mut first = true;
    for index in 0..archive.len() {
        let mut m = archive
            .by_index(index)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let key = m.info().key.clone();
        let display = format!("{archive_name}:{key}");
        let Some(header) = member_header_if_npy(&mut m, &display)? else {
            // As `np.load` returns such a member as raw bytes: nothing to print, but say so.
            eprintln!("npy: note: {display} is not an .npy array (skipped)");
            continue;
        };
        let (start, len, shape) = select(&header.header().shape, range);
        check_empty(g, header.dtype(), &shape, &display)?;
        let elems = member_elements(m, &header, &display, start, len)?;
        let mut p = Printable::new(shape, header.dtype().clone(), elems, progress);
        match style {
            Style::Json => {
                out.write_all(if first { b"\n  " } else { b",\n  " })
                    .map_err(w)?;
                json_str(out, &key).map_err(w)?;
                out.write_all(b": ").map_err(w)?;
                json_array(out, &mut p, false).map_err(|e| e.fail(&display, out_name))?;
            }
            _ => {
                if !first {
                    out.write_all(b"\n").map_err(w)?;
                }
                writeln!(
                    out,
                    "{key}: shape {}, dtype {}",
                    shape_text(&header.header().shape),
                    header.dtype()
                )
                .map_err(w)?;
                text_array(out, &mut p, "  ").map_err(|e| e.fail(&display, out_name))?;
            }
        }
        first = false;
    }
    if style == Style::Json {
        out.write_all(if first { b"}\n" } else { b"\n}\n" })
            .map_err(w)?;
    }
    Ok(())
}

/// Refuses to print an array with more values that no data byte pays for than
/// `--max-empty-items` (the library's `max_empty_items` bound, for the tool's streaming output):
/// their number is not bounded by the file's size.
fn check_empty(g: &Global, dtype: &DType, shape: &[u64], display: &str) -> CliResult {
    let n = npy_serde::Header::new(dtype.clone(), shape.to_vec()).empty_value_count();
    if n > g.max_empty_items {
        return Err(Failure::file(
            display,
            format!(
                "printing it would write {n} values without data bytes (elements of a zero-size \
                 dtype, or lists above a zero-length axis), more than the limit of {}; raise it \
                 with --max-empty-items if you mean it",
                g.max_empty_items
            ),
        ));
    }
    Ok(())
}
