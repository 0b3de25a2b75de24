//! `npy info` on an array of Python objects: a dtype of `'|O'`, or a record with such a field.
//! NumPy pickles such data (`allow_pickle=True`), which this tool never unpickles; the header
//! is a plain dict, so `info` shows it and says so, and the pickle is scanned (never run) for
//! its protocol and the globals it names. `cat`, `convert` and `sql` read their data with
//! `--allow-pickle-data` (the data-only pickle reader: nothing is imported or run), and refuse
//! them without it, as the library does.

use std::io::{self, Read};

use serde::Serialize;
use serde_json::Value as Json;

use npy_serde::header::ObjectHeader;

use crate::info::literal;
use crate::input::layout::shape_text;

/// What `info` says about the data of an object array.
pub const DATA_NOTE: &str = "pickled Python objects (NumPy's allow_pickle=True), never \
     unpickled: --allow-pickle-data reads them as data";

/// `info --json` for an object array: the keys of an array's info, `itemsize` null (pickled
/// data has none), and `data` saying what the data is.
#[derive(Serialize, Debug)]
pub struct ObjectInfo {
    version: [u8; 2],
    descr: Json,
    shape: Vec<u64>,
    fortran_order: bool,
    data_offset: u64,
    itemsize: Option<u64>,
    count: u64,
    data: &'static str,
    /// The pickle's protocol (none before protocol 2), found without running it.
    pickle_protocol: Option<u8>,
    /// Every global the pickle names (`module.name`), which `pickle.load` would import.
    pickle_globals: Vec<String>,
    /// Where the pickle stops making sense, if it does.
    pickle_error: Option<String>,
}

impl ObjectInfo {
    /// What `info` says about the object array whose header is `h` and whose pickle is
    /// `pickle` (scanned for its protocol and the globals it names: nothing is run).
    pub fn new(h: &ObjectHeader, pickle: &[u8]) -> ObjectInfo {
        let count = h.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let (major, minor) = h.version.as_tuple();
        let scan = npy_serde::pickle::scan(pickle);
        ObjectInfo {
            version: [major, minor],
            descr: literal::to_json(&h.descr),
            shape: h.shape.clone(),
            fortran_order: h.fortran_order,
            data_offset: h.data_offset,
            itemsize: None,
            // The header parse checked the element count.
            count: count.unwrap_or(u64::MAX),
            data: DATA_NOTE,
            pickle_protocol: scan.protocol,
            pickle_globals: scan
                .globals
                .iter()
                .map(|(m, n)| format!("{m}.{n}"))
                .collect(),
            pickle_error: scan.error.map(|e| e.to_string()),
        }
    }

    /// [`new`](Self::new) with the pickle the rest of `r` (a file after its header, a member
    /// whose CRC is checked as it is read).
    pub fn read(h: &ObjectHeader, mut r: impl Read) -> io::Result<ObjectInfo> {
        let mut pickle = Vec::new();
        r.read_to_end(&mut pickle)?;
        Ok(ObjectInfo::new(h, &pickle))
    }
}

impl ObjectInfo {
    /// The readable summary, as `info` prints an array's, each line prefixed by `indent`
    /// (after a first line `file:` naming `file`, if given).
    pub fn text(&self, file: Option<&str>, indent: &str) -> String {
        let dtype = match &self.descr {
            Json::String(s) => format!("{s} (Python objects)"),
            other => format!("{other} (a record with Python object fields)"),
        };
        let order = if self.fortran_order {
            "Fortran (column-major)"
        } else {
            "C (row-major)"
        };
        let mut text = String::new();
        if let Some(file) = file {
            text.push_str(&format!("{:<13}{file}\n", "file:"));
        }
        for (k, v) in [
            (
                "version:",
                format!("{}.{}", self.version[0], self.version[1]),
            ),
            ("dtype:", dtype),
            ("shape:", shape_text(&self.shape)),
            ("order:", order.to_string()),
            ("count:", self.count.to_string()),
            ("data offset:", self.data_offset.to_string()),
            ("data:", DATA_NOTE.to_string()),
        ] {
            text.push_str(&format!("{indent}{k:<13}{v}\n"));
        }
        let protocol = match self.pickle_protocol {
            Some(p) => format!("protocol {p}"),
            None => "protocol 0 or 1".to_string(),
        };
        let globals = if self.pickle_globals.is_empty() {
            "no globals".to_string()
        } else {
            format!("names {}", self.pickle_globals.join(", "))
        };
        text.push_str(&format!(
            "{indent}{:<13}{protocol}, {globals} (not run)\n",
            "pickle:"
        ));
        if let Some(e) = &self.pickle_error {
            text.push_str(&format!("{indent}{:<13}{e}\n", "pickle error:"));
        }
        text
    }
}
