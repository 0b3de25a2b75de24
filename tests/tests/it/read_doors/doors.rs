//! The door tables and the drivers that run a check through every door.
//!
//! A door is one way to read a whole array into a `Vec<T>`: a row of [`serde_doors`] (any
//! `Deserialize` type) or of [`record_doors`] (`T: NpyRecord`, the exact tier where the layout
//! allows; each names its serde `twin`, whose outcome it must give exactly). Adding a door is
//! one row in one of the tables: every check of the suite then runs it.
//!
//! Two drivers run the tables:
//!
//! * [`vec_with`]/[`vec_all`]: every serde door (the free ones only with the default options),
//!   each reader door over a `Cursor` and [`Trickle`]s of [`SERDE_STEPS`]; the outcomes are
//!   checked by [`assert_all_eq`], [`assert_all_err`] or [`assert_all_err_at`] against values or
//!   an error computed independently (mostly by `deserialize_slice::<Vec<T>>`).
//! * [`compare_all`] (and [`same`], [`same_with`], [`same_ok`]): every record door next to its
//!   twin on the same input (values, or error kind, message and position), and against
//!   `from_slice_serde` when that succeeds.
//!
//! Streaming doors (`records`/`records_serde` of a reader or a map, collected) promise the
//! twins' contract among themselves, and the whole-array doors' values; an error of theirs is
//! checked by kind only (they report a short read where it happens, not the array's size).

use std::fmt::Debug;
use std::fs;
use std::io::Cursor;
use std::path::Path;

use npy_serde::{Error, MmapArray, NpyRecord, ReaderBuilder};
use npy_serde_tests::{TempDir, Trickle};
use serde::de::DeserializeOwned;

/// What every door returns.
pub type Got<T> = npy_serde::Result<Vec<T>>;

/// What a door reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The file's bytes.
    Slice,
    /// A `Cursor` over the bytes.
    Cursor,
    /// A [`Trickle`] over the bytes, `Input::step` bytes a read.
    Trickle,
    /// The file at `Input::path`.
    Path,
    /// A map of the file at `Input::path` (a door fails like `MmapArray::open` if it cannot be
    /// mapped).
    Map,
}

/// How a door takes its options and returns the elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `ReaderBuilder` method: the check's options.
    Opts,
    /// A free function (or `MmapArray::open`): the default options only.
    Free,
    /// An element-by-element iterator of the check's options, collected.
    Stream,
}

/// One input of a door.
pub struct Input<'a> {
    pub rb: &'a ReaderBuilder,
    pub file: &'a [u8],
    /// The same bytes as a file (for `Path` and `Map` doors).
    pub path: &'a Path,
    /// The bytes per read of a `Trickle` door.
    pub step: usize,
}

impl Input<'_> {
    fn cursor(&self) -> Cursor<&[u8]> {
        Cursor::new(self.file)
    }

    fn trickle(&self) -> Trickle<'_> {
        Trickle {
            data: self.file,
            step: self.step,
        }
    }

    fn map(&self) -> npy_serde::Result<MmapArray> {
        MmapArray::open_with(self.path, self.rb)
    }
}

/// Every element of `map` by its index, in order (random access, one call an element).
fn each_index<T>(map: &MmapArray, get: fn(&MmapArray, u64) -> npy_serde::Result<T>) -> Got<T> {
    (0..map.len()).map(|k| get(map, k)).collect()
}

/// A row of a door table.
pub struct Door<T> {
    pub name: &'static str,
    pub source: Source,
    pub kind: Kind,
    /// For a record door: the serde door whose outcome it must give; empty for serde doors.
    pub twin: &'static str,
    pub run: fn(&Input) -> Got<T>,
}

fn door<T>(
    name: &'static str,
    source: Source,
    kind: Kind,
    twin: &'static str,
    run: fn(&Input) -> Got<T>,
) -> Door<T> {
    Door {
        name,
        source,
        kind,
        twin,
        run,
    }
}

