//! A string column written as an object array (`descr '|O'`, the pickle of a 1-D
//! `numpy.ndarray` of `str` and `None`), when the caller asks
//! ([`BatchWriterBuilder::strings_as_objects`](super::BatchWriterBuilder::strings_as_objects),
//! [`strings_as_objects_for`](super::BatchWriterBuilder::strings_as_objects_for)) or the
//! column's `numpy.descr` says it was one (an object array read by
//! [`NpyBatchReader`](super::NpyBatchReader)). `np.load(allow_pickle=True)` reads the file into
//! the same values in NumPy 1.x and 2.x ([`npy_serde::pickle::strings_to_vec`] writes it).
//!
//! Nulls are `None` (an object array holds them as they are: no null policy applies). The
//! pickle states the element count before the elements, so the strings are kept (one buffer
//! and their ends) until [`NpyBatchWriter::finish`](super::NpyBatchWriter::finish) writes the
//! file. Only a batch of that one column is written so: this writer writes no record array
//! with an object field, and refuses to, naming the column.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, Schema};

use super::schema::DESCR_KEY;
use npy_serde::error::{Error, Result};

/// Which columns the caller asked to write as object arrays.
#[derive(Clone, Debug, Default)]
pub(crate) struct ObjectChoice {
    /// Every string column (`Some(true)`), none (`Some(false)`: not even those whose metadata
    /// says they were objects), or as the metadata says (`None`).
    pub(crate) all: Option<bool>,
    /// These columns.
    pub(crate) columns: Vec<String>,
}

fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// Whether the field's `numpy.descr` is NumPy's object dtype.
fn was_object(f: &Field) -> bool {
    f.metadata().get(DESCR_KEY).is_some_and(|d| {
        let d = d
            .trim_matches('\'')
            .trim_start_matches(['|', '<', '>', '=']);
        d == "O" || d == "O8"
    })
}

/// The index of the column to write as an object array, if the batches are written so:
/// `kept` are the columns chosen (`columns`, `exclude`), `ignore_metadata` the builder's.
/// A column asked for that cannot be written so is an error naming it.
pub(crate) fn object_column(
    schema: &Schema,
    kept: &[usize],
    choice: &ObjectChoice,
    ignore_metadata: bool,
) -> Result<Option<usize>> {
    let all = choice.all == Some(true);
    let asked = |f: &Field| all || choice.columns.iter().any(|c| c == f.name());
    // A column read from an object array, unless the caller said otherwise.
    let tagged = |f: &Field| {
        choice.all.is_none() && !ignore_metadata && was_object(f) && is_string(f.data_type())
    };
    if let [i] = kept {
        let f = schema.field(*i);
        if is_string(f.data_type()) && (asked(f) || tagged(f)) {
            return Ok(Some(*i));
        }
        if choice.columns.iter().any(|c| c == f.name()) {
            return Err(Error::write(format!(
                "column {:?} is {}: only a string column (Utf8, LargeUtf8, Utf8View) is written \
                 as an object array",
                f.name(),
                f.data_type()
            )));
        }
        return Ok(None);
    }
    for &i in kept {
        let f = schema.field(i);
        let named = choice.columns.iter().any(|c| c == f.name());
        if named || tagged(f) || (all && is_string(f.data_type())) {
            return Err(Error::write(format!(
                "column {:?}: strings are written as an object array only for a batch of that \
                 one column (this writer writes no record array with an object field): write \
                 the column alone (BatchWriterBuilder::columns), or its strings as U<n> \
                 (strings_as_objects(false); npy convert --strings fixed)",
                f.name()
            )));
        }
    }
    Ok(None)
}

/// The strings of the column, kept until the file is written.
#[derive(Debug, Default)]
pub(crate) struct ObjectSink {
    text: String,
    /// Where each value ends in `text`.
    ends: Vec<usize>,
    nulls: Vec<bool>,
}

