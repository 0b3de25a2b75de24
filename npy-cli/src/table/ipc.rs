//! Arrow IPC files read with errors that say where: arrow-ipc reports a dictionary key past
//! its dictionary as "Value at position N out of bounds", naming neither the column nor the
//! batch. Once a batch fails, [`Located`] reads it again one column at a time to find the
//! column, and names it with the row (the batch's first row plus the position the message
//! gives). A read that does not fail costs nothing more.

use std::fs::File;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_ipc::reader::FileReader;
use arrow_schema::{ArrowError, SchemaRef};

/// The batches of an IPC file reader over `input` with the columns `projection` (`None`: all),
/// an error naming its column and row where a second read finds them.
pub struct Located<R> {
    reader: R,
    input: String,
    projection: Option<Vec<usize>>,
    batch: usize,
    rows: u64,
}

impl<R: RecordBatchReader> Located<R> {
    pub fn new(reader: R, input: &str, projection: Option<Vec<usize>>) -> Self {
        Located {
            reader,
            input: input.to_string(),
            projection,
            batch: 0,
            rows: 0,
        }
    }
}

impl<R: RecordBatchReader> Iterator for Located<R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.next()? {
            Ok(b) => {
                self.batch += 1;
                self.rows += b.num_rows() as u64;
                Some(Ok(b))
            }
            Err(e) => Some(Err(self.locate(e))),
        }
    }
}

impl<R: RecordBatchReader> RecordBatchReader for Located<R> {
    fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }
}

impl<R> Located<R> {
    /// `e` with the column that fails when the batch is read again column by column, and the
    /// row; `e` itself if none does.
    fn locate(&self, e: ArrowError) -> ArrowError {
        let Ok(file) = File::open(&self.input) else {
            return e;
        };
        let Ok(all) = FileReader::try_new_buffered(file, None) else {
            return e;
        };
        let schema = all.schema();
        let columns = match &self.projection {
            Some(p) => p.clone(),
            None => (0..schema.fields().len()).collect(),
        };
        for c in columns {
            let Ok(file) = File::open(&self.input) else {
                return e;
            };
            let Ok(mut one) = FileReader::try_new_buffered(file, Some(vec![c])) else {
                continue;
            };
            if one.set_index(self.batch).is_err() {
                continue;
            }
            if let Some(Err(err)) = one.next() {
                let row = self.rows + position(&err.to_string()).unwrap_or(0);
                return ArrowError::InvalidArgumentError(format!(
                    "column `{}`, record {row}: {err}",
                    schema.field(c).name()
                ));
            }
        }
        e
    }
}

/// The `N` of "position N" in an arrow error message: the value's index in its batch.
fn position(msg: &str) -> Option<u64> {
    let rest = &msg[msg.find("position ")? + "position ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::position;

    #[test]
    fn the_position_of_an_arrow_message() {
        let m =
            "Invalid argument error: Value at position 2 out of bounds: 5 (should be in [0, 1])";
        assert_eq!(position(m), Some(2));
        assert_eq!(position("no place"), None);
    }
}
