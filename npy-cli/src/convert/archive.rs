//! `npy convert ... OUT.npz`: an archive written from an archive (every member, or the one
//! named) or from a `.npy` file, members copied byte for byte with their compression, and with
//! `--align` every stored member's array data at a multiple of 64 in the file, so that
//! `npy_serde::npz::MmapNpz` can view it in place.

use npy_serde::staged::StagedFile;
use npy_serde::AlignedWriter;
use std::io::{self, BufWriter, Write};

use npy_serde::npz::{Compression, NpzStreamWriter, NpzWriter, RawMemberWriter};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::source::Source;
use crate::input::spec::Spec;

/// The two archive writers (a file is written through a temporary, stdout streamed).
trait Members {
    fn set(&mut self, compression: Compression);
    fn member(&mut self, name: &str) -> npy_serde::Result<RawMemberWriter<'_>>;
}

impl<W: Write + io::Seek> Members for NpzWriter<W> {
    fn set(&mut self, compression: Compression) {
        self.set_compression(compression);
    }
    fn member(&mut self, name: &str) -> npy_serde::Result<RawMemberWriter<'_>> {
        self.start_raw(name)
    }
}

impl<W: Write> Members for NpzStreamWriter<W> {
    fn set(&mut self, compression: Compression) {
        self.set_compression(compression);
    }
    fn member(&mut self, name: &str) -> npy_serde::Result<RawMemberWriter<'_>> {
        self.start_raw(name)
    }
}

/// Copies the input's members (or the `.npy` file) into `w`.
fn copy_members(g: &Global, spec: &Spec, zip: bool, w: &mut dyn Members, out: &str) -> CliResult {
    let failed_write = |e: npy_serde::Error| Failure::write(out, io::Error::other(e));
    if !zip {
        let stem = spec
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "arr_0".into());
        let mut f = Source::open(g, &spec.path, &spec.display)?;
        w.set(Compression::Stored);
        let mut m = w.member(&format!("{stem}.npy")).map_err(failed_write)?;
        io::copy(&mut f, &mut m).map_err(|e| Failure::file(&spec.display, e))?;
        return Ok(());
    }
    let archive_name = spec.path.display().to_string();
    let mut archive = open_archive(g, &spec.path, &archive_name)?;
    let indices: Vec<usize> = match &spec.member {
        Some(key) => {
            let info = archive
                .member(key)
                .ok_or_else(|| Failure::file(&spec.display, "no such member"))?;
            vec![info.index]
        }
        None => (0..archive.len()).collect(),
    };
    for index in indices {
        let info = archive.members()[index].clone();
        let display = format!("{archive_name}:{}", info.key);
        let mut member = archive
            .by_index(index)
            .map_err(|e| Failure::file(&display, e))?;
        w.set(info.compression);
        let mut m = w.member(&info.name).map_err(failed_write)?;
        // The member's bytes, CRC-checked as they are read.
        io::copy(&mut member, &mut m).map_err(|e| Failure::file(&display, e))?;
    }
    Ok(())
}

/// `npy convert IN OUT.npz [--member KEY] [--align]`.
pub fn run(g: &Global, spec: &Spec, zip: bool, out: &str, align: bool) -> CliResult {
    if out == "-" {
        let stdout = io::stdout().lock();
        let mut w = NpzStreamWriter::new(BufWriter::with_capacity(1 << 16, stdout)).align(align);
        copy_members(g, spec, zip, &mut w, out)?;
        let mut inner = w
            .finish()
            .map_err(|e| Failure::write(out, io::Error::other(e)))?;
        return inner.flush().map_err(|e| Failure::write(out, e));
    }
    // Under a temporary name, renamed over OUT when complete (removed on failure).
    let (file, pending) = StagedFile::create(out)
        .map_err(|e| Failure::file(out, e))?
        .into_parts();
    let mut w = NpzWriter::new(AlignedWriter::new(file)).align(align);
    copy_members(g, spec, zip, &mut w, out)?;
    let mut inner = w
        .finish()
        .map_err(|e| Failure::write(out, io::Error::other(e)))?;
    inner.flush().map_err(|e| Failure::write(out, e))?;
    drop(inner);
    match pending {
        Some(p) => p.commit().map_err(|e| Failure::write(out, e)),
        None => Ok(()),
    }
}
