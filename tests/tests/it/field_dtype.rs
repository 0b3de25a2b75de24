//! `#[npy(dtype = "...")]`: a field whose Rust type cannot say its dtype (an `i64` count stored
//! as `<M8[ns]`, `[u8; 16]` as `|V16`), through every door and tier, and loaded by NumPy (live,
//! with `NPY_PYTHON`). The compile errors for types that cannot hold the dtype are trybuild cases
//! in npy-derive/tests/ui/dtype_attr_*.rs.

use std::io::Cursor;

use npy_serde::tier::{self, Served};
use npy_serde::{ErrorKind, MmapArray, NpyRecord, NpyWriter, RecordReader};
use npy_serde_tests::{live_python, run_python, TempDir};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, NpyRecord, Clone, Debug, PartialEq)]
struct Event {
    #[npy(dtype = "<M8[ns]")]
    at: i64,
    #[npy(dtype = "<M8[us]")]
    seen: Option<i64>,
    #[npy(dtype = ">m8[s]")]
    took: i64,
    #[npy(dtype = "|V16")]
    uuid: [u8; 16],
}

/// Only fields the exact tier decodes (the `|V16` is not in the layout model).
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
struct Stamp {
    id: u32,
    #[npy(dtype = "<M8[ms]")]
    at: i64,
    #[npy(dtype = "<m8[ns]")]
    gap: Option<i64>,
}

#[derive(Serialize, Deserialize, NpyRecord, Clone, Debug, PartialEq)]
struct Odd {
    #[npy(dtype = "<M8[10s]")]
    tens: i64,
    #[npy(dtype = "<m8")]
    generic: i64,
    #[npy(dtype = "|V4")]
    raw: Vec<u8>,
    #[npy(dtype = "|S3")]
    code: String,
    #[npy(dtype = "<U2")]
    name: String,
}

fn events(n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| Event {
            at: 1_700_000_000_000_000_000 + i as i64,
            seen: (i % 2 == 0).then_some(i as i64 * 1_000_000),
            took: -(i as i64),
            uuid: [i as u8; 16],
        })
        .collect()
}

fn stamps(n: usize) -> Vec<Stamp> {
    (0..n)
        .map(|i| Stamp {
            id: i as u32,
            at: 1_700_000_000_000 + i as i64,
            gap: (i % 3 != 1).then_some(i as i64),
        })
        .collect()
}

#[test]
fn dtypes() {
    assert_eq!(
        Event::dtype().descr(),
        "[('at', '<M8[ns]'), ('seen', '<M8[us]'), ('took', '>m8[s]'), ('uuid', '|V16')]"
    );
    assert_eq!(
        Odd::dtype().descr(),
        "[('tens', '<M8[10s]'), ('generic', '<m8'), ('raw', '|V4'), ('code', '|S3'), \
         ('name', '<U2')]"
    );
    assert_eq!(
        Stamp::LAYOUT,
        npy_serde::record::__private::layout_of(&Stamp::dtype()),
        "the derived layout is the dtype's"
    );
    assert!(Stamp::LAYOUT.is_exact());
}

