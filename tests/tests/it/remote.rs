//! `npy_remote` (feature `remote`): `.npy` and `.npz` objects read by byte ranges from an
//! in-memory object store, with the requests counted (`CountingStore`) and faults injected
//! (`FaultStore`): short reads, errors, stalls, sizes that lie. The `remote` fuzz target's saved
//! findings (`tests/fixtures/fuzz-remote/*.bin`) replay here through the target's own code.

#[path = "../../../fuzz/src/remote.rs"]
mod fuzz_remote;

use std::sync::Arc;
use std::time::{Duration, Instant};

use npy_remote::{CountingStore, Fault, FaultStore, FetchOptions, RemoteNpy, RemoteNpz};
use npy_serde::npz::NpzWriter;
use npy_serde::{Header, NpyRecord, ReaderBuilder};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, NpyRecord)]
struct Rec {
    id: i64,
    x: f32,
    flag: bool,
}

fn recs(n: usize) -> Vec<Rec> {
    (0..n)
        .map(|i| Rec {
            id: i as i64 * 3,
            x: i as f32 / 4.0,
            flag: i % 3 == 0,
        })
        .collect()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// An in-memory store holding `bytes` at `key`, behind a counter (reset after the upload).
async fn counted(key: &str, bytes: Vec<u8>) -> (CountingStore, Path) {
    let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let counting = CountingStore::new(mem);
    let path = Path::from(key);
    counting.put(&path, PutPayload::from(bytes)).await.unwrap();
    counting.reset();
    (counting, path)
}

fn dyn_store(c: &CountingStore) -> Arc<dyn ObjectStore> {
    Arc::new(c.clone())
}

const URL: &str = "s3://bucket/data/x.npy";

#[test]
fn open_is_one_get_then_one_get_per_chunk() {
    let data = recs(10_000); // 13 bytes a record
    let file = npy_serde::to_vec(&data).unwrap();
    block_on(async {
        let (c, path) = counted("x.npy", file).await;
        let opts = FetchOptions::default().chunk_bytes(13 * 1000);
        let rb = ReaderBuilder::new();
        let npy = RemoteNpy::open_with(dyn_store(&c), path, URL, &rb, &opts)
            .await
            .unwrap();
        assert_eq!(c.counts().gets, 1);
        assert_eq!(c.counts().requests(), 1);
        assert_eq!(npy.len(), 10_000);
        assert_eq!(npy.header().dtype, Rec::dtype());

        // 2500 rows in chunks of 1000: 3 GETs, and only their bytes.
        c.reset();
        let got: Vec<Rec> = npy.read_rows(3000..5500).await.unwrap();
        assert_eq!(got, data[3000..5500]);
        assert_eq!(c.counts().gets, 3);
        assert_eq!(c.counts().requests(), 3);
        assert_eq!(c.counts().bytes, 2500 * 13);

        // The serde door: the same values, the same requests.
        c.reset();
        let serde: Vec<Rec> = npy.read_rows_serde(3000..5500).await.unwrap();
        assert_eq!(serde, got);
        assert_eq!(c.counts().gets, 3);

        // Everything, and nothing.
        let all: Vec<Rec> = npy.read_rows(0..10_000).await.unwrap();
        assert_eq!(all, data);
        c.reset();
        let none: Vec<Rec> = npy.read_rows(7..7).await.unwrap();
        assert!(none.is_empty());
        assert_eq!(c.counts().requests(), 0);
        let err = npy.read_rows::<Rec>(9_000..10_001).await.unwrap_err();
        assert!(err.to_string().contains("10000 rows"), "{err}");
    });
}

#[test]
fn a_header_longer_than_the_probe_costs_a_second_get() {
    let file = npy_serde::to_vec(&[1.5f64, 2.5, 3.5]).unwrap(); // a 128-byte header
    block_on(async {
        let (c, path) = counted("x.npy", file).await;
        let opts = FetchOptions::default().probe_bytes(40);
        let npy = RemoteNpy::open_with(dyn_store(&c), path, URL, &ReaderBuilder::new(), &opts)
            .await
            .unwrap();
        assert_eq!(c.counts().gets, 2);
        assert_eq!(npy.read_rows::<f64>(1..3).await.unwrap(), [2.5, 3.5]);
        assert_eq!(c.counts().gets, 3);
    });
}

#[test]
fn a_header_over_the_limit_is_refused_before_fetching_it() {
    // A v1.0 header padded to 50038 bytes (NumPy's limit is 10000).
    let dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }";
    let hlen = 64 * 782 - 10;
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    file.extend_from_slice(&(hlen as u16).to_le_bytes());
    file.extend_from_slice(dict.as_bytes());
    file.resize(10 + hlen - 1, b' ');
    file.push(b'\n');
    file.extend_from_slice(&[1, 2, 3, 4]);
    block_on(async {
        let (c, path) = counted("big.npy", file).await;
        let opts = FetchOptions::default().probe_bytes(1024);
        let rb = ReaderBuilder::new(); // max_header_size 10000
        let err = RemoteNpy::open_with(dyn_store(&c), path.clone(), URL, &rb, &opts)
            .await
            .unwrap_err();
        assert_eq!(err.kind().code(), "remote");
        let msg = err.to_string();
        assert!(
            msg.starts_with(URL) && msg.contains("max_header_size"),
            "{msg}"
        );
        assert_eq!(c.counts().gets, 1);
        assert_eq!(c.counts().bytes, 1024);
        // Raised, the same object opens (with a second GET for the rest of the header).
        c.reset();
        let rb = ReaderBuilder::new().max_header_size(100_000);
        let npy = RemoteNpy::open_with(dyn_store(&c), path, URL, &rb, &opts)
            .await
            .unwrap();
        assert_eq!(npy.read_rows::<u8>(0..4).await.unwrap(), [1, 2, 3, 4]);
        assert_eq!(c.counts().gets, 3);
    });
}

