//! The exact tier on the streaming paths: `RecordReader::new`,
//! `MmapArray::records` and `NpyWriter::write`/`write_all` give the elements,
//! errors and bytes of `RecordReader::new_serde`, `MmapArray::records_serde` and `NpyWriter::write`, with
//! the tier counted by the library's `tier-hook`; and internal iteration (`fold`) on every
//! tier gives what `next` gives.

use std::io::{Cursor, Read};

use npy_serde::{tier, MmapArray, NpyRecord, NpyWriter, RecordReader, Result};
use npy_serde_tests::{TempDir, Trickle, W2};
use serde::{Deserialize, Serialize};

fn w2(n: usize) -> Vec<W2> {
    (0..n)
        .map(|i| W2 {
            id: i as i64 * 7,
            x: i as f64 * 0.5,
            y: i as f32 - 3.0,
            flag: (i % 200) as u8,
            v: [i as f32, 1.0, -1.0],
        })
        .collect()
}

/// W2 with a bool: a byte other than 0/1 makes the exact tier miss there.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Flagged {
    id: i64,
    ok: bool,
}

fn errors_of<T>(it: impl Iterator<Item = Result<T>>) -> Vec<std::result::Result<T, String>> {
    it.map(|r| r.map_err(|e| format!("{} {:?} {}", e.kind().code(), e.position(), e)))
        .collect()
}

#[test]
fn record_reader_new_equals_new_serde() {
    let rows = w2(10_000);
    let file = npy_serde::to_vec(&rows).unwrap();
    tier::take();
    let got: Vec<W2> = RecordReader::new(Cursor::new(&file))
        .unwrap()
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take().exact, 10_000);
    for step in [1, 33, 1000, 4097] {
        let got: Vec<W2> = RecordReader::new(Trickle { data: &file, step })
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(got, rows, "Trickle {step}");
    }

    // A miss mid-array: the same values and the same error at the same place.
    let flags: Vec<Flagged> = (0..5000)
        .map(|i| Flagged {
            id: i,
            ok: i % 3 == 0,
        })
        .collect();
    let mut bad = npy_serde::to_vec(&flags).unwrap();
    let at = bad.len() - 9 * (5000 - 2345) + 8;
    bad[at] = 9;
    let a = errors_of(RecordReader::<_, Flagged>::new_serde(Cursor::new(&bad)).unwrap());
    let b = errors_of(RecordReader::<_, Flagged>::new(Cursor::new(&bad)).unwrap());
    assert_eq!(a, b);
    assert!(a[2345].is_err() && a[2344].is_ok() && a[2346].is_ok());

    // Truncated: the same elements, then the same error.
    let short = &file[..file.len() - 50];
    let a = errors_of(RecordReader::<_, W2>::new_serde(Cursor::new(short)).unwrap());
    let b = errors_of(RecordReader::<_, W2>::new(Cursor::new(short)).unwrap());
    assert_eq!(a, b);
    assert!(a.last().unwrap().is_err());
}

#[test]
fn record_reader_seeks_and_continues_after_the_batch() {
    let rows = w2(9000);
    let file = npy_serde::to_vec(&rows).unwrap();
    let mut r = RecordReader::<_, W2>::new(Cursor::new(&file)).unwrap();
    assert_eq!(r.next().unwrap().unwrap(), rows[0]);
    assert_eq!(r.position(), 1);
    r.seek_to_record(8000).unwrap();
    assert_eq!(r.next().unwrap().unwrap(), rows[8000]);
    r.seek_to_record(5).unwrap();
    let rest: Vec<W2> = r.by_ref().take(10).collect::<Result<_>>().unwrap();
    assert_eq!(rest, rows[5..15]);
    // A seeded element after a batch was decoded ahead: the next one, not one further.
    let v: W2 = r.next_seed(std::marker::PhantomData).unwrap().unwrap();
    assert_eq!(v, rows[15]);
    assert_eq!(r.remaining(), 9000 - 16);

    // Two arrays back to back: into_inner leaves the reader after the first.
    let mut two = file.clone();
    two.extend(npy_serde::to_vec(&[1.5f64, 2.5]).unwrap());
    let mut r = RecordReader::<_, W2>::new(Cursor::new(two)).unwrap();
    r.next().unwrap().unwrap();
    let mut inner = r.into_inner().unwrap();
    let mut rest = Vec::new();
    inner.read_to_end(&mut rest).unwrap();
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<f64>>(&rest).unwrap(),
        [1.5, 2.5]
    );
}