#[test]
fn every_door() {
    let rows = events(30);
    let file = npy_serde::to_vec(&rows).unwrap();
    // None is NaT; `took` is big-endian.
    let seen_at = file.len() - 30 * 40 + 8;
    assert_eq!(file[seen_at + 40..seen_at + 48], i64::MIN.to_le_bytes());
    assert_eq!(file[seen_at + 8..seen_at + 16], 0i64.to_be_bytes());

    let got: Vec<Event> = npy_serde::from_slice(&file).unwrap();
    assert_eq!(got, rows);
    let got: Vec<Event> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, rows);
    let got: Vec<Event> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(got, rows);
    let got: Vec<Event> = RecordReader::new(Cursor::new(&file))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, rows);

    let dir = TempDir::new("field-dtype");
    let path = dir.join("e.npy");
    let mut w = NpyWriter::create::<Event>(&path).unwrap();
    for r in &rows {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), file);
    let got: Vec<Event> = npy_serde::from_path(&path).unwrap();
    assert_eq!(got, rows);
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec::<Event>().unwrap(), rows);
    let it: Vec<Event> = map.records().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(it, rows);

    let odd = vec![Odd {
        tens: 5,
        generic: -1,
        raw: vec![1, 2, 3, 4],
        code: "ab".into(),
        name: "xy".into(),
    }];
    let file = npy_serde::to_vec(&odd).unwrap();
    assert_eq!(npy_serde::from_slice::<Odd>(&file).unwrap(), odd);
    assert_eq!(npy_serde::from_slice_serde::<Odd>(&file).unwrap(), odd);
    // A |V4 field takes exactly 4 bytes.
    let mut short = odd.clone();
    short[0].raw.pop();
    let err = npy_serde::to_vec(&short).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Write(_)), "{err}");
    assert!(err.to_string().contains("|V4"), "{err}");
}

#[test]
fn the_exact_tier_serves_attributed_times() {
    let rows = stamps(50);
    tier::take();
    let file = npy_serde::to_vec(&rows).unwrap();
    assert_eq!(
        tier::take(),
        Served {
            exact: 50,
            planned: 0,
            general: 0
        }
    );
    let got: Vec<Stamp> = npy_serde::from_slice(&file).unwrap();
    assert_eq!(got, rows);
    assert_eq!(
        tier::take(),
        Served {
            exact: 50,
            planned: 0,
            general: 0
        }
    );
    // The same fields as datetimes of another unit: another layout, so not the exact tier,
    // and the general tier reads the counts (an i64 reads any datetime).
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct OtherUnit {
        id: u32,
        #[npy(dtype = "<M8[s]")]
        at: i64,
        #[npy(dtype = "<m8[ns]")]
        gap: Option<i64>,
    }
    let got: Vec<OtherUnit> = npy_serde::from_slice(&file).unwrap();
    assert_eq!(got[4].at, rows[4].at);
    assert_eq!(tier::take().exact, 0);
}

#[test]
fn numpy_loads_the_attributed_dtypes() {
    if live_python().is_none() {
        return;
    }
    let dir = TempDir::new("field-dtype-py");
    let path = dir.join("e.npy");
    npy_serde::to_path(&path, &events(3)).unwrap();
    let out = run_python(
        "import sys, numpy as np\n\
         a = np.load(sys.argv[1])\n\
         print(a.dtype.descr)\n\
         print(str(a['at'][1]), str(a['seen'][1]), str(a['seen'][2]), str(a['took'][2]))\n\
         print(a['uuid'][2].tobytes().hex())\n\
         b = np.zeros(2, dtype=[('at', '<M8[ns]'), ('seen', '<M8[us]'), ('took', '>m8[s]'), ('uuid', 'V16')])\n\
         b['at'] = ['2000-01-01T00:00:00', 'NaT']\n\
         b['seen'][0] = 'NaT'\n\
         b['took'] = [7, 8]\n\
         np.save(sys.argv[2], b)",
        &[path.as_os_str(), dir.join("b.npy").as_os_str()],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "[('at', '<M8[ns]'), ('seen', '<M8[us]'), ('took', '>m8[s]'), ('uuid', '|V16')]"
    );
    assert_eq!(
        lines[1],
        "2023-11-14T22:13:20.000000001 NaT 1970-01-01T00:00:02.000000 -2 seconds"
    );
    assert_eq!(lines[2], "02".repeat(16));
    let got: Vec<Event> = npy_serde::from_path(dir.join("b.npy")).unwrap();
    assert_eq!(got[0].at, 946_684_800_000_000_000);
    assert_eq!(got[1].at, i64::MIN, "NaT as a raw count");
    assert_eq!(got[0].seen, None);
    assert_eq!(got[1].seen, Some(0));
    assert_eq!((got[0].took, got[1].took), (7, 8));
}
