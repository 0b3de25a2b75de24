//! The body of the `remote` fuzz target: hostile bytes as an object on an in-memory store,
//! read through `npy_remote` (as a `.npy` and as an `.npz`) with injected faults (short
//! bodies, extra bytes, errors, stalls). Included by `fuzz_targets/remote.rs` and, to replay
//! saved findings on stable, by `tests/tests/it/remote.rs`.
//!
//! Bodies come whole or in frames (as HTTP clients return them), so that the readers that
//! decode frame by frame into the result (`read_rows`, `npy_serde`'s `PlacedRecords`) see
//! elements cut across frames, and a long body's excess after the bytes asked for.
//!
//! Invariants: no panic, no hang (every stall ends in the doors' timeout), and with no fault a
//! successful remote read gives exactly what the local doors give from the same bytes.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use npy_remote::{Fault, FaultStore, FetchOptions, RemoteNpy, RemoteNpz};
use npy_serde::{NpyRecord, ReaderBuilder};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::Deserialize;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// Records on the exact tier (a `bool` byte not 0 or 1 is its miss, for the general tiers).
#[derive(Debug, PartialEq, Deserialize, NpyRecord)]
struct Pair {
    a: i16,
    ok: bool,
}

/// Records with drop glue (a `String`), on the general tiers: elements decoded in place and
/// dropped when a read fails.
#[derive(Debug, PartialEq, Deserialize, NpyRecord)]
struct Named {
    a: i16,
    #[npy(unicode = 2)]
    s: String,
}

/// The first byte chooses the fault (bits 0-2), how many GETs succeed first (bits 3-4) and the
/// first GET's size (bits 5-7: 16 to 2048 bytes); the rest is the object. Fault 0 hands each
/// body on whole, 1 in frames of 1 byte, 2 in frames of 7; a faulty store cuts its bodies into
/// frames of 5 bytes when the object's length is odd.
pub fn remote(data: &[u8]) {
    let Some((&ctl, object)) = data.split_first() else {
        return;
    };
    let frame = match ctl & 7 {
        0 => 0,
        1 => 1,
        2 => 7,
        _ => 5 * (object.len() % 2),
    };
    let fault = match ctl & 7 {
        0..=2 => None,
        3 => Some(Fault::Short),
        4 => Some(Fault::Long),
        5 => Some(Fault::Error),
        6 => Some(Fault::Stall),
        _ => Some(Fault::StallBody),
    };
    let good = u64::from((ctl >> 3) & 3);
    let probe = 16u64 << (ctl >> 5);
    let stalls = matches!(fault, Some(Fault::Stall | Fault::StallBody));
    let opts = FetchOptions::default()
        .probe_bytes(probe)
        .chunk_bytes(probe.min(200))
        .concurrency(3)
        .timeout(Duration::from_millis(if stalls { 2 } else { 10_000 }));
    runtime().block_on(run(object, fault, good, frame, &opts));
}

async fn run(object: &[u8], fault: Option<Fault>, good: u64, frame: usize, opts: &FetchOptions) {
    let mem = Arc::new(InMemory::new());
    let path = Path::from("fuzz/object");
    if object.is_empty() {
        return;
    }
    mem.put(&path, PutPayload::from(object.to_vec()))
        .await
        .expect("an in-memory put");
    let store: Arc<dyn ObjectStore> = match fault {
        Some(f) => Arc::new(FaultStore::new(mem, f, good).with_frames(frame)),
        None if frame > 0 => {
            Arc::new(FaultStore::new(mem, Fault::Error, u64::MAX).with_frames(frame))
        }
        None => mem,
    };
    let rb = ReaderBuilder::new().max_empty_items(1 << 12);
    let url = "memory:///fuzz/object";
    if let Ok(npy) = RemoteNpy::open_with(store.clone(), path.clone(), url, &rb, opts).await {
        let n = npy.len();
        let remote_u8 = npy.read_rows::<u8>(0..n).await;
        let remote_f64 = npy.read_rows_serde::<f64>(0..n).await;
        if fault.is_none() {
            if let Ok(r) = &remote_u8 {
                let local = rb
                    .from_slice::<u8>(object)
                    .expect("local read where remote read");
                assert_eq!(r, &local, "remote and local u8 reads differ");
                if n >= 2 && !npy.header().fortran_order {
                    let per_row = local.len() / n as usize;
                    let tail = npy.read_rows::<u8>(1..n).await.expect("a sub-range");
                    assert_eq!(tail, local[per_row..], "a row range differs");
                }
            }
            if let Ok(r) = &remote_f64 {
                let local = rb
                    .from_slice_serde::<f64>(object)
                    .expect("local read where remote read");
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(r), bits(&local), "remote and local f64 reads differ");
            }
        }
        if n > 0 {
            let _ = npy.read_rows::<i32>(n / 2..n).await;
        }
        // Records, whole and a range from the middle, against the local doors.
        let pairs = npy.read_rows::<Pair>(0..n).await;
        let named = npy.read_rows::<Named>(0..n).await;
        let named_tail = npy.read_rows::<Named>(n / 3..n).await;
        if fault.is_none() {
            if let Ok(r) = &pairs {
                let local = rb.from_slice::<Pair>(object);
                assert_eq!(
                    r,
                    &local.expect("local read where remote read"),
                    "Pair reads differ"
                );
            }
            if let Ok(r) = &named {
                let local = rb
                    .from_slice::<Named>(object)
                    .expect("local read where remote read");
                assert_eq!(r, &local, "Named reads differ");
                if !npy.header().fortran_order && n > 0 {
                    let per_row = local.len() / n as usize;
                    let tail = named_tail.expect("a sub-range");
                    assert_eq!(
                        tail,
                        local[(n / 3) as usize * per_row..],
                        "a Named range differs"
                    );
                }
            }
        }
    }
    if let Ok(npz) = RemoteNpz::open_with(store, path, url, &rb, opts).await {
        let keys: Vec<String> = npz.keys().take(8).map(str::to_string).collect();
        for key in keys {
            let _ = npz.read::<u8>(&key).await;
            let _ = npz.read_serde::<f32>(&key).await;
            if let Ok(m) = npz.member(&key).await {
                let n = m.len();
                let _ = m.read_rows::<u8>(0..n).await;
                let _ = m.read_rows::<f64>(n / 2..n).await;
                let _ = m.read_rows::<Named>(0..n).await;
            }
        }
    }
}
