//! `npy_serde::datetime`: `DateTime64<U>` / `TimeDelta64<U>` fields through every door and tier,
//! NaT as a value and as `None`, units checked both ways, raw `i64` reads unchanged, and NumPy
//! loading what the derive writes (live, with `NPY_PYTHON`).

use std::io::Cursor;

use npy_serde::datetime::{DateTime64, Ms, Ns, TimeDelta64, D, S};
use npy_serde::tier::{self, Served};
use npy_serde::{ErrorKind, MmapArray, NpyRecord, NpyWriter, RecordReader, WriterBuilder};
use npy_serde_tests::{live_python, npy, run_python, TempDir};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
struct Tick {
    id: i64,
    at: DateTime64<Ns>,
    held: TimeDelta64<S>,
    closed: Option<DateTime64<Ns>>,
}

/// The same bytes as `Tick`, read as raw counts.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
struct Raw {
    id: i64,
    at: i64,
    held: i64,
    closed: i64,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Seconds {
    id: i64,
    at: DateTime64<S>,
    held: TimeDelta64<S>,
    closed: Option<DateTime64<S>>,
}

/// Plain data: views and one-copy reads.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
#[npy(align)]
#[repr(C)]
struct Day {
    day: DateTime64<D>,
    ms: TimeDelta64<Ms>,
    n: u32,
}

const NAT: i64 = i64::MIN;

fn ticks(n: usize) -> Vec<Tick> {
    (0..n)
        .map(|i| Tick {
            id: i as i64,
            at: if i % 5 == 3 {
                DateTime64::NAT
            } else {
                DateTime64::new(1_700_000_000_000_000_000 + i as i64)
            },
            held: TimeDelta64::new(i as i64 - 10),
            closed: (i % 3 != 0).then(|| DateTime64::new(i as i64 * 1000)),
        })
        .collect()
}

fn raw(t: &Tick) -> Raw {
    Raw {
        id: t.id,
        at: t.at.count(),
        held: t.held.count(),
        closed: t.closed.map_or(NAT, |c| c.count()),
    }
}

fn served(exact: u64, planned: u64, general: u64) -> Served {
    Served {
        exact,
        planned,
        general,
    }
}

#[test]
fn the_dtype_names_units() {
    assert_eq!(
        Tick::dtype().descr(),
        "[('id', '<i8'), ('at', '<M8[ns]'), ('held', '<m8[s]'), ('closed', '<M8[ns]')]"
    );
    assert_eq!(
        <[DateTime64<D>; 2]>::dtype().descr(),
        "('<M8[D]', (2,))",
        "subarrays of datetimes"
    );
    assert!(
        Day::POD.is_some(),
        "a repr(C) struct of datetimes is plain data"
    );
    assert!(Tick::POD.is_none(), "Option is not plain data");
}

#[test]
fn every_read_door_and_tier() {
    let rows = ticks(40);
    let file = npy_serde::to_vec(&rows).unwrap();
    assert_eq!(tier::take(), served(40, 0, 0), "to_vec: the exact tier");
    // The bytes are the raw counts, NaT for None.
    let raws: Vec<Raw> = rows.iter().map(raw).collect();
    let raw_file = npy_serde::to_vec(&raws).unwrap();
    let data = 40 * 32;
    assert_eq!(file[file.len() - data..], raw_file[raw_file.len() - data..]);
    tier::take();

    let got: Vec<Tick> = npy_serde::from_slice(&file).unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take(), served(40, 0, 0), "from_slice");
    let got: Vec<Tick> = npy_serde::from_reader(file.as_slice()).unwrap();
    assert_eq!(got, rows);

    let got: Vec<Tick> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(
        got, rows,
        "from_slice_serde (planned tier misses, general serves)"
    );
    let got: Vec<Tick> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(got, rows, "deserialize_slice (the shape walk)");
    let got: Vec<Tick> = RecordReader::new_serde(Cursor::new(&file))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, rows, "RecordReader::new_serde");
    tier::take();
    let got: Vec<Tick> = RecordReader::new(Cursor::new(&file))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, rows, "RecordReader::new");
    assert_eq!(tier::take(), served(40, 0, 0), "RecordReader::new");

    let dir = TempDir::new("datetime");
    let path = dir.join("ticks.npy");
    std::fs::write(&path, &file).unwrap();
    let got: Vec<Tick> = npy_serde::from_path(&path).unwrap();
    assert_eq!(got, rows);
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec::<Tick>().unwrap(), rows);
    assert_eq!(map.to_vec_serde::<Tick>().unwrap(), rows);
    let it: Vec<Tick> = map.records().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(it, rows);
    let it: Vec<Tick> = map
        .records_serde()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(it, rows);
    assert_eq!(map.record_serde::<Tick>(3).unwrap(), rows[3]);

    // The raw counts as before: i64 fields read datetimes as their counts.
    let got: Vec<Raw> = npy_serde::from_slice(&file).unwrap();
    assert_eq!(got, raws);
    let got: Vec<Raw> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, raws);
}

