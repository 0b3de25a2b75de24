//! `npy check`: validate files completely (header, data length, every value).

use std::io::{self, Write};

use npy_serde::{decode_value, DType, Scalar};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::elements::{file_elements, member_elements, Elements, MAX_EMPTY_ITEMS};
use crate::input::file::{NpyFile, Opened};
use crate::input::header::{member_contents_if_npy, Kind};
use crate::input::objects::read_objects;
use crate::input::spec::{is_zip, resolve};
use crate::print::printable::PrintError;

// `npy check`'s arguments. No doc comment here: clap would take it for the command's
// help, which is the doc comment of `Command::Check` in cli.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The files to check.
    #[arg(required = true)]
    files: Vec<String>,
    /// Also print `FILE: ok` for good files.
    #[arg(short, long)]
    verbose: bool,
    /// Check object arrays (dtype O, NumPy 2 StringDType) too, by reading their pickles as
    /// data: nothing is imported or run. Without it they are reported as refused.
    #[arg(long)]
    allow_pickle_data: bool,
}

/// `npy check FILE...`: one line per bad file on stdout, exit status 1 if any is bad.
pub fn run(g: &Global, a: Args) -> CliResult {
    let mut bad = 0usize;
    let mut out = io::stdout().lock();
    for file in &a.files {
        let line = match check_one(g, file, a.allow_pickle_data) {
            Ok(()) if a.verbose => format!("{file}: ok\n"),
            Ok(()) => continue,
            Err(f) if f.code == 0 => return Err(f),
            Err(f) => {
                bad += 1;
                // Messages already name the file (or FILE:KEY for an archive member).
                if f.msg.starts_with(file.as_str()) {
                    format!("{}\n", f.msg)
                } else {
                    format!("{file}: {}\n", f.msg)
                }
            }
        };
        out.write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| Failure::write("standard output", e))?;
    }
    if bad > 0 {
        Err(Failure {
            code: 1,
            msg: String::new(),
        })
    } else {
        Ok(())
    }
}

/// True if some bytes of `dt` can fail to decode (bool bytes, UCS-4 code points).
pub fn needs_validation(dt: &DType) -> bool {
    match dt {
        DType::Plain(p) => matches!(p.scalar(), Scalar::Bool | Scalar::Unicode(_)),
        DType::Record(r) => r.fields().iter().any(|f| needs_validation(&f.dtype)),
        DType::Array(base, _) => needs_validation(base),
    }
}

/// Reads every element, decoding those whose bytes can be invalid. Types that cannot hold an
/// invalid value are only read through (which checks an archive member's length and CRC-32).
fn validate(elems: &mut Elements<'_>, dt: &DType) -> Result<(), PrintError> {
    if dt.itemsize() == 0 {
        // No data bytes (an empty record, `V0`): nothing to read, however many elements.
        return Ok(());
    }
    if !needs_validation(dt) {
        return elems.drain().map_err(PrintError::Data);
    }
    while let Some(e) = elems.next()? {
        let index = e.index;
        decode_value(dt, e.bytes, e.offset, MAX_EMPTY_ITEMS)
            .map_err(|err| PrintError::Data(err.at_record(index)))?;
    }
    Ok(())
}

fn check_one(g: &Global, file: &str, allow_pickle_data: bool) -> CliResult {
    let spec = resolve(file, None)?;
    let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if !zip {
        let mut f = match NpyFile::open_any(g, &spec.path, &spec.display)? {
            Opened::Typed(f) => f,
            // An object array: its pickle read as data (nothing is imported or run), or
            // the refusal naming --allow-pickle-data.
            Opened::Objects(h, rest) => {
                return read_objects(g, &h, rest, allow_pickle_data, &spec.display).map(|_| ());
            }
        };
        let count = f.header.count();
        let dt = f.header.dtype().clone();
        let mut elems = file_elements(&mut f, &spec.display, 0, count)?;
        return validate(&mut elems, &dt).map_err(|e| e.fail(&spec.display, "standard output"));
    }
    let name = spec.path.display().to_string();
    let mut archive = open_archive(g, &spec.path, &name)?;
    let indexes: Vec<usize> = match &spec.member {
        Some(key) => {
            let info = archive
                .member(key)
                .ok_or_else(|| Failure::file(&name, format!("no member with key {key:?}")))?;
            vec![info.index]
        }
        None => (0..archive.len()).collect(),
    };
    for index in indexes {
        let mut m = archive
            .by_index(index)
            .map_err(|e| Failure::file(&name, e))?;
        let display = format!("{name}:{}", m.info().key);
        match member_contents_if_npy(&mut m, &display)? {
            Some(Kind::Objects(h)) => {
                read_objects(g, &h, m, allow_pickle_data, &display)?;
            }
            Some(Kind::Typed(h)) => {
                let count = h.count();
                let dt = h.dtype().clone();
                let mut elems = member_elements(m, &h, &display, 0, count)?;
                validate(&mut elems, &dt).map_err(|e| e.fail(&display, "standard output"))?;
            }
            // Not an array: still read it all, which checks its length and CRC-32.
            None => m.finish().map_err(|e| Failure::file(&display, e))?,
        }
    }
    Ok(())
}
