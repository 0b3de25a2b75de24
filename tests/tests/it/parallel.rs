//! Parallel decoding (`npy-serde/src/read/parallel.rs`) gives exactly the sequential results:
//! the same values on every fixture and on generated arrays, and the same first error (lowest
//! index) when several chunks miss. A threshold of 0 bytes makes even small arrays go
//! parallel, split into many chunks.

use std::fmt::Debug;

use npy_serde::{MmapArray, NpyRecord, ReaderBuilder};
use npy_serde_tests::{entries, entry_path, TempDir, W2};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

fn parallel() -> ReaderBuilder {
    ReaderBuilder::new().parallel_threshold(0)
}

fn sequential() -> ReaderBuilder {
    ReaderBuilder::new().parallel(false)
}

/// `from_slice`, `from_path`, `MmapArray::to_vec`, `from_slice_serde` and
/// `from_path_serde` in parallel against the sequential `from_slice` and
/// `from_slice_serde`: values, or error kind, message and position.
fn same<T>(file: &[u8], dir: &TempDir) -> Option<Vec<T>>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let path = dir.join("same.npy");
    std::fs::write(&path, file).unwrap();
    let want = sequential().from_slice::<T>(file);
    let got = [
        parallel().from_slice::<T>(file),
        parallel().from_path::<_, T>(&path),
        MmapArray::open_with(&path, &parallel()).and_then(|m| m.to_vec::<T>()),
        // The runtime-planned tier in parallel (any `Deserialize`), and in sequence.
        parallel().from_slice_serde::<T>(file),
        parallel().from_path_serde::<_, T>(&path),
        MmapArray::open_with(&path, &parallel()).and_then(|m| m.to_vec_serde::<T>()),
        sequential().from_slice_serde::<T>(file),
    ];
    for g in got {
        match (&want, g) {
            // By Debug text: NaN values compare unequal.
            (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string());
                assert_eq!(a.position(), b.position());
            }
            (a, b) => panic!("sequential {a:?}, parallel {b:?}"),
        }
    }
    want.ok()
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Flagged {
    id: i64,
    ok: bool,
    x: f32,
}

#[test]
fn every_fixture() {
    let dir = TempDir::new("parallel-fixtures");
    let mut decoded = 0;
    for entry in entries("npy") {
        let file = std::fs::read(entry_path(entry)).unwrap();
        decoded += same::<f64>(&file, &dir).is_some() as usize;
        decoded += same::<W2>(&file, &dir).is_some() as usize;
        decoded += same::<i64>(&file, &dir).is_some() as usize;
        decoded += same::<bool>(&file, &dir).is_some() as usize;
    }
    assert!(decoded > 20, "only {decoded} fixtures decoded");
}

#[test]
fn big_arrays_and_misses_in_several_chunks() {
    let dir = TempDir::new("parallel-big");
    // Above the default threshold: the default reader goes parallel too.
    let n = 600_000;
    let rows: Vec<W2> = (0..n)
        .map(|i| W2 {
            id: i as i64,
            x: i as f64 / 3.0,
            y: -(i as f32),
            flag: (i % 255) as u8,
            v: [i as f32, 2.0, 3.0],
        })
        .collect();
    let file = npy_serde::to_vec(&rows).unwrap();
    assert!(file.len() as u64 > 16 << 20);
    let path = dir.join("w2.npy");
    std::fs::write(&path, &file).unwrap();
    assert_eq!(npy_serde::from_path::<_, W2>(&path).unwrap(), rows);
    assert_eq!(same::<W2>(&file, &dir).unwrap(), rows);

    // Bad bools in three chunks: every reader names the first.
    let flags: Vec<Flagged> = (0..200_000)
        .map(|i| Flagged {
            id: i,
            ok: i % 2 == 0,
            x: i as f32,
        })
        .collect();
    let mut bad = npy_serde::to_vec(&flags).unwrap();
    let data = bad.len() - 13 * flags.len();
    for k in [150_000usize, 70_001, 199_999] {
        bad[data + 13 * k + 8] = 5;
    }
    assert!(same::<Flagged>(&bad, &dir).is_none());
    let err = parallel().from_slice::<Flagged>(&bad).unwrap_err();
    assert_eq!(err.position().record, Some(70_001));
}