#[test]
fn big_endian_files_and_writers() {
    let rows = ticks(12);
    tier::take();
    let be = WriterBuilder::new()
        .byte_order(npy_serde::ByteOrder::Big)
        .to_vec(&rows)
        .unwrap();
    assert_eq!(
        tier::take(),
        served(12, 0, 0),
        "big-endian: still exact, flipped"
    );
    assert!(String::from_utf8_lossy(&be[..128]).contains("'>M8[ns]'"));
    let got: Vec<Tick> = npy_serde::from_slice(&be).unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take(), served(12, 0, 0));
    let got: Vec<Tick> = npy_serde::from_slice_serde(&be).unwrap();
    assert_eq!(got, rows);
}

#[test]
fn record_by_record_writers() {
    let rows = ticks(9);
    let file = npy_serde::to_vec(&rows).unwrap();
    let mut w = NpyWriter::with_len::<Tick>(Vec::new(), 9).unwrap();
    for r in &rows {
        w.write_serde(r).unwrap();
    }
    assert_eq!(w.finish().unwrap(), file, "NpyWriter::write (general tier)");
    let mut w = NpyWriter::with_len::<Tick>(Vec::new(), 9).unwrap();
    for r in &rows {
        w.write(r).unwrap();
    }
    assert_eq!(w.finish().unwrap(), file, "NpyWriter::write");
    let dir = TempDir::new("datetime-w");
    let path = dir.join("t.npy");
    let mut w = NpyWriter::create::<Tick>(&path).unwrap();
    for r in &rows {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), file, "NpyWriter::create");
}

#[test]
fn units_are_checked() {
    let file = npy_serde::to_vec(&ticks(4)).unwrap();
    type Doors = fn(&[u8]) -> npy_serde::Result<Vec<Seconds>>;
    let doors: [(&str, Doors); 3] = [
        ("from_slice", |b| npy_serde::from_slice(b)),
        ("from_slice_serde", |b| npy_serde::from_slice_serde(b)),
        ("deserialize_slice", |b| npy_serde::deserialize_slice(b)),
    ];
    for (door, read) in doors {
        let err = read(&file).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::TypeMismatch { .. }),
            "{door}: {err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("datetime64[s]") && msg.contains("<M8[ns]"),
            "{door}: {msg}"
        );
        assert!(msg.contains("at"), "{door}: names the field: {msg}");
    }
    // A datetime is not a timedelta of the same unit, nor an integer.
    let m8 = npy("<m8[ns]", &[1], false, &5i64.to_le_bytes());
    let err = npy_serde::from_slice_serde::<DateTime64<Ns>>(&m8).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::TypeMismatch { .. }),
        "{err}"
    );
    let i8 = npy("<i8", &[1], false, &5i64.to_le_bytes());
    let err = npy_serde::from_slice::<DateTime64<Ns>>(&i8).unwrap_err();
    assert!(err.to_string().contains("<i8"), "{err}");
    // Multiples and generic datetimes have no marker type: i64 reads them.
    let ten = npy("<M8[10s]", &[1], false, &5i64.to_le_bytes());
    assert!(npy_serde::from_slice_serde::<DateTime64<S>>(&ten).is_err());
    assert_eq!(npy_serde::from_slice_serde::<i64>(&ten).unwrap(), [5]);

    // Writing a DateTime64<Ns> as seconds is refused too, naming both.
    #[derive(Serialize, NpyRecord)]
    struct One {
        at: DateTime64<Ns>,
    }
    let dtype: npy_serde::DType = "[('at', '<M8[s]')]".parse().unwrap();
    let err = WriterBuilder::new()
        .dtype(dtype)
        .to_vec(&[One {
            at: DateTime64::new(1),
        }])
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("datetime64[ns]") && msg.contains("<M8[s]"),
        "{msg}"
    );
}

#[test]
fn nat_is_none_for_any_option() {
    let data: Vec<u8> = [NAT, 7, NAT].iter().flat_map(|v| v.to_le_bytes()).collect();
    let file = npy("<M8[us]", &[3], false, &data);
    let want = [None, Some(7), None];
    let got: Vec<Option<i64>> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, want);
    let got: Vec<Option<i64>> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(got, want);
    let got: Vec<Option<DateTime64<npy_serde::datetime::Us>>> =
        npy_serde::from_slice(&file).unwrap();
    assert_eq!(
        got.iter().map(|t| t.map(|t| t.count())).collect::<Vec<_>>(),
        want
    );
    // As a value, NaT stays a value.
    let got: Vec<DateTime64<npy_serde::datetime::Us>> = npy_serde::from_slice_serde(&file).unwrap();
    assert!(got[0].is_nat() && !got[1].is_nat());
    // Written back: None is NaT.
    let back = npy_serde::to_vec(&got_options(&want)).unwrap();
    assert_eq!(back, file);
    // A plain integer has no NaT: an Option<i64> of an `<i8` is always Some.
    let ints = npy("<i8", &[1], false, &NAT.to_le_bytes());
    assert_eq!(
        npy_serde::from_slice_serde::<Option<i64>>(&ints).unwrap(),
        [Some(NAT)]
    );
}

