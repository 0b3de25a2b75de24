//! Object arrays (dtype `O`, a record with an `O` field, NumPy 2's `StringDType`) read as data
//! for `--allow-pickle-data`: the pickle after a header the command already read (a `.npy`
//! file or an archive member, local or behind a URL), handed to the data-only pickle reader
//! (`npy_serde::pickle`: nothing is imported or run). Without the option they are refused with
//! the library's error, which names it.

use std::io::Read;

use npy_serde::header::ObjectHeader;
use npy_serde::pickle::ObjectArray;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::header::header_failure;

/// The values of the object array whose header is `h` and whose pickle is the rest of `data`
/// (a file after its header, or a member, whose CRC is checked as it is read).
pub fn read_objects(
    g: &Global,
    h: &ObjectHeader,
    mut data: impl Read,
    allow_pickle_data: bool,
    display: &str,
) -> CliResult<ObjectArray> {
    if !allow_pickle_data {
        return Err(header_failure(display, h.refusal()));
    }
    // Grows with the bytes actually there: the pickle has no declared length.
    let mut pickle = Vec::new();
    data.read_to_end(&mut pickle)
        .map_err(|e| Failure::file(display, crate::input::archive::unwrap_io(e)))?;
    g.reader_options()
        .allow_pickle_data(true)
        .read_objects_with_header(h, &pickle)
        .map_err(|e| Failure::file(display, e))
}
