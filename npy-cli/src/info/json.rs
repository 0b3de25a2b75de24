//! `info --json`: the objects it prints (documented in `npy --help`, JSON CONVENTIONS), and where
//! an archive member's data can be mapped in place.

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::Value as Json;

use crate::global::Global;
use crate::info::literal;
use crate::info::object::ObjectInfo;
use crate::input::header::RawHeader;

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
pub struct MemberJson {
    pub name: String,
    pub key: String,
    pub compression: String,
    pub compressed_size: u64,
    pub size: u64,
    pub array: Option<AnyInfo>,
    /// Where the member's data is, if it can be mapped in place.
    pub in_place: Option<InPlace>,
    /// Why the member cannot be read (then `array` is null and the exit status is 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A member's array: one this tool reads, or an object array (header only).
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum AnyInfo {
    Array(ArrayInfo),
    Object(ObjectInfo),
}

/// A member that `npy_serde::npz::MmapNpz` can view in place: where its data starts in the
/// archive, and the largest power of two (up to 64) dividing that offset.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct InPlace {
    pub data_offset: u64,
    pub alignment: u64,
}

/// The members of the archive at `path` that can be mapped in place (by index), or why none
/// can (the archive fails the mapped archive's checks).
pub fn in_place(g: &Global, path: &Path) -> Result<Vec<Option<InPlace>>, String> {
    if crate::input::source::url_of(path).is_some() {
        return Err("a remote object is not memory-mapped".to_string());
    }
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
pub struct ArchiveJson {
    /// The members, in archive order.
    pub members: Vec<MemberJson>,
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

/// Writes `v` as JSON on one line.
pub fn json_line<T: Serialize>(out: &mut dyn Write, v: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, v).map_err(io::Error::from)?;
    out.write_all(b"\n")
}
