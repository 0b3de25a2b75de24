//! Table files opened for reading: an Arrow IPC file (`.arrow`, `.feather`, `.ipc`) or a Parquet
//! file (`.parquet`, `.pq`), with the string widths a `.npy` output needs.

use std::collections::HashMap;
use std::fs::File;

use crate::choice::TableChoice;
use crate::failure::{CliResult, Failure};
use crate::input::spec::is_parquet;
use crate::table::ends::TableIn;
use crate::table::ipc::Located;
use crate::table::parquet;
use crate::table::progress::Progress;
use crate::table::widths::string_widths;

/// Opens the table file `input` with the columns `choice` keeps (the others not decoded);
/// with `widths`, its string columns are measured first (for a `.npy` output).
pub fn open(input: &str, widths: bool, choice: &TableChoice) -> CliResult<TableIn> {
    let file = File::open(input).map_err(|e| Failure::file(input, e))?;
    if is_parquet(input) {
        return parquet::open(file, input, widths, choice);
    }
    let mut reader = arrow_ipc::reader::FileReader::try_new_buffered(file, None)
        .map_err(|e| Failure::file(input, e))?;
    let full = reader.schema();
    let keep = choice.indices(&full, input)?;
    // A projected reader's schema is still the file's: the one of the columns kept goes along.
    let mut schema = None;
    if let Some(k) = &keep {
        let f = File::open(input).map_err(|e| Failure::file(input, e))?;
        reader = arrow_ipc::reader::FileReader::try_new_buffered(f, keep.clone())
            .map_err(|e| Failure::file(input, e))?;
        let projected = full.project(k).map_err(|e| Failure::file(input, e))?;
        schema = Some(std::sync::Arc::new(projected));
    }
    let widths = if widths {
        let f = File::open(input).map_err(|e| Failure::file(input, e))?;
        let again = arrow_ipc::reader::FileReader::try_new_buffered(f, keep.clone())
            .map_err(|e| Failure::file(input, e))?;
        string_widths(Located::new(again, input, keep.clone()), input)?
    } else {
        HashMap::new()
    };
    Ok(TableIn {
        reader: Box::new(Located::new(reader, input, keep)),
        schema,
        progress: Progress::none(),
        widths,
    })
}
