//! Zero-copy and one-copy paths for plain-data types (`npy_serde::pod`): typed memory-map
//! views (`MmapArray::as_slice`, `MmapArrayMut`), maps created sparse (NumPy's `open_memmap`
//! 'w+'), bulk reads (`from_*`, `MmapArray::to_vec`) and raw writes (`to_*`).
//!
//! Every refusal names its reason; the bulk paths give the values and errors of the other
//! tiers (the same checks as `read.rs`, against `from_*_serde`); live NumPy reads what
//! we write through maps and we see what it writes through `mmap_mode='r+'`.

use std::ffi::OsStr;
use std::io::Cursor;
use std::os::unix::fs::MetadataExt;

use npy_serde::tier;
use npy_serde::{DType, Header, MmapArray, MmapArrayMut, NpyRecord, ReaderBuilder, WriterBuilder};
use npy_serde_tests::{live_python, npy, run_python, TempDir, Trickle};
use serde::{Deserialize, Serialize};

/// `np.dtype([('id', '<i8'), ('x', '<f8'), ('y', '<f4'), ('flag', 'u1'), ('v', '<f4', (3,))],
/// align=True)`: W2's fields, 40-byte records, C's layout.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
#[npy(align)]
#[repr(C)]
struct W2A {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// With a bool, which must be 0 or 1.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
#[npy(align)]
#[repr(C)]
struct Flagged {
    x: f32,
    ok: bool,
}

/// Packed: no padding, so it is also written as its bytes.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Pair {
    a: i32,
    b: f32,
}