/// The doors for any `Deserialize` type.
#[rustfmt::skip]
pub fn serde_doors<T: DeserializeOwned + Send>() -> Vec<Door<T>> {
    use Kind::*;
    use Source::*;
    vec![
        door("from_slice_serde", Slice, Opts, "", |i| i.rb.from_slice_serde(i.file)),
        door("from_reader_serde(Cursor)", Cursor, Opts, "", |i| i.rb.from_reader_serde(i.cursor())),
        door("from_reader_serde(Trickle)", Trickle, Opts, "", |i| i.rb.from_reader_serde(i.trickle())),
        door("from_path_serde", Path, Opts, "", |i| i.rb.from_path_serde(i.path)),
        door("MmapArray::to_vec_serde", Map, Opts, "", |i| i.map()?.to_vec_serde()),
        door("records_serde(Cursor)", Cursor, Stream, "", |i| i.rb.records_serde(i.cursor())?.collect()),
        door("MmapArray::records_serde", Map, Stream, "", |i| i.map()?.records_serde()?.collect()),
        door("MmapArray::record_serde(i)", Map, Stream, "", |i| i.map().and_then(|m| each_index(&m, |m, k| m.record_serde(k)))),
        door("npy_serde::from_slice_serde", Slice, Free, "", |i| npy_serde::from_slice_serde(i.file)),
        door("npy_serde::from_reader_serde(Cursor)", Cursor, Free, "", |i| npy_serde::from_reader_serde(i.cursor())),
        door("npy_serde::from_path_serde", Path, Free, "", |i| npy_serde::from_path_serde(i.path)),
        door("MmapArray::open + to_vec_serde", Map, Free, "", |i| MmapArray::open(i.path)?.to_vec_serde()),
    ]
}

/// The doors for a type that derives `NpyRecord`, each with its serde twin (a free door's twin is
/// the `ReaderBuilder` door of its source: [`vec_all`] checks the free serde doors against those).
#[rustfmt::skip]
pub fn record_doors<T: DeserializeOwned + NpyRecord + Send>() -> Vec<Door<T>> {
    use Kind::*;
    use Source::*;
    vec![
        door("from_slice", Slice, Opts, "from_slice_serde", |i| i.rb.from_slice(i.file)),
        door("from_reader(Cursor)", Cursor, Opts, "from_reader_serde(Cursor)", |i| i.rb.from_reader(i.cursor())),
        door("from_reader(Trickle)", Trickle, Opts, "from_reader_serde(Trickle)", |i| i.rb.from_reader(i.trickle())),
        door("from_path", Path, Opts, "from_path_serde", |i| i.rb.from_path(i.path)),
        door("MmapArray::to_vec", Map, Opts, "MmapArray::to_vec_serde", |i| i.map()?.to_vec()),
        door("records(Cursor)", Cursor, Stream, "records_serde(Cursor)", |i| i.rb.records(i.cursor())?.collect()),
        door("MmapArray::records", Map, Stream, "MmapArray::records_serde", |i| i.map()?.records()?.collect()),
        door("MmapArray::record(i)", Map, Stream, "MmapArray::record_serde(i)", |i| i.map().and_then(|m| each_index(&m, |m, k| m.record(k)))),
        door("npy_serde::from_slice", Slice, Free, "from_slice_serde", |i| npy_serde::from_slice(i.file)),
        door("npy_serde::from_reader(Cursor)", Cursor, Free, "from_reader_serde(Cursor)", |i| npy_serde::from_reader(i.cursor())),
        door("npy_serde::from_path", Path, Free, "from_path_serde", |i| npy_serde::from_path(i.path)),
        door("MmapArray::open + to_vec", Map, Free, "MmapArray::to_vec_serde", |i| MmapArray::open(i.path)?.to_vec()),
    ]
}

/// Which doors a driver runs, and on what.
struct Plan<'a> {
    rb: &'a ReaderBuilder,
    /// `Kind::Free` doors too (`rb` must be the default).
    free: bool,
    /// `Kind::Stream` doors too.
    streams: bool,
    /// The `Trickle` doors, once per step.
    steps: &'a [usize],
    /// `Path` and `Map` doors on this file (holding the same bytes).
    path: Option<&'a Path>,
}