#[test]
fn declared_data_larger_than_the_object_names_the_url() {
    let mut file = npy_serde::to_vec(&vec![7u32; 1000]).unwrap();
    file.truncate(file.len() - 1);
    block_on(async {
        let (c, path) = counted("t.npy", file).await;
        let err = RemoteNpy::open(dyn_store(&c), path, URL, &ReaderBuilder::new())
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind().code(), "remote");
        assert!(
            msg.starts_with(URL) && msg.contains("4000 bytes of data"),
            "{msg}"
        );
        assert!(msg.contains("holds 4127 bytes"), "{msg}");
        assert_eq!(c.counts().requests(), 1);
    });
}

#[test]
fn a_missing_key_names_the_url() {
    block_on(async {
        let (c, _) = counted("x.npy", vec![1]).await;
        let path = Path::from("nope.npy");
        let err = RemoteNpy::open(dyn_store(&c), path, URL, &ReaderBuilder::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind().code(), "remote");
        assert!(err.to_string().starts_with(URL), "{err}");
    });
}

/// Opens with one good GET, then reads through `fault`.
async fn read_through(fault: Fault) -> (npy_serde::Error, Duration) {
    let file = npy_serde::to_vec(&vec![1.25f64; 5000]).unwrap();
    let mem = Arc::new(InMemory::new());
    let path = Path::from("f.npy");
    mem.put(&path, PutPayload::from(file)).await.unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(FaultStore::new(mem, fault, 1));
    let opts = FetchOptions::default()
        .timeout(Duration::from_millis(200))
        .chunk_bytes(8000);
    let npy = RemoteNpy::open_with(store, path, URL, &ReaderBuilder::new(), &opts)
        .await
        .unwrap();
    let t = Instant::now();
    let err = npy.read_rows::<f64>(0..5000).await.unwrap_err();
    (err, t.elapsed())
}

#[test]
fn faults_are_errors_naming_the_url_never_hangs() {
    block_on(async {
        for (fault, says) in [
            (Fault::Short, "short read: asked for 8000 bytes"),
            (Fault::Long, "more than the 8000 bytes"),
            (Fault::Error, "injected failure"),
            (Fault::Stall, "within 200ms"),
            (Fault::StallBody, "within 200ms"),
        ] {
            let (err, took) = read_through(fault).await;
            let msg = err.to_string();
            assert_eq!(err.kind().code(), "remote", "{fault:?}: {msg}");
            assert!(
                msg.starts_with(URL) && msg.contains(says),
                "{fault:?}: {msg}"
            );
            assert!(took < Duration::from_secs(5), "{fault:?} took {took:?}");
        }
    });
}

