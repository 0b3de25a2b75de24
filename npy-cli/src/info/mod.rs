//! `npy info`: the header as a readable summary (dtype as a tree with offsets) or as JSON; for an
//! archive every member; for an object array its header and what its data is; with `--arrow`
//! (feature `arrow`) the Arrow schema the array maps to.

#[cfg(feature = "arrow")]
mod arrow;
mod json;
mod literal;
mod object;
mod text;

use std::io::{self, BufWriter, Write};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::file::{NpyFile, Opened};
use crate::input::header::{member_contents, member_contents_if_npy, Kind};
use crate::input::spec::{is_zip, resolve};
use json::{array_info, in_place, json_line, AnyInfo, ArchiveJson, MemberJson};
use object::ObjectInfo;
use text::{array_text, member_text};

// `npy info`'s arguments. No doc comment here: clap would take it for the command's
// help, which is the doc comment of `Command::Info` in cli.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .npy/.npz file (or ARCHIVE:KEY).
    file: String,
    /// Only this member of an .npz archive.
    #[arg(long, value_name = "KEY")]
    member: Option<String>,
    /// Print JSON (see the conventions in --help).
    #[arg(long, conflicts_with = "arrow")]
    json: bool,
    /// Print the Arrow schema the array maps to (as `npy convert` to .parquet / .arrow
    /// writes it; needs the `arrow` feature).
    #[arg(long)]
    arrow: bool,
}

/// `npy info`; `--arrow` is what the `arrow` feature adds.
pub fn run(g: &Global, a: Args) -> CliResult {
    if a.arrow {
        #[cfg(feature = "arrow")]
        return arrow::run(g, &a.file, a.member.as_deref());
        #[cfg(not(feature = "arrow"))]
        return Err(Failure::usage(
            "--arrow: this npy was built without Arrow support: install it with \
             `cargo install npy-cli --features arrow`",
        ));
    }
    header(g, &a.file, a.member.as_deref(), a.json)
}

/// The header(s) of FILE (or its member), as text or JSON.
fn header(g: &Global, file: &str, member: Option<&str>, json: bool) -> CliResult {
    let spec = resolve(file, member)?;
    let stdout = io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    let w = |e: io::Error| Failure::write("standard output", e);
    let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if !zip {
        if spec.member.is_some() {
            return Err(Failure::usage(format!(
                "{}: not an .npz archive, so it has no members",
                spec.path.display()
            )));
        }
        let f = match NpyFile::open_any(g, &spec.path, &spec.display)? {
            Opened::Typed(f) => f,
            // An object array: its header, and what its data is.
            Opened::Objects(h, rest) => {
                let o = ObjectInfo::read(&h, rest).map_err(|e| Failure::file(&spec.display, e))?;
                if json {
                    json_line(&mut out, &o).map_err(w)?;
                } else {
                    out.write_all(o.text(Some(&spec.display), "").as_bytes())
                        .map_err(w)?;
                }
                return out.flush().map_err(w);
            }
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
    let mut archive = open_archive(g, &spec.path, &archive_name)?;
    if let Some(key) = &spec.member {
        let mut m = archive
            .by_key(key)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let h = match member_contents(&mut m, &spec.display)? {
            Kind::Typed(h) => h,
            Kind::Objects(h) => {
                let info = m.info().clone();
                let o = ObjectInfo::read(&h, m).map_err(|e| Failure::file(&spec.display, e))?;
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
            Ok(mut m) => match member_contents_if_npy(&mut m, &display)? {
                // An object array: its header, and its pickle scanned (never run).
                Some(Kind::Objects(h)) => {
                    let o = ObjectInfo::read(&h, m).map_err(|e| Failure::file(&display, e))?;
                    Ok((None, Some(o)))
                }
                Some(Kind::Typed(h)) => Ok((Some(h), None)),
                None => Ok((None, None)),
            },
            Err(e) => Err(e),
        };
        let (header, objects, unreadable) = match first {
            Ok((h, o)) => (h, o, None),
            Err(e) => {
                let why = e.to_string();
                failed.get_or_insert_with(|| Failure::file(&display, &e));
                (None, None, Some(why))
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