/// W2's fields in NumPy's default (packed) layout, 33 bytes: `#[repr(C, packed)]` is that
/// layout in Rust, so this is plain data too.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
#[repr(C, packed)]
struct W2P {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// The same fields without `#[repr(C)]`: not plain data.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
#[npy(align)]
struct W2AUnpinned {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

fn w2a(n: usize) -> Vec<W2A> {
    (0..n)
        .map(|i| W2A {
            id: i as i64 - 3,
            x: i as f64 * 0.25,
            y: -(i as f32),
            flag: (i % 256) as u8,
            v: [i as f32, 0.5, -1.5],
        })
        .collect()
}

#[test]
fn which_types_are_plain_data() {
    assert!(f64::POD.is_some() && bool::POD.is_some() && u8::POD.is_some());
    assert!(<[[i16; 3]; 2]>::POD.is_some());
    assert!(W2A::POD.is_some());
    assert!(Flagged::POD.is_some());
    assert!(Pair::POD.is_some());
    assert!(W2P::POD.is_some());
    assert_eq!(std::mem::size_of::<W2P>(), 33);
    assert!(W2AUnpinned::POD.is_none(), "not #[repr(C)]");
    assert!(half::f16::POD.is_none(), "f16 is not in the layout model");
    assert_eq!(std::mem::size_of::<W2A>(), W2A::dtype().itemsize());
    assert_eq!(W2A::dtype().itemsize(), 40);
}

#[test]
fn views_in_place() {
    let dir = TempDir::new("views");
    let rows = w2a(1000);
    let path = dir.join("w2a.npy");
    npy_serde::to_path(&path, &rows).unwrap();
    let map = MmapArray::open(&path).unwrap();
    let view: &[W2A] = map.as_slice().unwrap();
    assert_eq!(view, rows.as_slice());
    // The view is the map's memory, not a copy.
    assert_eq!(view.as_ptr().cast::<u8>(), map.data().as_ptr());

    let path = dir.join("grid.npy");
    let grid: Vec<[f32; 4]> = (0..6).map(|i| [i as f32; 4]).collect();
    npy_serde::to_path(&path, &grid).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.shape(), [6, 4]);
    assert_eq!(map.as_slice::<f32>().unwrap()[4 * 5 + 3], 5.0);
    assert_eq!(map.as_slice::<[f32; 4]>().unwrap(), grid.as_slice());
    assert_eq!(map.as_slice::<[[f32; 4]; 6]>().unwrap().len(), 1);
    let err = map.as_slice::<[f32; 3]>().unwrap_err();
    assert_eq!(err.kind().code(), "view");
}

fn refused<T: NpyRecord + std::fmt::Debug>(path: &std::path::Path, what: &str) {
    let map = MmapArray::open(path).unwrap();
    let err = map.as_slice::<T>().unwrap_err();
    match err.kind() {
        npy_serde::ErrorKind::View { what: w, .. } => assert_eq!(*w, what, "{err}"),
        _ => panic!("{err}"),
    }
    assert!(err.to_string().contains(what), "{err}");
}

#[test]
fn views_refuse_with_their_reason() {
    let dir = TempDir::new("views-refuse");
    let p = dir.join("i4.npy");
    npy_serde::to_path(&p, &[1i32, 2, 3]).unwrap();
    refused::<f32>(&p, "dtype");
    refused::<i64>(&p, "dtype");
    refused::<W2AUnpinned>(&p, "type");

    let p = dir.join("be.npy");
    let be = WriterBuilder::new()
        .byte_order(npy_serde::ByteOrder::Big)
        .to_vec(&[1.0f64, 2.0])
        .unwrap();
    std::fs::write(&p, be).unwrap();
    refused::<f64>(&p, "byte order");

    let p = dir.join("f.npy");
    let f = WriterBuilder::new()
        .shape([2, 3])
        .fortran_order(true)
        .to_vec(&[0i16, 1, 2, 3, 4, 5])
        .unwrap();
    std::fs::write(&p, f).unwrap();
    refused::<i16>(&p, "order");
    // One axis longer than 1: Fortran order is C order, and the view is fine.
    let p1 = dir.join("f1.npy");
    let f1 = WriterBuilder::new()
        .shape([1, 3])
        .fortran_order(true)
        .to_vec(&[7i16, 8, 9])
        .unwrap();
    std::fs::write(&p1, f1).unwrap();
    assert_eq!(
        MmapArray::open(&p1).unwrap().as_slice::<i16>().unwrap(),
        [7, 8, 9]
    );

    // A data offset that is not a multiple of 8 (another writer's header padding).
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    let hlen = 68 - 10; // data at byte 68
    file.extend_from_slice(&(hlen as u16).to_le_bytes());
    file.extend_from_slice(dict.as_bytes());
    file.resize(67, b' ');
    file.push(b'\n');
    file.extend_from_slice(&1.5f64.to_le_bytes());
    file.extend_from_slice(&2.5f64.to_le_bytes());
    let p = dir.join("misaligned.npy");
    std::fs::write(&p, &file).unwrap();
    refused::<f64>(&p, "alignment");
    // The copying readers read it all the same.
    assert_eq!(npy_serde::from_path::<_, f64>(&p).unwrap(), [1.5, 2.5]);

    // A bool byte of 2: refused, naming the record.
    let p = dir.join("bool.npy");
    let mut bytes =
        npy_serde::to_vec(&[Flagged { x: 1.0, ok: true }, Flagged { x: 2.0, ok: false }]).unwrap();
    let n = bytes.len();
    bytes[n - 8 + 4] = 2;
    std::fs::write(&p, &bytes).unwrap();
    let err = MmapArray::open(&p)
        .unwrap()
        .as_slice::<Flagged>()
        .unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value");
    assert_eq!(err.position().record, Some(1));
}

#[test]
fn writable_maps() {
    let dir = TempDir::new("views-rw");
    let path = dir.join("rw.npy");
    npy_serde::to_path(&path, &w2a(10)).unwrap();
    {
        let mut map = MmapArrayMut::open_rw(&path).unwrap();
        let rows = map.as_mut_slice::<W2A>().unwrap();
        rows[3].x = 1e9;
        rows[9].v[2] = 42.0;
        map.flush().unwrap();
    }
    let back: Vec<W2A> = npy_serde::from_path(&path).unwrap();
    assert_eq!(back[3].x, 1e9);
    assert_eq!(back[9].v[2], 42.0);

    // Copy on write: the map changes, the file does not.
    let before = std::fs::read(&path).unwrap();
    {
        let mut map = MmapArrayMut::open_cow(&path).unwrap();
        map.as_mut_slice::<W2A>().unwrap()[0].id = -1;
        assert_eq!(map.as_slice::<W2A>().unwrap()[0].id, -1);
        map.flush().unwrap();
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // The header is checked as for reading: a lying shape is refused.
    let mut bad = before.clone();
    bad.truncate(bad.len() - 1);
    let p = dir.join("short.npy");
    std::fs::write(&p, bad).unwrap();
    assert_eq!(
        MmapArrayMut::open_rw(&p).unwrap_err().kind().code(),
        "unexpected_eof"
    );
}

#[test]
fn created_maps_are_sparse_and_numpy_shaped() {
    let dir = TempDir::new("views-create");
    let path = dir.join("big.npy");
    // 256 MiB of f64, zero-filled without writing the zeros.
    let n = 1u64 << 25;
    let mut map = MmapArrayMut::create::<f64>(&path, &[n]).unwrap();
    let blocks = std::fs::metadata(&path).unwrap().blocks();
    assert!(
        blocks < 1024,
        "{blocks} blocks of 512 bytes: the data is not a hole"
    );
    {
        let v = map.as_mut_slice::<f64>().unwrap();
        assert_eq!(v.len() as u64, n);
        v[0] = 1.0;
        v[n as usize - 1] = 2.0;
    }
    map.flush().unwrap();
    drop(map);
    let map = MmapArray::open(&path).unwrap();
    let v = map.as_slice::<f64>().unwrap();
    assert_eq!((v[0], v[1], v[n as usize - 1]), (1.0, 0.0, 2.0));
    // The header is np.save's for the same array.
    let same = npy_serde::to_vec(&[0.0f64; 3]).unwrap();
    let h = npy_serde::header::parse_header(&same, &Default::default()).unwrap();
    assert_eq!(map.parsed_header().data_offset, h.data_offset);

    // A subarray element folds into the shape, as np.save writes it.
    let p = dir.join("rows.npy");
    let m = MmapArrayMut::create::<[f32; 3]>(&p, &[4]).unwrap();
    assert_eq!(m.shape(), [4, 3]);
    assert_eq!(m.header().dtype, DType::scalar(npy_serde::Scalar::F32));
}

#[test]
fn bulk_reads_equal_the_other_tiers() {
    let rows = w2a(5000);
    let file = npy_serde::to_vec(&rows).unwrap();
    let dir = TempDir::new("views-bulk");
    let path = dir.join("w2a.npy");
    std::fs::write(&path, &file).unwrap();
    let rb = ReaderBuilder::new();

    tier::take();
    let got: Vec<W2A> = rb.from_path(&path).unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take().exact, 5000);
    let got: Vec<W2A> = rb.from_slice(&file).unwrap();
    assert_eq!(got, rows);
    let got: Vec<W2A> = rb.from_reader(Cursor::new(&file)).unwrap();
    assert_eq!(got, rows);
    for step in [1, 7, 4097] {
        let got: Vec<W2A> = rb.from_reader(Trickle { data: &file, step }).unwrap();
        assert_eq!(got, rows, "Trickle {step}");
    }
    let got: Vec<W2A> = MmapArray::open(&path).unwrap().to_vec().unwrap();
    assert_eq!(got, rows);
    let s = tier::take();
    assert_eq!((s.exact, s.planned, s.general), (5000 * 6, 0, 0));

    // Errors, as from_*_serde gives them: a truncated file, a reader ending early, a bad bool.
    let short = &file[..file.len() - 17];
    let want = npy_serde::from_slice_serde::<W2A>(short).unwrap_err();
    for got in [
        npy_serde::from_slice::<W2A>(short).unwrap_err(),
        npy_serde::from_reader::<_, W2A>(Cursor::new(short)).unwrap_err(),
        npy_serde::from_reader::<_, W2A>(Trickle {
            data: short,
            step: 3,
        })
        .unwrap_err(),
    ] {
        assert_eq!(got.to_string(), want.to_string());
        assert_eq!(got.position(), want.position());
    }
    let flags: Vec<Flagged> = (0..100)
        .map(|i| Flagged {
            x: i as f32,
            ok: i % 2 == 0,
        })
        .collect();
    let mut bad = npy_serde::to_vec(&flags).unwrap();
    let k = bad.len() - 8 * 37 + 4;
    bad[k] = 7;
    let want = npy_serde::from_slice_serde::<Flagged>(&bad).unwrap_err();
    for got in [
        npy_serde::from_slice::<Flagged>(&bad).unwrap_err(),
        npy_serde::from_reader::<_, Flagged>(Cursor::new(&bad)).unwrap_err(),
    ] {
        assert_eq!(got.to_string(), want.to_string());
        assert_eq!(got.position(), want.position());
        assert_eq!(got.position().record, Some(63));
    }

    // A header that claims more data than a reader has: the Vec grows only as bytes arrive.
    let lying = npy("<f8", &[1 << 40], false, &1.0f64.to_le_bytes().repeat(3));
    let err = npy_serde::from_reader::<_, f64>(Cursor::new(&lying)).unwrap_err();
    assert_eq!(err.kind().code(), "unexpected_eof");
}

/// NumPy's default record layout read into a `#[repr(C, packed)]` struct: one copy on every
/// door, a view in place (alignment 1 fits any offset), and written back byte for byte.
#[test]
fn packed_structs_are_numpys_default_layout() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/npy/rec_w2_le.npy");
    let file = std::fs::read(&fixture).unwrap();
    let rb = ReaderBuilder::new();
    tier::take();
    let got: Vec<W2P> = rb.from_path(&fixture).unwrap();
    assert_eq!(tier::take().exact, 5, "the one-copy path");
    let want: Vec<(i64, f64, f32, u8, [f32; 3])> = npy_serde::from_slice_serde(&file).unwrap();
    // Compared bit for bit: the fixture holds NaNs. Fields of a packed struct are copied out
    // (Rust refuses references to them).
    let bits = |r: &(i64, f64, f32, u8, [f32; 3])| {
        (
            r.0,
            r.1.to_bits(),
            r.2.to_bits(),
            r.3,
            r.4.map(f32::to_bits),
        )
    };
    let rows = |v: &[W2P]| -> Vec<_> {
        v.iter()
            .map(|g| bits(&({ g.id }, { g.x }, { g.y }, { g.flag }, { g.v })))
            .collect()
    };
    assert_eq!(rows(&got), want.iter().map(bits).collect::<Vec<_>>());
    assert_eq!(
        rows(&npy_serde::from_slice::<W2P>(&file).unwrap()),
        rows(&got)
    );
    let map = MmapArray::open(&fixture).unwrap();
    assert_eq!(rows(map.as_slice::<W2P>().unwrap()), rows(&got));
    assert_eq!(npy_serde::to_vec(&got).unwrap(), file, "numpy.save's bytes");