#[test]
fn decoding_errors_keep_their_kind_and_the_whole_arrays_positions() {
    // A bool array whose element 1234 is 7: chunks of 100 elements, the error at record 1234.
    let mut file = npy_serde::to_vec(&vec![true; 3000]).unwrap();
    let at = file.len() - 3000 + 1234;
    file[at] = 7;
    block_on(async {
        let (c, path) = counted("b.npy", file).await;
        let opts = FetchOptions::default().chunk_bytes(100);
        let npy = RemoteNpy::open_with(dyn_store(&c), path, URL, &ReaderBuilder::new(), &opts)
            .await
            .unwrap();
        let err = npy.read_rows::<bool>(1000..2000).await.unwrap_err();
        assert_eq!(err.kind().code(), "invalid_value", "{err}");
        assert_eq!(err.position().record, Some(1234), "{err}");
        assert_eq!(err.position().byte, Some(128 + 1234), "{err}");
        let err = npy.read_rows_serde::<bool>(1000..2000).await.unwrap_err();
        assert_eq!(err.position().record, Some(1234), "{err}");
        assert_eq!(err.position().byte, Some(128 + 1234), "{err}");
        let err = npy.read_rows::<f32>(0..10).await.unwrap_err();
        assert_eq!(err.kind().code(), "type_mismatch", "{err}");
    });
}

#[test]
fn n_d_and_fortran_order_arrays() {
    // (50, 3) C order: a row is 3 elements.
    let values: Vec<i16> = (0..150).collect();
    let file = |fortran: bool, data: &[i16]| {
        let mut h = Header::new(<i16 as NpyRecord>::dtype(), vec![50, 3]);
        h.fortran_order = fortran;
        let mut f = h.to_bytes().unwrap();
        data.iter()
            .for_each(|v| f.extend_from_slice(&v.to_le_bytes()));
        f
    };
    let c_file = file(false, &values);
    // The same logical array in Fortran order.
    let mut f_data = Vec::with_capacity(150);
    for j in 0..3 {
        for i in 0..50 {
            f_data.push(values[i * 3 + j]);
        }
    }
    let f_file = file(true, &f_data);
    block_on(async {
        let (c, path) = counted("c.npy", c_file).await;
        let npy = RemoteNpy::open(dyn_store(&c), path, URL, &ReaderBuilder::new())
            .await
            .unwrap();
        assert_eq!(npy.len(), 50);
        assert_eq!(npy.read_rows::<i16>(10..12).await.unwrap(), values[30..36]);

        let (c, path) = counted("f.npy", f_file).await;
        let npy = RemoteNpy::open(dyn_store(&c), path, URL, &ReaderBuilder::new())
            .await
            .unwrap();
        assert_eq!(npy.read_rows::<i16>(0..50).await.unwrap(), values);
        let err = npy.read_rows::<i16>(10..12).await.unwrap_err();
        assert!(err.to_string().contains("read rows 0..50"), "{err}");
    });
}

fn npz(compressed: bool) -> Vec<u8> {
    let cursor = std::io::Cursor::new(Vec::new());
    let mut w = if compressed {
        NpzWriter::new_compressed(cursor)
    } else {
        NpzWriter::new(cursor)
    };
    w.add("recs", &recs(5000)).unwrap();
    w.add("small", &[1u16, 2, 3]).unwrap();
    w.finish().unwrap().into_inner()
}

#[test]
fn npz_stored_member_located_and_read_in_three_requests_plus_chunks() {
    block_on(async {
        let (c, path) = counted("a.npz", npz(false)).await;
        let opts = FetchOptions::default().chunk_bytes(13 * 1000);
        let rb = ReaderBuilder::new();
        let archive = RemoteNpz::open_with(dyn_store(&c), path, URL, &rb, &opts)
            .await
            .unwrap();
        assert_eq!(archive.keys().collect::<Vec<_>>(), ["recs", "small"]);
        assert_eq!(c.counts().requests(), 1);
        let m = archive.member("recs").await.unwrap();
        assert_eq!(c.counts().requests(), 2);
        let got: Vec<Rec> = m.read_rows(1000..3500).await.unwrap();
        assert_eq!(got, recs(5000)[1000..3500]);
        // 2500 records in chunks of 1000: 3 more.
        assert_eq!(c.counts().requests(), 5);
        assert_eq!(c.counts().lists + c.counts().heads, 0);
        // Whole, with its CRC checked.
        assert_eq!(archive.read::<Rec>("recs").await.unwrap(), recs(5000));
        assert_eq!(
            archive.read_serde::<u16>("small.npy").await.unwrap(),
            [1, 2, 3]
        );
        let err = archive.member("nope").await.unwrap_err();
        assert!(err.to_string().contains("no member \"nope\""), "{err}");
    });
}

