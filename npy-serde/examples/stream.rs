//! Stream a file larger than memory: write it record by record, then read it record by
//! record, in bounded memory both ways.
//!
//! ```sh
//! cargo run --release -p npy-serde --example stream [RECORDS] [FILE.npy]
//! ```
//!
//! `RECORDS` defaults to 1,000,000 (24 MB); at 1,000,000,000 the file is 24 GB and the memory
//! used is still a few MiB.

use npy_serde::{NpyRecord, NpyWriter, RecordReader};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, NpyRecord)]
struct Tick {
    time_ns: i64,
    price: f64,
    size: u32,
    side: u8,
    venue: u8,
    _pad: [u8; 2],
}

fn main() -> Result<(), npy_serde::Error> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .map_or(1_000_000, |s| s.parse().expect("RECORDS: a count"));
    let path = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("npy-serde-example-ticks.npy"));

    // Writing: the count need not be known up front; the header is patched at `finish`.
    let mut w = NpyWriter::create::<Tick>(&path)?;
    for i in 0..n {
        w.write(&Tick {
            time_ns: i as i64 * 1_000,
            price: 100.0 + (i % 100) as f64 / 100.0,
            size: (i % 500) as u32 + 1,
            side: (i % 2) as u8,
            venue: (i % 7) as u8,
            _pad: [0; 2],
        })?;
    }
    w.finish()?;

    // Reading: one record at a time from a buffered file.
    let mut volume = 0u64;
    let mut notional = 0f64;
    let file = std::io::BufReader::new(std::fs::File::open(&path)?);
    for tick in RecordReader::<_, Tick>::new(file)? {
        let t = tick?;
        volume += u64::from(t.size);
        notional += t.price * f64::from(t.size);
    }
    println!(
        "{n} ticks in {}: volume {volume}, VWAP {:.4}",
        path.display(),
        notional / volume as f64
    );
    std::fs::remove_file(&path)?;
    Ok(())
}
