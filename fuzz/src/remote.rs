//! The body of the `remote` fuzz target: hostile bytes as an object on an in-memory store,
//! read through `npy_remote` (as a `.npy` and as an `.npz`) with injected faults (short
//! bodies, extra bytes, errors, stalls). Included by `fuzz_targets/remote.rs` and, to replay
//! saved findings on stable, by `tests/tests/it/remote.rs`.
//!
//! Invariants: no panic, no hang (every stall ends in the doors' timeout), and with no fault a
//! successful remote read gives exactly what the local doors give from the same bytes.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use npy_remote::{Fault, FaultStore, FetchOptions, RemoteNpy, RemoteNpz};
use npy_serde::ReaderBuilder;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// The first byte chooses the fault (bits 0-2), how many GETs succeed first (bits 3-4) and the
/// first GET's size (bits 5-7: 16 to 2048 bytes); the rest is the object.
pub fn remote(data: &[u8]) {
    let Some((&ctl, object)) = data.split_first() else {
        return;
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
    runtime().block_on(run(object, fault, good, &opts));
}

async fn run(object: &[u8], fault: Option<Fault>, good: u64, opts: &FetchOptions) {
    let mem = Arc::new(InMemory::new());
    let path = Path::from("fuzz/object");
    if object.is_empty() {
        return;
    }
    mem.put(&path, PutPayload::from(object.to_vec()))
        .await
        .expect("an in-memory put");
    let store: Arc<dyn ObjectStore> = match fault {
        Some(f) => Arc::new(FaultStore::new(mem, f, good)),
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
            }
        }
    }
}