#[test]
fn mmap_records_equals_records_serde() {
    let dir = TempDir::new("streaming");
    let rows = w2(10_000);
    let path = dir.join("w2.npy");
    npy_serde::to_path(&path, &rows).unwrap();
    let map = MmapArray::open(&path).unwrap();
    tier::take();
    let got: Vec<W2> = map.records().unwrap().collect::<Result<_>>().unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take().exact, 10_000);

    let flags: Vec<Flagged> = (0..300).map(|i| Flagged { id: i, ok: true }).collect();
    let mut bad = npy_serde::to_vec(&flags).unwrap();
    let n = bad.len();
    bad[n - 9 * 100 + 8] = 2;
    let p = dir.join("bad.npy");
    std::fs::write(&p, bad).unwrap();
    let map = MmapArray::open(&p).unwrap();
    let a = errors_of(map.records_serde::<Flagged>().unwrap());
    let b = errors_of(map.records::<Flagged>().unwrap());
    assert_eq!(a, b);
    assert!(a[200].is_err());
}

#[test]
fn npy_writer_write_record_is_write() {
    let rows = w2(5000);
    let mut general = NpyWriter::with_len::<W2>(Vec::new(), 5000).unwrap();
    for r in &rows {
        general.write_serde(r).unwrap();
    }
    let general = general.finish().unwrap();
    tier::take();
    let mut exact = NpyWriter::with_len::<W2>(Vec::new(), 5000).unwrap();
    for r in &rows {
        exact.write(r).unwrap();
    }
    assert_eq!(exact.finish().unwrap(), general);
    assert_eq!(tier::take().exact, 5000);

    let mut w = NpyWriter::new::<W2>(Cursor::new(Vec::new())).unwrap();
    w.write_all(&rows[..100]).unwrap();
    w.write(&rows[100]).unwrap();
    w.write_all(&rows[101..]).unwrap();
    assert_eq!(w.finish().unwrap().into_inner(), general);

    // Plain data without padding goes out as its bytes.
    let xs: Vec<f64> = (0..1000).map(|i| i as f64).collect();
    let mut w = NpyWriter::with_len::<f64>(Vec::new(), 1000).unwrap();
    w.write(&-1.0f64).unwrap();
    w.write_all(&xs[1..]).unwrap();
    let mut want = xs.clone();
    want[0] = -1.0;
    assert_eq!(w.finish().unwrap(), npy_serde::to_vec(&want).unwrap());

    // Errors are those of write: too many records.
    let mut w = NpyWriter::with_len::<W2>(Vec::new(), 1).unwrap();
    w.write(&rows[0]).unwrap();
    let e1 = w.write(&rows[1]).unwrap_err();
    let mut w = NpyWriter::with_len::<W2>(Vec::new(), 1).unwrap();
    w.write_serde(&rows[0]).unwrap();
    let e2 = w.write_serde(&rows[1]).unwrap_err();
    assert_eq!(e1.to_string(), e2.to_string());
}

/// The elements and errors of an iterator, taken one `next` at a time (external iteration).
fn by_next<T>(it: impl Iterator<Item = Result<T>>) -> Vec<std::result::Result<T, String>> {
    let mut out = Vec::new();
    // A `for` loop calls `next`, never `fold`.
    for r in it {
        out.push(r.map_err(|e| format!("{} {:?} {}", e.kind().code(), e.position(), e)));
    }
    out
}