/// Runs `run` once per (door, step) of `doors` that `plan` selects, with the door and its input.
fn each_door<T, R>(
    doors: &[Door<T>],
    plan: &Plan,
    file: &[u8],
    mut run: impl FnMut(&Door<T>, &Input, String) -> R,
) -> Vec<R> {
    let mut out = Vec::new();
    for d in doors {
        if (d.kind == Kind::Free && !plan.free) || (d.kind == Kind::Stream && !plan.streams) {
            continue;
        }
        let path = match (d.source, plan.path) {
            (Source::Path | Source::Map, None) => continue,
            (_, path) => path.unwrap_or(Path::new("")),
        };
        let steps: &[usize] = if d.source == Source::Trickle {
            plan.steps
        } else {
            &[0]
        };
        for &step in steps {
            let input = Input {
                rb: plan.rb,
                file,
                path,
                step,
            };
            let how = if d.source == Source::Trickle {
                d.name.replace(')', &format!(" {step})"))
            } else {
                d.name.to_string()
            };
            out.push(run(d, &input, how));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Serde doors against an expected outcome
// ---------------------------------------------------------------------------------------------

/// The `Trickle` steps of [`vec_with`]: one byte at a time, odd sizes, more than a page.
pub const SERDE_STEPS: &[usize] = &[1, 7, 33, 99, 4097];

/// The largest file [`vec_with`] reads through the streaming doors too: element by element they
/// cost as much as all the other doors together on the suite's largest arrays (in debug builds),
/// and `tests/streaming.rs` reads large arrays through them already.
pub const STREAM_BUDGET: usize = 1 << 16;

/// One door's outcome.
pub struct Outcome<T> {
    pub how: String,
    pub stream: bool,
    pub got: Got<T>,
}

/// Every serde door of `rb` (not the free ones) on `file`, also written to `path`.
pub fn vec_with<T: DeserializeOwned + Send>(
    rb: &ReaderBuilder,
    file: &[u8],
    path: &Path,
) -> Vec<Outcome<T>> {
    vec_plan(rb, false, file, path)
}

/// [`vec_with`] the default options, plus the free doors.
pub fn vec_all<T: DeserializeOwned + Send>(file: &[u8], path: &Path) -> Vec<Outcome<T>> {
    vec_plan(&ReaderBuilder::new(), true, file, path)
}

fn vec_plan<T: DeserializeOwned + Send>(
    rb: &ReaderBuilder,
    free: bool,
    file: &[u8],
    path: &Path,
) -> Vec<Outcome<T>> {
    fs::write(path, file).unwrap();
    let plan = Plan {
        rb,
        free,
        streams: file.len() <= STREAM_BUDGET,
        steps: SERDE_STEPS,
        path: Some(path),
    };
    each_door(&serde_doors::<T>(), &plan, file, |d, input, how| Outcome {
        how,
        stream: d.kind == Kind::Stream,
        got: (d.run)(input),
    })
}

/// Prefixes each outcome's name with `what`.
pub fn named<T>(what: &str, results: Vec<Outcome<T>>) -> Vec<Outcome<T>> {
    results
        .into_iter()
        .map(|o| Outcome {
            how: format!("{what}: {}", o.how),
            ..o
        })
        .collect()
}

/// Checks that two errors are the same: kind code, position (record, field path, byte) and
/// message.
pub fn assert_same_error(got: &Error, want: &Error, what: &str) {
    assert_eq!(
        got.kind().code(),
        want.kind().code(),
        "{what}: kind differs\n got: {got}\nwant: {want}"
    );
    assert_eq!(
        got.position(),
        want.position(),
        "{what}: position differs\n got: {got}\nwant: {want}"
    );
    assert_eq!(got.to_string(), want.to_string(), "{what}: message differs");
}

/// Every door gives `want`.
pub fn assert_all_eq<T: PartialEq + Debug>(results: Vec<Outcome<T>>, want: &[T]) {
    for Outcome { how, got, .. } in results {
        match got {
            Ok(got) => {
                assert_eq!(got.len(), want.len(), "{how}: length");
                if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
                    panic!("{how}: element {i}: got {:?}, want {:?}", got[i], want[i]);
                }
            }
            Err(e) => panic!("{how}: {e}"),
        }
    }
}

/// Every door fails with `want` (a streaming door with its kind).
pub fn assert_all_err<T: Debug>(results: Vec<Outcome<T>>, want: &Error) {
    for Outcome { how, stream, got } in results {
        match got {
            Ok(v) => panic!(
                "{how}: want the error {want}, got Ok ({} elements)",
                v.len()
            ),
            Err(e) if stream => {
                assert_eq!(e.kind().code(), want.kind().code(), "{how}: {e} vs {want}")
            }
            Err(e) => assert_same_error(&e, want, &how),
        }
    }
}

/// Every door fails with `want`'s error (kind, message, field path and byte offset), at record
/// `record` (a streaming door with its kind, message and record).
pub fn assert_all_err_at<T: Debug>(results: Vec<Outcome<T>>, want: &Error, record: u64) {
    for Outcome { how, stream, got } in results {
        match got {
            Ok(v) => panic!(
                "{how}: want the error {want}, got Ok ({} elements)",
                v.len()
            ),
            Err(e) => {
                assert_eq!(e.kind().code(), want.kind().code(), "{how}: {e} vs {want}");
                assert_eq!(e.kind().to_string(), want.kind().to_string(), "{how}");
                assert_eq!(e.position().record, Some(record), "{how}: {e}");
                if !stream {
                    assert_eq!(e.position().field, want.position().field, "{how}: {e}");
                    assert_eq!(e.position().byte, want.position().byte, "{how}: {e}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Record doors next to their serde twins
// ---------------------------------------------------------------------------------------------

/// How the values `got` differ from `want`, if they do: element by element, the first 64 by
/// their `Debug` text (so that NaNs match and `-0.0` differs from `0.0`), the others (for speed
/// in debug builds) by `PartialEq`, then by `Debug`.
pub fn values_differ<T: PartialEq + Debug>(got: &[T], want: &[T]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} elements, want {}", got.len(), want.len()));
    }
    let dbg = |a: &T, b: &T| format!("{a:?}") == format!("{b:?}");
    let i = (0..want.len()).find(|&i| {
        let same = if i < 64 {
            dbg(&got[i], &want[i])
        } else {
            got[i] == want[i] || dbg(&got[i], &want[i])
        };
        !same
    })?;
    Some(format!("element {i}: got {:?}, want {:?}", got[i], want[i]))
}

/// How `got` differs from `want`, if it does: values as [`values_differ`], errors by kind code,
/// message and position.
pub fn differs<T: PartialEq + Debug>(got: &Got<T>, want: &Got<T>) -> Option<String> {
    match (got, want) {
        (Ok(g), Ok(w)) => values_differ(g, w),
        (Err(g), Err(w)) => {
            let (gt, wt) = (
                format!("[{}] {} / {:?}", g.kind().code(), g, g.position()),
                format!("[{}] {} / {:?}", w.kind().code(), w, w.position()),
            );
            (gt != wt).then(|| format!("error\n  got: {gt}\n want: {wt}"))
        }
        (Ok(g), Err(w)) => Some(format!(
            "Ok ({} elements), want the error [{}] {w}",
            g.len(),
            w.kind().code()
        )),
        (Err(g), Ok(w)) => Some(format!(
            "error [{}] {g}, want Ok ({} elements)",
            g.kind().code(),
            w.len()
        )),
    }
}

/// Which record doors [`compare_all`] runs, besides those of `Source::Slice` and
/// `Source::Cursor` of `rb`.
pub struct Entries<'a> {
    pub rb: &'a ReaderBuilder,
    /// The free doors too (`rb` must be the default).
    pub free: bool,
    /// The streaming doors too.
    pub streams: bool,
    /// The `Trickle` doors over each of these steps.
    pub steps: &'a [usize],
    /// The `Path` and `Map` doors on this file (holding the same bytes).
    pub path: Option<&'a Path>,
}

/// Every record door `e` selects on `file`, each next to its serde twin on the same input.
///
/// Panics unless every record door's outcome is its twin's (values, or error kind, message and
/// position), and, when `from_slice_serde` succeeds, unless every outcome is its values (a map
/// door's only if the file can be mapped). Returns `from_slice_serde`'s outcome, for the caller
/// to check against the expected values or error.
pub fn compare_all<T>(e: &Entries, file: &[u8]) -> Got<T>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    // The twins' outcomes, each computed once (`from_slice_serde`'s is the values to check).
    let mut twin_out: Vec<((&str, usize), Got<T>)> =
        vec![(("from_slice_serde", 0), e.rb.from_slice_serde(file))];
    let mapped = e
        .path
        .is_some_and(|p| MmapArray::open_with(p, e.rb).is_ok());
    let twins = serde_doors::<T>();
    let plan = Plan {
        rb: e.rb,
        free: e.free,
        streams: e.streams,
        steps: e.steps,
        path: e.path,
    };
    let failures = each_door(&record_doors::<T>(), &plan, file, |d, input, how| {
        let key = (d.twin, input.step);
        let k = twin_out
            .iter()
            .position(|(k, _)| *k == key)
            .unwrap_or_else(|| {
                let twin = twins
                    .iter()
                    .find(|t| t.name == d.twin)
                    .unwrap_or_else(|| panic!("{}: no door {}", d.name, d.twin));
                twin_out.push((key, (twin.run)(input)));
                twin_out.len() - 1
            });
        let records = (d.run)(input);
        let (vec, want) = (&twin_out[k].1, &twin_out[0].1);
        let mut failures = Vec::new();
        if let Some(diff) = differs(&records, vec) {
            failures.push(format!("{how}: vs {}: {diff}", d.twin));
        }
        if want.is_ok() && (d.source != Source::Map || mapped) {
            if let Some(diff) = differs(&records, want) {
                failures.push(format!("{how}: vs from_slice_serde: {diff}"));
            }
        }
        failures
    })
    .concat();
    assert!(
        failures.is_empty(),
        "{} failures ({}):\n{}",
        failures.len(),
        std::any::type_name::<T>(),
        failures.join("\n")
    );
    twin_out.swap_remove(0).1
}

/// Trickle steps for a whole file: one byte at a time and odd sizes for small files, a few
/// pages for large ones (where runs of whole elements still end at odd places).
pub fn steps_for(file: &[u8]) -> &'static [usize] {
    if file.len() <= 1 << 14 {
        &[1, 33]
    } else {
        &[7, 4097]
    }
}

/// [`compare_all`] with every door of the default options, `file` written to `dir`.
pub fn same<T>(dir: &TempDir, file: &[u8]) -> Got<T>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    same_plan(&ReaderBuilder::new(), true, true, dir, file)
}

/// [`compare_all`] with every door of `rb` (not the free ones).
pub fn same_with<T>(rb: &ReaderBuilder, dir: &TempDir, file: &[u8]) -> Got<T>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    same_plan(rb, false, true, dir, file)
}

fn same_plan<T>(rb: &ReaderBuilder, free: bool, streams: bool, dir: &TempDir, file: &[u8]) -> Got<T>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let path = dir.join("records.npy");
    fs::write(&path, file).unwrap();
    let e = Entries {
        rb,
        free,
        streams,
        steps: steps_for(file),
        path: Some(&path),
    };
    compare_all(&e, file)
}

