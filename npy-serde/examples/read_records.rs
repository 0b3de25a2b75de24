//! Read a record array NumPy wrote into a `Vec` of a struct.
//!
//! ```sh
//! cargo run -p npy-serde --example read_records [FILE.npy]
//! ```
//!
//! The file defaults to one the repository ships, written by NumPy:
//! `np.save(path, a)` with `a.dtype == [('id', '<i8'), ('x', '<f8'), ('y', '<f4'),
//! ('flag', 'u1'), ('v', '<f4', (3,))]`.

use npy_serde::NpyRecord;
use serde::Deserialize;

/// One record: the fields by name, in the file's order. `#[derive(Deserialize)]` alone reads it
/// (`from_path_serde`); `NpyRecord` adds the compile-time layout of the fast door `from_path`.
#[derive(Deserialize, NpyRecord)]
struct Sample {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// Any serde type works too: fewer fields, in any order, matched by name.
#[derive(Deserialize)]
struct JustX {
    x: f64,
}

fn main() -> Result<(), npy_serde::Error> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/npy/rec_w2_le.npy"
        )
        .into()
    });

    let rows: Vec<Sample> = npy_serde::from_path(&path)?;
    for r in &rows {
        println!(
            "id={} x={} y={} flag={} v={:?}",
            r.id, r.x, r.y, r.flag, r.v
        );
    }

    let xs: Vec<JustX> = npy_serde::from_path_serde(&path)?;
    let total: f64 = xs.iter().map(|r| r.x).sum();
    println!("{} records, sum of x = {total}", xs.len());
    Ok(())
}
