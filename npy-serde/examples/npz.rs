//! Write an `.npz` archive of several arrays and read its members back by name, as
//! `np.savez` / `np.load(..)['key']` do.
//!
//! ```sh
//! cargo run -p npy-serde --example npz [ARCHIVE.npz]
//! python3 -c "import numpy as np; z = np.load('ARCHIVE.npz'); print({k: z[k] for k in z})"
//! ```

use npy_serde::{NpyRecord, NpzArchive, NpzWriter};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize, NpyRecord)]
struct Event {
    t: f64,
    kind: u8,
}

fn main() -> Result<(), npy_serde::Error> {
    let path = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("npy-serde-example.npz"));

    let weights: Vec<f32> = (0..1000).map(|i| i as f32 / 1000.0).collect();
    let events = vec![Event { t: 0.5, kind: 1 }, Event { t: 1.25, kind: 2 }];
    // np.savez; NpzWriter::new_compressed for np.savez_compressed.
    let mut w = NpzWriter::new(std::fs::File::create(&path)?);
    w.add("weights", &weights)?;
    w.add("events", &events)?;
    w.finish()?;

    let mut z = NpzArchive::open(&path)?;
    println!("members: {:?}", z.keys().collect::<Vec<_>>());
    let back: Vec<Event> = z.read("events")?;
    assert_eq!(back, events);
    let w: Vec<f32> = z.read("weights")?;
    println!(
        "{} weights, mean {}",
        w.len(),
        w.iter().sum::<f32>() / w.len() as f32
    );
    Ok(())
}