/// The same through `fold` (internal iteration: `for_each`, `sum`, `collect` into a `Vec`).
fn by_fold<T>(it: impl Iterator<Item = Result<T>>) -> Vec<std::result::Result<T, String>> {
    it.fold(Vec::new(), |mut out, r| {
        out.push(r.map_err(|e| format!("{} {:?} {}", e.kind().code(), e.position(), e)));
        out
    })
}

/// Iterators made by `open` give `want` by `next`, by `fold`, and by `next` for the first
/// `head` elements then `fold` for the rest.
fn same_every_way<T: PartialEq + std::fmt::Debug, I: Iterator<Item = Result<T>>>(
    want: &[std::result::Result<T, String>],
    head: usize,
    open: impl Fn() -> I,
    what: &str,
) {
    assert_eq!(by_next(open()), want, "{what}: next");
    assert_eq!(by_fold(open()), want, "{what}: fold");
    let mut it = open();
    let mut got = by_next(it.by_ref().take(head));
    got.extend(by_fold(it));
    assert_eq!(got, want, "{what}: next then fold");
}

/// `fold` on the exact tier gives what `next` gives on every tier: values, errors and their
/// places, with misses mid-array, the other byte order, truncation, short reads, a struct
/// whose field names are not the file's, and after elements already taken by `next`.
#[test]
fn fold_equals_next_on_every_path() {
    let dir = TempDir::new("streaming-fold");
    let rows = w2(20_000);
    let le = npy_serde::to_vec(&rows).unwrap();
    let be = npy_serde::WriterBuilder::new()
        .byte_order(npy_serde::ByteOrder::Big)
        .to_vec(&rows)
        .unwrap();
    let flags: Vec<Flagged> = (0..7000)
        .map(|i| Flagged {
            id: i,
            ok: i % 2 == 0,
        })
        .collect();
    let mut bad = npy_serde::to_vec(&flags).unwrap();
    let n = bad.len();
    bad[n - 9 * (7000 - 4321) + 8] = 7; // element 4321: bool byte 7
    bad[n - 9 * (7000 - 6000) + 8] = 3; // element 6000
    let short = le[..le.len() - 40].to_vec();

    // Same layout, other names (read by the alias): the tier exists but its field list never
    // verifies.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Renamed {
        id: i64,
        #[serde(alias = "x")]
        xx: f64,
        y: f32,
        flag: u8,
        v: [f32; 3],
    }

    fn check<T: serde::de::DeserializeOwned + NpyRecord + PartialEq + std::fmt::Debug>(
        dir: &TempDir,
        name: &str,
        file: &[u8],
    ) {
        let general = by_next(RecordReader::<_, T>::new_serde(Cursor::new(file)).unwrap());
        for step in [7, 4096, usize::MAX] {
            let open = || RecordReader::<_, T>::new(Trickle { data: file, step }).unwrap();
            same_every_way(&general, 1001, open, &format!("{name}, Trickle {step}"));
        }
        let path = dir.join(format!("{name}.npy"));
        std::fs::write(&path, file).unwrap();
        if let Ok(map) = MmapArray::open(&path) {
            let general = by_next(map.records_serde::<T>().unwrap());
            let open = || map.records::<T>().unwrap();
            same_every_way(&general, 999, open, &format!("{name}, mmap"));
        }
    }
    check::<W2>(&dir, "le", &le);
    check::<W2>(&dir, "be", &be);
    check::<W2>(&dir, "short", &short);
    check::<Renamed>(&dir, "renamed", &le);
    tier::take();
    let renamed: Vec<Renamed> = RecordReader::new(Cursor::new(&le))
        .unwrap()
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(renamed[3].xx, rows[3].x);
    assert_eq!(tier::take().exact, 0);
    check::<Flagged>(&dir, "bad", &bad);

    // The tier served the elements of a clean file, by fold as by next.
    tier::take();
    let sum: f64 = RecordReader::<_, W2>::new(Cursor::new(&le))
        .unwrap()
        .map(|r| r.unwrap().x)
        .sum();
    assert_eq!(sum, rows.iter().map(|r| r.x).sum::<f64>());
    assert_eq!(tier::take().exact, 20_000);
}