    // Big-endian data still decodes (each field swapped), on the exact tier.
    let be = npy_serde::WriterBuilder::new()
        .byte_order(npy_serde::ByteOrder::Big)
        .to_vec(&got)
        .unwrap();
    assert_eq!(
        rows(&npy_serde::from_slice::<W2P>(&be).unwrap()),
        rows(&got)
    );
}

#[test]
fn raw_writes_are_the_serializers_bytes() {
    let pairs: Vec<Pair> = (0..300)
        .map(|i| Pair {
            a: i * 3,
            b: i as f32 / 7.0,
        })
        .collect();
    tier::take();
    let raw = npy_serde::to_vec(&pairs).unwrap();
    assert_eq!(tier::take().exact, 300);
    // Through NpyWriter (the general serializer) the bytes are the same.
    let mut w = npy_serde::NpyWriter::with_len::<Pair>(Vec::new(), 300).unwrap();
    w.write_all_serde(&pairs).unwrap();
    assert_eq!(w.finish().unwrap(), raw);
    // A padded record (W2A) is not written raw; its padding is zeros, as np.save writes it.
    let bytes = npy_serde::to_vec(&w2a(2)).unwrap();
    let data = &bytes[bytes.len() - 80..];
    assert_eq!(&data[21..24], &[0, 0, 0]);
    assert_eq!(&data[36..40], &[0, 0, 0, 0]);
    // Another byte order or a given shape still works, through the tiers.
    let be = WriterBuilder::new()
        .byte_order(npy_serde::ByteOrder::Big)
        .to_vec(&pairs)
        .unwrap();
    let back: Vec<Pair> = npy_serde::from_slice(&be).unwrap();
    assert_eq!(back, pairs);
    let shaped = WriterBuilder::new().shape([3, 100]).to_vec(&pairs).unwrap();
    let h = npy_serde::header::parse_header(&shaped, &Default::default()).unwrap();
    assert_eq!(h.header.shape, [3, 100]);
    assert_eq!(
        &shaped[h.data_offset as usize..],
        &raw[h.data_offset as usize..]
    );
    let _ = Header::new(Pair::dtype(), vec![1]);
}