#[test]
fn npz_deflated_member_inflated_whole() {
    block_on(async {
        let (c, path) = counted("z.npz", npz(true)).await;
        let rb = ReaderBuilder::new();
        let archive = RemoteNpz::open(dyn_store(&c), path, URL, &rb)
            .await
            .unwrap();
        assert_eq!(archive.read::<Rec>("recs").await.unwrap(), recs(5000));
        assert!(c.counts().requests() <= 3, "{:?}", c.counts());
        let err = archive.member("recs").await.unwrap_err();
        assert!(err.to_string().contains("RemoteNpz::read"), "{err}");
        // In chunks: the compressed bytes fetched in GETs of at most 1000 bytes.
        let (c, path) = counted("z.npz", npz(true)).await;
        let opts = FetchOptions::default().chunk_bytes(1000).concurrency(3);
        let archive = RemoteNpz::open_with(dyn_store(&c), path, URL, &rb, &opts)
            .await
            .unwrap();
        c.reset();
        assert_eq!(archive.read::<Rec>("recs").await.unwrap(), recs(5000));
        let counts = c.counts();
        // The first GET holds the local header and about a chunk; the rest 1000 bytes each.
        assert!(counts.bytes > 3000, "{counts:?}");
        let chunks = counts.bytes / 1000;
        assert!(
            counts.gets >= chunks && counts.gets <= chunks + 2,
            "{counts:?}"
        );
    });
}

/// The offset of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

#[test]
fn npz_corrupt_members_and_lying_sizes_are_errors() {
    block_on(async {
        let rb = ReaderBuilder::new();
        // A flipped data byte in a stored member: the whole read's CRC-32 fails, a range
        // read (which cannot check it) does not.
        let mut bytes = npz(false);
        let at = find(&bytes, b"small.npy") + 9 + 20 + 128 + 1; // local extra: 20 bytes
        bytes[at] ^= 0x40;
        let (c, path) = counted("bad.npz", bytes).await;
        let archive = RemoteNpz::open(dyn_store(&c), path, URL, &rb)
            .await
            .unwrap();
        let err = archive.read::<u16>("small").await.unwrap_err();
        assert!(err.to_string().contains("CRC-32"), "{err}");
        assert_eq!(err.kind().code(), "remote");

        // A deflated member whose directory entry claims another CRC.
        let mut bytes = npz(true);
        let dir = find(&bytes, b"PK\x01\x02");
        bytes[dir + 16] ^= 1;
        let (c, path) = counted("badz.npz", bytes).await;
        let archive = RemoteNpz::open(dyn_store(&c), path, URL, &rb)
            .await
            .unwrap();
        let err = archive.read::<Rec>("recs").await.unwrap_err();
        assert!(err.to_string().contains("CRC-32"), "{err}");

        // A stored member whose directory sizes are larger than the archive: refused when
        // the directory is read.
        let mut bytes = npz(false);
        let dir = find(&bytes, b"PK\x01\x02");
        bytes[dir + 20..dir + 24].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
        bytes[dir + 24..dir + 28].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
        let (c, path) = counted("lie.npz", bytes).await;
        let err = RemoteNpz::open(dyn_store(&c), path, URL, &rb)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("run past the central directory"),
            "{err}"
        );
        assert!(err.to_string().starts_with(URL), "{err}");

        // Not a zip at all.
        let (c, path) = counted("x.npy", npy_serde::to_vec(&[1u8]).unwrap()).await;
        let err = RemoteNpz::open(dyn_store(&c), path, URL, &rb)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a zip archive"), "{err}");
    });
}

#[cfg(feature = "arrow")]
#[test]
fn batches_with_projection_match_the_batch_reader() {
    use futures::TryStreamExt;
    let file = npy_serde::to_vec(&recs(3000)).unwrap();
    let local = npy_arrow::BatchReaderBuilder::new()
        .column_indices([0, 2])
        .batch_size(3000)
        .from_slice(&file)
        .unwrap()
        .next_batch()
        .unwrap()
        .unwrap();
    block_on(async {
        let (c, path) = counted("r.npy", file).await;
        let npy = RemoteNpy::open(dyn_store(&c), path, URL, &ReaderBuilder::new())
            .await
            .unwrap();
        c.reset();
        let batches: Vec<_> = npy
            .batches(500..2500, Some(&[0, 2]), 700)
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(c.counts().gets, 3);
        let rows: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
        assert_eq!(rows, [700, 700, 600]);
        assert_eq!(batches[0].schema(), npy.schema(Some(&[0, 2])).unwrap());
        let mut at = 500;
        for b in &batches {
            assert_eq!(b, &local.slice(at, b.num_rows()));
            at += b.num_rows();
        }
    });
}

#[test]
fn fuzz_findings_replay() {
    let dir = npy_serde_tests::fixtures_dir().join("fuzz-remote");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut n = 0;
    for e in entries {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "bin") {
            fuzz_remote::remote(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n > 0, "{} holds no .bin findings", dir.display());
}