/// Writers made from a path write their blocks on a second thread: the bytes are those of
/// `to_vec`, whatever the block size (many blocks rotate through the pipe), with records
/// written one by one, by slices, by the general serializer, mixed, appended, and after a
/// record that failed to serialize.
#[test]
fn path_writers_write_the_same_bytes() {
    let dir = TempDir::new("streaming-pipe");
    let rows = w2(50_000);
    let want = npy_serde::to_vec(&rows).unwrap();
    for (block, parallel) in [(1 << 20, true), (33 * 7, true), (100, true), (4096, false)] {
        let b = npy_serde::WriterBuilder::new()
            .record::<W2>()
            .buffer_size(block)
            .parallel(parallel);
        let path = dir.join(format!("w2-{block}-{parallel}.npy"));
        let mut w = b.create_path(&path).unwrap();
        for (i, r) in rows.iter().enumerate() {
            match i % 3 {
                0 => w.write(r).unwrap(),
                1 => w.write_serde(r).unwrap(),
                _ => w.write_all(std::slice::from_ref(r)).unwrap(),
            }
        }
        w.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want, "block {block}");

        // Appending: the first half, then the rest through append_path.
        let mut w = b.create_path(&path).unwrap();
        w.write_all(&rows[..20_000]).unwrap();
        w.finish().unwrap();
        let mut w = b.append_path(&path).unwrap();
        assert_eq!(w.len(), 20_000);
        for r in &rows[20_000..] {
            w.write(r).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want, "append, block {block}");
    }

    // A record that fails to serialize is not written and the writer goes on.
    #[derive(Serialize, Deserialize, NpyRecord)]
    struct Text {
        #[npy(bytes = 4)]
        s: String,
    }
    let path = dir.join("text.npy");
    let mut w = NpyWriter::create::<Text>(&path).unwrap();
    w.write(&Text { s: "abcd".into() }).unwrap();
    assert!(w
        .write(&Text {
            s: "too long".into()
        })
        .is_err());
    w.write(&Text { s: "ef".into() }).unwrap();
    w.finish().unwrap();
    let back: Vec<Text> = npy_serde::from_path(&path).unwrap();
    let back: Vec<&str> = back.iter().map(|t| t.s.as_str()).collect();
    assert_eq!(back, ["abcd", "ef"]);

    // Dropped without finish: the file was written under a temporary name, which is removed;
    // no file appears under the target's name.
    let path = dir.join("dropped.npy");
    let mut w = npy_serde::WriterBuilder::new()
        .record::<W2>()
        .buffer_size(4096)
        .create_path(&path)
        .unwrap();
    w.write_all(&rows[..1000]).unwrap();
    drop(w);
    assert!(!path.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".npy-tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// npz members on the exact tier: `records` and `read` give what `records` and
/// `read` give, stored or deflated, with a miss mid-array, and by `fold` as by `next`.
#[test]
fn npz_members_on_the_exact_tier() {
    use npy_serde::{NpzArchive, NpzWriter};
    let rows = w2(30_000);
    let flags: Vec<Flagged> = (0..3000)
        .map(|i| Flagged {
            id: i,
            ok: i % 2 == 1,
        })
        .collect();
    let mut bad = npy_serde::to_vec(&flags).unwrap();
    let n = bad.len();
    bad[n - 9 * (3000 - 1234) + 8] = 5;
    for compressed in [false, true] {
        let mut w = if compressed {
            NpzWriter::new_compressed(Cursor::new(Vec::new()))
        } else {
            NpzWriter::new(Cursor::new(Vec::new()))
        };
        w.add("w2", &rows).unwrap();
        w.add_raw("bad.npy", &bad).unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let mut z = NpzArchive::from_bytes(&bytes).unwrap();
        tier::take();
        let got: Vec<W2> = z.read("w2").unwrap();
        assert_eq!(got, rows);
        assert_eq!(tier::take().exact, 30_000);
        let general = by_next(z.records_serde::<W2>("w2").unwrap());
        assert_eq!(by_fold(z.records::<W2>("w2").unwrap()), general);
        assert_eq!(by_fold(z.records_serde::<W2>("w2").unwrap()), general);
        let general = by_next(z.records_serde::<Flagged>("bad").unwrap());
        assert!(general[1234].is_err() && general[1235].is_ok());
        assert_eq!(by_fold(z.records::<Flagged>("bad").unwrap()), general);
        assert_eq!(by_next(z.records::<Flagged>("bad").unwrap()), general);
        assert_eq!(by_fold(z.records_serde::<Flagged>("bad").unwrap()), general);
        assert!(z.read::<Flagged>("bad").is_err());
    }
}

/// `fold` on the runtime-planned tier (`RecordReader::new_serde`, `MmapArray::records_serde`, for any
/// `Deserialize` type) gives what `next` gives: values, errors and their places, with a miss
/// mid-array (a zero read as `NonZeroU8`: the element the tier cannot decode goes to the
/// general tier, which reports it, and so does every element after it), the other byte
/// order, truncation, short reads, and after elements already taken by `next`.
#[test]
fn planned_fold_equals_next() {
    #[derive(Serialize, NpyRecord)]
    struct Raw {
        id: i64,
        n: u8,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Nz {
        id: i64,
        n: std::num::NonZeroU8,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Pair {
        id: i64,
        x: f64,
    }
    let dir = TempDir::new("streaming-planned-fold");
    let raw: Vec<Raw> = (0..9000)
        .map(|i| Raw {
            id: i,
            n: if i == 5123 || i == 8000 {
                0
            } else {
                1 + (i % 250) as u8
            },
        })
        .collect();
    let nz = npy_serde::to_vec(&raw).unwrap();
    let rows = w2(20_000);
    let le = npy_serde::to_vec(&rows).unwrap();
    let be = npy_serde::WriterBuilder::new()
        .byte_order(npy_serde::ByteOrder::Big)
        .to_vec(&rows)
        .unwrap();
    let short = le[..le.len() - 40].to_vec();

    fn check<T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
        dir: &TempDir,
        name: &str,
        file: &[u8],
    ) {
        let want = by_next(RecordReader::<_, T>::new_serde(Cursor::new(file)).unwrap());
        for step in [7, 4096, usize::MAX] {
            let open = || RecordReader::<_, T>::new_serde(Trickle { data: file, step }).unwrap();
            same_every_way(&want, 1001, open, &format!("{name}, Trickle {step}"));
        }
        let path = dir.join(format!("{name}.npy"));
        std::fs::write(&path, file).unwrap();
        if let Ok(map) = MmapArray::open(&path) {
            // The reader's elements and errors, from the map too.
            same_every_way(
                &want,
                999,
                || map.records_serde::<T>().unwrap(),
                &format!("{name}, mmap"),
            );
        }
    }
    check::<Nz>(&dir, "nz", &nz);
    check::<W2>(&dir, "le", &le);
    check::<W2>(&dir, "be", &be);
    check::<W2>(&dir, "short", &short);
    // Fewer fields than the file's: by name, on the general tier only.
    check::<Pair>(&dir, "pair", &le);

    // The misses are where they should be, and the planned tier served everything before.
    let got = by_fold(RecordReader::<_, Nz>::new_serde(Cursor::new(&nz)).unwrap());
    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i].is_err()).collect();
    assert_eq!(bad, [5123, 8000]);
    assert!(
        got[5123].as_ref().unwrap_err().contains("5123"),
        "{:?}",
        got[5123]
    );
    tier::take();
    let sum: f64 = RecordReader::<_, W2>::new_serde(Cursor::new(&le))
        .unwrap()
        .map(|r| r.unwrap().x)
        .sum();
    assert_eq!(sum, rows.iter().map(|r| r.x).sum::<f64>());
    let served = tier::take();
    assert_eq!((served.planned, served.general), (20_000, 0));
    RecordReader::<_, Nz>::new_serde(Cursor::new(&nz))
        .unwrap()
        .for_each(drop);
    let served = tier::take();
    assert_eq!((served.planned, served.general), (5123, 9000 - 5123));
}