/// Plain data from a file goes through positional reads straight into the result, chunk by
/// chunk on all cores: the same values, and a bad bool byte in any chunk gives the sequential
/// error.
#[test]
fn plain_data_read_in_parallel_from_a_file() {
    let dir = TempDir::new("parallel-plain");
    let path = dir.join("f8.npy");
    let values: Vec<f64> = (0..2_500_003).map(|i| i as f64 * 0.5 - 7.0).collect(); // ~20 MB
    npy_serde::to_path(&path, &values).unwrap();
    assert_eq!(npy_serde::from_path::<_, f64>(&path).unwrap(), values);
    assert_eq!(parallel().from_path::<_, f64>(&path).unwrap(), values);
    let bools: Vec<bool> = (0..9_000_001).map(|i| i % 7 == 0).collect(); // 3 chunks of 4 MiB
    let mut file = npy_serde::to_vec(&bools).unwrap();
    let data = file.len() - bools.len();
    let path = dir.join("b1.npy");
    std::fs::write(&path, &file).unwrap();
    assert_eq!(parallel().from_path::<_, bool>(&path).unwrap(), bools);
    for k in [8_999_999usize, 4_500_000] {
        file[data + k] = 2;
    }
    std::fs::write(&path, &file).unwrap();
    let want = sequential().from_slice::<bool>(&file).unwrap_err();
    let got = parallel().from_path::<_, bool>(&path).unwrap_err();
    assert_eq!(got.to_string(), want.to_string());
    assert_eq!(got.position().record, Some(4_500_000));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn generated_arrays(
        ids in proptest::collection::vec(any::<i64>(), 0..3000),
        bad in proptest::option::of(0usize..3000),
    ) {
        let dir = TempDir::new("parallel-prop");
        let rows: Vec<Flagged> = ids
            .iter()
            .map(|&id| Flagged { id, ok: id % 3 == 0, x: id as f32 })
            .collect();
        let mut file = npy_serde::to_vec(&rows).unwrap();
        if let Some(k) = bad.filter(|&k| k < rows.len()) {
            let data = file.len() - 13 * rows.len();
            file[data + 13 * k + 8] = 2;
        }
        same::<Flagged>(&file, &dir);
    }
}

/// One field, serialized as itself, or as an integer (which the exact tier misses and the
/// general serializer converts) or as a string (an error), by value.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Odd {
    x: f64,
}

impl NpyRecord for Odd {
    fn dtype() -> npy_serde::DType {
        npy_serde::DType::Record(npy_serde::Record::packed([("x", f64::dtype())]).unwrap())
    }
    const LAYOUT: npy_serde::record::__private::Layout =
        npy_serde::record::__private::Layout::record(&[&f64::LAYOUT], false);
}

impl Serialize for Odd {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Odd", 1)?;
        if self.x == -1.0 {
            st.serialize_field("x", "not a number")?;
        } else if self.x.fract() == 0.0 && self.x > 1e6 {
            st.serialize_field("x", &(self.x as i64))?;
        } else {
            st.serialize_field("x", &self.x)?;
        }
        st.end()
    }
}

#[test]
fn pipelined_writes_are_the_sequential_bytes_and_errors() {
    let n = 3_000_000; // 24 MB: above the 16 MiB threshold
    let mut rows: Vec<Odd> = (0..n).map(|i| Odd { x: i as f64 + 0.5 }).collect();
    let seq = npy_serde::WriterBuilder::new().parallel(false);
    let par = npy_serde::WriterBuilder::new();
    assert_eq!(par.to_vec(&rows).unwrap(), seq.to_vec(&rows).unwrap());
    let dir = TempDir::new("parallel-write");
    par.to_path(dir.join("a.npy"), &rows).unwrap();
    seq.to_path(dir.join("b.npy"), &rows).unwrap();
    assert_eq!(
        std::fs::read(dir.join("a.npy")).unwrap(),
        std::fs::read(dir.join("b.npy")).unwrap()
    );
    // A miss mid-array (an integer the general serializer converts): the same bytes.
    rows[2_100_000].x = 2_100_000.0 + 1e7;
    assert_eq!(par.to_vec(&rows).unwrap(), seq.to_vec(&rows).unwrap());
    // An error after the miss: the same error, at the same record.
    rows[2_500_000].x = -1.0;
    let a = par.to_vec(&rows).unwrap_err();
    let b = seq.to_vec(&rows).unwrap_err();
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(a.position().record, Some(2_500_000));
}
