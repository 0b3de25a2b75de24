//! The values of an input (a file, an archive, or one member) written in a [`Style`]: what `cat`
//! prints and what `convert` writes to `.json` / `.csv`. Each array's header is read once and
//! says its kind: typed arrays are streamed element by element, object arrays read as data
//! with `--allow-pickle-data` (refused without it) and printed in the same style.

use std::io::{self, Write};

use npy_serde::DType;

use crate::failure::{CliResult, Failure};
use crate::format::json::json_str;
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::elements::{file_elements, member_elements};
use crate::input::file::{NpyFile, Opened};
use crate::input::header::{member_contents, member_contents_if_npy, Kind};
use crate::input::layout::shape_text;
use crate::input::objects::read_objects;
use crate::input::spec::{is_zip, Spec};
use crate::print::arrays::{json_array, print_array, text_array, Style};
use crate::print::objects::{cut, json_objects, print_objects, text_objects};
use crate::print::printable::{select, Printable, Range};

/// What to write of an input, and how.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    /// The output style.
    pub style: Style,
    /// Which elements along the first axis.
    pub range: Range,
    /// Read object arrays as data (`--allow-pickle-data`); refused without it.
    pub allow_pickle_data: bool,
    /// Show a progress bar for long outputs on a terminal.
    pub progress: bool,
}

/// Writes the values of `spec` (a file, an archive, or one member) to `out` as `req` asks.
pub fn write_input(
    g: &Global,
    spec: &Spec,
    req: Request,
    out: &mut dyn Write,
    out_name: &str,
) -> CliResult {
    let Request {
        style,
        range,
        allow_pickle_data,
        progress,
    } = req;
    let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if !zip {
        if spec.member.is_some() {
            return Err(Failure::usage(format!(
                "{}: not an .npz archive, so it has no members",
                spec.path.display()
            )));
        }
        let mut f = match NpyFile::open_any(g, &spec.path, &spec.display)? {
            Opened::Typed(f) => f,
            Opened::Objects(h, rest) => {
                let a = read_objects(g, &h, rest, allow_pickle_data, &spec.display)?;
                return print_objects(out, &a, style, range)
                    .map_err(|e| e.fail(&spec.display, out_name));
            }
        };
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
        let header = match member_contents(&mut m, &spec.display)? {
            Kind::Typed(h) => h,
            Kind::Objects(h) => {
                let a = read_objects(g, &h, m, allow_pickle_data, &spec.display)?;
                return print_objects(out, &a, style, range)
                    .map_err(|e| e.fail(&spec.display, out_name));
            }
        };
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
        let Some(kind) = member_contents_if_npy(&mut m, &display)? else {
            // As `np.load` returns such a member as raw bytes: nothing to print, but say so.
            eprintln!("npy: note: {display} is not an .npy array (skipped)");
            continue;
        };
        // The member's values, with its shape and dtype for the text style.
        let (member, shape, dtype) = match kind {
            Kind::Typed(header) => {
                let (start, len, shape) = select(&header.header().shape, range);
                check_empty(g, header.dtype(), &shape, &display)?;
                let elems = member_elements(m, &header, &display, start, len)?;
                let p = Printable::new(shape, header.dtype().clone(), elems, progress);
                let dtype = header.dtype().to_string();
                (Member::Typed(p), header.header().shape.clone(), dtype)
            }
            Kind::Objects(h) => {
                let a = read_objects(g, &h, m, allow_pickle_data, &display)?;
                let dtype = format!("{} (Python objects)", a.descr);
                (Member::Objects(a), h.shape, dtype)
            }
        };
        match style {
            Style::Json => {
                out.write_all(if first { b"\n  " } else { b",\n  " })
                    .map_err(w)?;
                json_str(out, &key).map_err(w)?;
                out.write_all(b": ").map_err(w)?;
                match member {
                    Member::Typed(mut p) => json_array(out, &mut p, false),
                    Member::Objects(a) => cut(&a, range)
                        .and_then(|(values, shape)| json_objects(out, values, &shape, false)),
                }
                .map_err(|e| e.fail(&display, out_name))?;
            }
            _ => {
                if !first {
                    out.write_all(b"\n").map_err(w)?;
                }
                writeln!(out, "{key}: shape {}, dtype {dtype}", shape_text(&shape)).map_err(w)?;
                match member {
                    Member::Typed(mut p) => text_array(out, &mut p, "  "),
                    Member::Objects(a) => cut(&a, range)
                        .and_then(|(values, shape)| text_objects(out, values, &shape, "  ")),
                }
                .map_err(|e| e.fail(&display, out_name))?;
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

/// An archive member ready to print.
enum Member<'a> {
    Typed(Printable<'a>),
    Objects(npy_serde::pickle::ObjectArray),
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