/// A reader whose one read at `fail_at` fails (once), then goes on reading.
struct Flaky<'a> {
    data: &'a [u8],
    pos: usize,
    fail_at: usize,
    failed: bool,
}

impl Read for Flaky<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.failed && self.pos >= self.fail_at {
            self.failed = true;
            return Err(std::io::Error::other("flaky disk"));
        }
        let end = if self.failed {
            self.data.len()
        } else {
            self.fail_at
        };
        let n = buf.len().min(end - self.pos).min(3000);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// An I/O error mid-array ends the iteration there, by `fold` as by `next`, on both tiers: the
/// error is reported once, with the element it stopped at, and nothing after it is read.
#[test]
fn a_failed_read_ends_fold_as_it_ends_next() {
    let rows = w2(5000);
    let file = npy_serde::to_vec(&rows).unwrap();
    for fail_at in [200, 50_000, file.len() - 10] {
        let open = || Flaky {
            data: &file,
            pos: 0,
            fail_at,
            failed: false,
        };
        let want = by_next(RecordReader::<_, W2>::new_serde(open()).unwrap());
        assert!(want.last().unwrap().is_err());
        assert!(want.len() < rows.len() + 1);
        // (`assert!`: a failure would print 5000 records.)
        let same = |got: Vec<_>, how: &str| assert!(got == want, "{how}, failing at {fail_at}");
        same(
            by_fold(RecordReader::<_, W2>::new_serde(open()).unwrap()),
            "new, fold",
        );
        same(
            by_next(RecordReader::<_, W2>::new(open()).unwrap()),
            "new, next",
        );
        same(
            by_fold(RecordReader::<_, W2>::new(open()).unwrap()),
            "new, fold",
        );
    }
}

