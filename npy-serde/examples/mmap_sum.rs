//! Map a file and sum one field of its records in place, without reading the file into memory.
//!
//! ```sh
//! cargo run --release -p npy-serde --example mmap_sum [FILE.npy]
//! ```
//!
//! Without a file the example writes one (1,000,000 records). A `#[repr(C)]` struct whose
//! layout is the file's (no padding the dtype lacks, the file's byte order) is viewed as
//! `&[T]` straight from the map; any other is decoded record by record from it.

use npy_serde::{MmapArray, NpyRecord};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, NpyRecord)]
#[repr(C)]
struct Point {
    x: f64,
    y: f64,
    weight: f32,
    label: u32,
}

fn main() -> Result<(), npy_serde::Error> {
    let given = std::env::args().nth(1);
    let path = match &given {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            let p = std::env::temp_dir().join("npy-serde-example-points.npy");
            let points: Vec<Point> = (0..1_000_000u32)
                .map(|i| Point {
                    x: i as f64,
                    y: -(i as f64),
                    weight: 0.5,
                    label: i % 10,
                })
                .collect();
            npy_serde::to_path(&p, &points)?;
            p
        }
    };

    let map = MmapArray::open(&path)?;
    println!(
        "{}: shape {:?}, dtype {}",
        path.display(),
        map.header().shape,
        map.header().dtype.descr()
    );

    // In place: the map's bytes as `&[Point]` (an error if the layouts differ).
    let points: &[Point] = map.as_slice()?;
    let total: f64 = points.iter().map(|p| p.x * f64::from(p.weight)).sum();
    println!("weighted sum of x, viewed in place: {total}");

    // Record by record from the map: works for any layout.
    let mut by_label = [0u64; 10];
    for p in map.records::<Point>()? {
        by_label[p?.label as usize % 10] += 1;
    }
    println!("records per label: {by_label:?}");
    drop(map);
    if given.is_none() {
        std::fs::remove_file(&path)?;
    }
    Ok(())
}