fn got_options(v: &[Option<i64>]) -> Vec<Option<DateTime64<npy_serde::datetime::Us>>> {
    v.iter().map(|o| o.map(DateTime64::new)).collect()
}

#[test]
fn views_of_plain_datetimes() {
    let rows: Vec<Day> = (0..5)
        .map(|i| Day {
            day: DateTime64::new(19_000 + i),
            ms: TimeDelta64::new(i * 1000),
            n: i as u32,
        })
        .collect();
    let dir = TempDir::new("datetime-v");
    let path = dir.join("d.npy");
    npy_serde::to_path(&path, &rows).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.as_slice::<Day>().unwrap(), rows.as_slice());
    // A view of other units or of raw integers is refused.
    #[derive(Deserialize, NpyRecord, Clone, Copy)]
    #[npy(align)]
    #[repr(C)]
    struct Other {
        day: DateTime64<S>,
        ms: TimeDelta64<Ms>,
        n: u32,
    }
    assert!(map.as_slice::<Other>().is_err());
    let days = npy_serde::to_vec(&[DateTime64::<D>::new(1), DateTime64::new(2)]).unwrap();
    let path = dir.join("days.npy");
    std::fs::write(&path, &days).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.as_slice::<DateTime64<D>>().unwrap()[1].count(), 2);
    assert!(map.as_slice::<i64>().is_err(), "an M8 is not an i8 view");
}

#[test]
fn numpy_loads_what_the_derive_writes() {
    if live_python().is_none() {
        return;
    }
    let rows = ticks(7);
    let dir = TempDir::new("datetime-py");
    let path = dir.join("ticks.npy");
    npy_serde::to_path(&path, &rows).unwrap();
    let out = run_python(
        "import sys, numpy as np\n\
         a = np.load(sys.argv[1])\n\
         print(a.dtype.descr)\n\
         print([str(x) for x in a['at'][:4]])\n\
         print([bool(np.isnat(x)) for x in a['closed']])\n\
         print(int(a['held'][2].astype('int64')))\n\
         np.save(sys.argv[2], np.array(['2024-02-29', 'NaT', '1969-12-31'], dtype='M8[D]'))",
        &[path.as_os_str(), dir.join("days.npy").as_os_str()],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "[('id', '<i8'), ('at', '<M8[ns]'), ('held', '<m8[s]'), ('closed', '<M8[ns]')]"
    );
    assert_eq!(
        lines[1],
        "['2023-11-14T22:13:20.000000000', '2023-11-14T22:13:20.000000001', \
         '2023-11-14T22:13:20.000000002', 'NaT']"
    );
    assert_eq!(lines[2], "[True, False, False, True, False, False, True]");
    assert_eq!(lines[3], "-8");
    let got: Vec<Option<DateTime64<D>>> = npy_serde::from_path(dir.join("days.npy")).unwrap();
    assert_eq!(
        got,
        [
            Some(DateTime64::new(19_782)),
            None,
            Some(DateTime64::new(-1))
        ]
    );
}

#[test]
fn npz_members() {
    let rows = ticks(10);
    let mut w = npy_serde::NpzWriter::new_compressed(Cursor::new(Vec::new()));
    w.add("ticks", &rows).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let mut a = npy_serde::NpzArchive::new(Cursor::new(bytes)).unwrap();
    let got: Vec<Tick> = a.read("ticks").unwrap();
    assert_eq!(got, rows);
    let got: Vec<Raw> = a.read("ticks").unwrap();
    assert_eq!(got, rows.iter().map(raw).collect::<Vec<_>>());
}

#[test]
fn subarrays_of_datetimes() {
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq)]
    struct Window {
        bounds: [DateTime64<D>; 2],
        marks: [Option<TimeDelta64<Ms>>; 3],
    }
    assert_eq!(
        Window::dtype().descr(),
        "[('bounds', '<M8[D]', (2,)), ('marks', '<m8[ms]', (3,))]"
    );
    let rows = vec![Window {
        bounds: [DateTime64::new(1), DateTime64::NAT],
        marks: [None, Some(TimeDelta64::new(-5)), None],
    }];
    let file = npy_serde::to_vec(&rows).unwrap();
    tier::take();
    assert_eq!(npy_serde::from_slice::<Window>(&file).unwrap(), rows);
    assert_eq!(tier::take(), served(1, 0, 0));
    assert_eq!(npy_serde::from_slice_serde::<Window>(&file).unwrap(), rows);
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<Window>>(&file).unwrap(),
        rows
    );
}