/// `MmapArray::record(i)` (random access, the runtime-planned tier first) gives element `i`
/// of `records()`, value or error, for every NumPy fixture (Fortran order, strings, every
/// dtype) read as several types, and for W2 and a file with misses mid-array.
#[test]
fn record_i_is_the_iterators_element() {
    fn check<T: for<'a> Deserialize<'a> + std::fmt::Debug>(map: &MmapArray, name: &str) {
        // Compared as text: NaN is not equal to itself.
        let text = |v: Vec<_>| v.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>();
        let want = text(by_next(map.records_serde::<T>().unwrap()));
        let got = text(by_next((0..map.len()).map(|i| map.record_serde::<T>(i))));
        if let Some(i) = (0..want.len().max(got.len())).find(|&i| got.get(i) != want.get(i)) {
            panic!(
                "{name} as {}: element {i}: {:?} != {:?}",
                std::any::type_name::<T>(),
                got.get(i),
                want.get(i)
            );
        }
        // `nth` skips without decoding, to the same element.
        let n = want.len();
        for k in [0, 1, 2, 7, n / 2, n.saturating_sub(1), n, n + 3] {
            let got = text(by_next(
                map.records_serde::<T>().unwrap().nth(k).into_iter(),
            ));
            assert_eq!(got.first(), want.get(k), "{name}: nth({k})");
        }
        let mut it = map.records_serde::<T>().unwrap();
        let stepped = text(by_next(std::iter::from_fn(|| it.nth(2))));
        let every_third: Vec<_> = want.iter().skip(2).step_by(3).cloned().collect();
        assert_eq!(stepped, every_third, "{name}: nth(2) repeated");
    }
    let mut seen = 0;
    let dir = npy_serde_tests::fixtures_dir().join("npy");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Ok(map) = MmapArray::open(&path) else {
            continue;
        };
        let name = path.display().to_string();
        check::<serde_json::Value>(&map, &name);
        check::<f64>(&map, &name);
        check::<i64>(&map, &name);
        check::<String>(&map, &name);
        seen += 1;
    }
    assert!(seen >= 80, "only {seen} fixtures");

    #[derive(Serialize, NpyRecord)]
    struct Raw {
        id: i64,
        n: u8,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Nz {
        id: i64,
        n: std::num::NonZeroU8,
    }
    let raw: Vec<Raw> = (0..300)
        .map(|i| Raw {
            id: i,
            n: if i % 97 == 3 { 0 } else { 1 },
        })
        .collect();
    let tmp = TempDir::new("streaming-record-i");
    let path = tmp.join("nz.npy");
    npy_serde::to_path(&path, &raw).unwrap();
    let map = MmapArray::open(&path).unwrap();
    check::<Nz>(&map, "nz");
    assert!(map.record_serde::<Nz>(3).is_err() && map.record_serde::<Nz>(4).is_ok());
    let path = tmp.join("w2.npy");
    npy_serde::to_path(&path, &w2(1000)).unwrap();
    let map = MmapArray::open(&path).unwrap();
    check::<W2>(&map, "w2");
    // From several threads at once (a call that finds the kept plans in use makes its own).
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| check::<W2>(&map, "w2, 4 threads"));
        }
    });
    let mut exact = map.records::<W2>().unwrap();
    assert_eq!(exact.nth(500).unwrap().unwrap().id, 500 * 7);
    assert_eq!(exact.next().unwrap().unwrap().id, 501 * 7);
    assert_eq!(exact.nth(497).unwrap().unwrap().id, 999 * 7);
    assert!(exact.next().is_none() && exact.nth(1).is_none());
    tier::take();
    assert_eq!(map.record_serde::<W2>(999).unwrap().id, 999 * 7);
    assert_eq!(tier::take().planned, 1);
}