/// [`same`], and the values must be `want`.
pub fn same_ok<T>(dir: &TempDir, file: &[u8], want: &[T])
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let got = same::<T>(dir, file).unwrap_or_else(|e| panic!("from_slice_serde: {e}"));
    if let Some(d) = values_differ(&got, want) {
        panic!("{}: {d}", std::any::type_name::<T>());
    }
}

/// [`same_ok`] without the streaming doors, for the inputs where `RecordReader` is known to differ
/// from every other door (see `names::early_stopping_visitors_are_read_by_name`).
pub fn same_ok_whole<T>(dir: &TempDir, file: &[u8], want: &[T])
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let got = same_plan::<T>(&ReaderBuilder::new(), true, false, dir, file)
        .unwrap_or_else(|e| panic!("from_slice_serde: {e}"));
    if let Some(d) = values_differ(&got, want) {
        panic!("{}: {d}", std::any::type_name::<T>());
    }
}

/// `from_slice::<T>` on `file`: the values and how many elements the exact tier decoded
/// (counted by the library's `tier-hook`).
pub fn exact_count<T>(file: &[u8]) -> (Vec<T>, usize)
where
    T: DeserializeOwned + NpyRecord + Send,
{
    npy_serde::tier::take();
    let got: Vec<T> = npy_serde::from_slice(file).unwrap();
    (got, npy_serde::tier::take().exact as usize)
}
