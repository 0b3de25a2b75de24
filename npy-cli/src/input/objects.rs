//! Object arrays (dtype `O`, a record with an `O` field, NumPy 2's `StringDType`) read as data
//! for `--allow-pickle-data`: a `.npy` file or an archive member, local or behind a URL, read
//! whole and handed to the data-only pickle reader (`npy_serde::pickle`: nothing is imported
//! or run).

use std::io::Read;

use npy_serde::pickle::ObjectArray;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::source::{url_of, Source};
use crate::input::spec::Spec;

/// The object array `spec` names, or `None` if its dtype holds no object (it is then read as
/// any other array). An archive without a member is not an object array.
pub fn read(g: &Global, spec: &Spec) -> CliResult<Option<ObjectArray>> {
    let rb = g.reader_options().allow_pickle_data(true);
    let read = match &spec.member {
        Some(key) => {
            let archive_name = spec.path.display().to_string();
            let mut archive = open_archive(g, &spec.path, &archive_name)?;
            let member = archive
                .by_key(key)
                .map_err(|e| Failure::file(&archive_name, e))?;
            // The member's whole .npy file, CRC-checked.
            let bytes = member
                .read_raw()
                .map_err(|e| Failure::file(&spec.display, e))?;
            rb.read_objects_slice(&bytes)
        }
        None => match url_of(&spec.path) {
            // The whole object: a pickle is read at once anyway.
            Some(_) => {
                let mut bytes = Vec::new();
                Source::open(g, &spec.path, &spec.display)?
                    .read_to_end(&mut bytes)
                    .map_err(|e| Failure::file(&spec.display, e))?;
                rb.read_objects_slice(&bytes)
            }
            None => rb.read_objects_path(&spec.path),
        },
    };
    match read {
        Ok(array) => Ok(Some(array)),
        Err(e) if e.kind().code() == "type_mismatch" => Ok(None),
        Err(e) => Err(Failure::file(&spec.display, e)),
    }
}