#[test]
fn numpy_and_our_maps_see_each_other() {
    if live_python().is_none() {
        return;
    }
    let dir = TempDir::new("views-numpy");
    // NumPy creates and writes through its map; we see it in ours.
    let p = dir.join("np.npy");
    run_python(
        "import sys, numpy as np\n\
         dt = np.dtype([('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))], align=True)\n\
         a = np.zeros(4, dt); np.save(sys.argv[1], a)\n\
         m = np.load(sys.argv[1], mmap_mode='r+'); m['x'][2] = 6.5; m['v'][3] = [1, 2, 3]; m.flush()\n",
        &[p.as_os_str()],
    );
    let map = MmapArray::open(&p).unwrap();
    let rows: &[W2A] = map.as_slice().unwrap();
    assert_eq!(rows[2].x, 6.5);
    assert_eq!(rows[3].v, [1.0, 2.0, 3.0]);
    drop(map);

    // We write through our map; NumPy loads it.
    let mut m = MmapArrayMut::open_rw(&p).unwrap();
    m.as_mut_slice::<W2A>().unwrap()[1].id = 77;
    m.flush().unwrap();
    drop(m);
    let out = run_python(
        "import sys, numpy as np\nprint(int(np.load(sys.argv[1])['id'][1]))",
        &[p.as_os_str()],
    );
    assert_eq!(out.trim(), "77");

    // A created map, filled, is the array NumPy loads.
    let c = dir.join("created.npy");
    let mut m = MmapArrayMut::create::<f32>(&c, &[3, 4]).unwrap();
    for (i, v) in m.as_mut_slice::<f32>().unwrap().iter_mut().enumerate() {
        *v = i as f32 * 0.5;
    }
    m.flush().unwrap();
    drop(m);
    let out = run_python(
        "import sys, numpy as np\n\
         a = np.load(sys.argv[1]); b = np.arange(12, dtype='<f4').reshape(3, 4) * 0.5\n\
         print(a.dtype.str, a.shape, bool((a == b).all()))\n\
         np.save(sys.argv[2], b)\n",
        &[
            c.as_os_str(),
            OsStr::new(dir.join("np-same.npy").to_str().unwrap()),
        ],
    );
    assert_eq!(out.trim(), "<f4 (3, 4) True");
    assert_eq!(
        std::fs::read(&c).unwrap(),
        std::fs::read(dir.join("np-same.npy")).unwrap(),
        "a created and filled map is byte for byte np.save's file"
    );
}