impl ObjectSink {
    /// Adds the values of `col` (a string column), nulls as `None`.
    pub(crate) fn push(&mut self, col: &ArrayRef) -> Result<()> {
        let n = col.len();
        self.ends.reserve(n);
        self.nulls.reserve(n);
        let mut add = |v: Option<&str>| {
            self.text.push_str(v.unwrap_or(""));
            self.ends.push(self.text.len());
            self.nulls.push(v.is_none());
        };
        match col.data_type() {
            DataType::Utf8 => col.as_string::<i32>().iter().for_each(&mut add),
            DataType::LargeUtf8 => col.as_string::<i64>().iter().for_each(&mut add),
            DataType::Utf8View => col.as_string_view().iter().for_each(&mut add),
            other => {
                return Err(Error::write(format!(
                    "a {other} column is not written as an object array"
                )))
            }
        }
        Ok(())
    }

    /// Rows kept.
    pub(crate) fn rows(&self) -> u64 {
        self.ends.len() as u64
    }

    /// The whole `.npy` file.
    pub(crate) fn file(&self) -> Vec<u8> {
        let values = (0..self.ends.len()).map(|i| {
            if self.nulls[i] {
                return None;
            }
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            Some(&self.text[start..self.ends[i]])
        });
        npy_serde::pickle::strings_to_vec(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::{Int32Array, StringArray};

    #[test]
    fn one_string_column_is_chosen_and_others_are_refused_by_name() {
        let s = Field::new("s", DataType::Utf8, true);
        let i = Field::new("i", DataType::Int32, false);
        let all = ObjectChoice {
            all: Some(true),
            columns: vec![],
        };
        let none = ObjectChoice::default();
        let one = Schema::new(vec![s.clone()]);
        assert_eq!(object_column(&one, &[0], &all, false).unwrap(), Some(0));
        assert_eq!(object_column(&one, &[0], &none, false).unwrap(), None);
        let meta = HashMap::from([(DESCR_KEY.to_string(), "'|O'".to_string())]);
        let tagged = Schema::new(vec![s.clone().with_metadata(meta)]);
        assert_eq!(object_column(&tagged, &[0], &none, false).unwrap(), Some(0));
        assert_eq!(object_column(&tagged, &[0], &none, true).unwrap(), None);
        let fixed = ObjectChoice {
            all: Some(false),
            columns: vec![],
        };
        assert_eq!(object_column(&tagged, &[0], &fixed, false).unwrap(), None);
        let i32s = Field::new("n", DataType::Int32, false);
        let rec = Schema::new(vec![i32s, tagged.field(0).clone()]);
        let e = object_column(&rec, &[0, 1], &none, false).unwrap_err();
        assert!(e.to_string().contains("--strings fixed"), "{e}");
        assert_eq!(object_column(&rec, &[0, 1], &fixed, false).unwrap(), None);
        let two = Schema::new(vec![i, s]);
        let e = object_column(&two, &[0, 1], &all, false).unwrap_err();
        assert!(e.to_string().contains("column \"s\""), "{e}");
        assert_eq!(object_column(&two, &[0], &all, false).unwrap(), None);
        let named = ObjectChoice {
            all: None,
            columns: vec!["i".into()],
        };
        let e = object_column(&two, &[0], &named, false).unwrap_err();
        assert!(e.to_string().contains("column \"i\" is Int32"), "{e}");
    }

    #[test]
    fn the_sink_writes_an_object_array_the_reader_reads_back() {
        let mut sink = ObjectSink::default();
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let b: ArrayRef = Arc::new(StringArray::from(vec![Some("優良")]));
        sink.push(&a).unwrap();
        sink.push(&b).unwrap();
        assert_eq!(sink.rows(), 3);
        let back: Vec<Option<String>> = npy_serde::ReaderBuilder::new()
            .allow_pickle_data(true)
            .from_slice_serde(&sink.file())
            .unwrap();
        assert_eq!(back, [Some("a".into()), None, Some("優良".into())]);
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        assert!(sink.push(&ints).is_err());
    }
}