/// Members streamed into an archive with `write` / `write_all` (the exact tier) hold
/// the bytes `write` / `write_all` give, and `to_vec`'s, stored or deflated.
#[test]
fn npz_record_writers_on_the_exact_tier() {
    use npy_serde::{NpzArchive, NpzWriter};
    let rows = w2(5000);
    let want = npy_serde::to_vec(&rows).unwrap();
    for compressed in [false, true] {
        let mut w = if compressed {
            NpzWriter::new_compressed(Cursor::new(Vec::new()))
        } else {
            NpzWriter::new(Cursor::new(Vec::new()))
        };
        let n = rows.len() as u64;
        let mut m = w.start_records::<W2>("general", n).unwrap();
        for r in &rows[..100] {
            m.write_serde(r).unwrap();
        }
        m.write_all_serde(&rows[100..]).unwrap();
        m.finish().unwrap();
        tier::take();
        let mut m = w.start_records::<W2>("exact", n).unwrap();
        for r in &rows[..100] {
            m.write(r).unwrap();
        }
        m.write_all(&rows[100..]).unwrap();
        m.finish().unwrap();
        assert_eq!(tier::take().exact, n);
        let bytes = w.finish().unwrap().into_inner();
        let mut z = NpzArchive::from_bytes(&bytes).unwrap();
        for key in ["general", "exact"] {
            let mut got = Vec::new();
            z.by_key(key).unwrap().read_to_end(&mut got).unwrap();
            assert!(got == want, "{key}, compressed {compressed}");
        }
    }
}
