//! Write a `Vec` of a struct as a record array that `np.load` reads with the right dtype.
//!
//! ```sh
//! cargo run -p npy-serde --example write_records [OUT.npy]
//! python3 -c "import numpy as np; a = np.load('OUT.npy'); print(a.dtype, a)"
//! ```
//!
//! Where NumPy would write the same array, the bytes are `numpy.save`'s.

use npy_serde::NpyRecord;
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize, NpyRecord)]
struct Station {
    id: u32,
    #[npy(bytes = 8)]
    name: String, // |S8
    lat: f64,
    lon: f64,
    readings: [f32; 4], // ('readings', '<f4', (4,))
}

fn main() -> Result<(), npy_serde::Error> {
    let path = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("npy-serde-example-stations.npy"));

    let stations = vec![
        Station {
            id: 1,
            name: "north".into(),
            lat: 59.9,
            lon: 10.7,
            readings: [1.5, 2.0, 2.5, 3.0],
        },
        Station {
            id: 2,
            name: "south".into(),
            lat: -33.9,
            lon: 18.4,
            readings: [20.0, 21.5, 19.0, 18.5],
        },
    ];
    npy_serde::to_path(&path, &stations)?;
    println!(
        "wrote {} with dtype {}",
        path.display(),
        Station::dtype().descr()
    );

    // Read back: the same values.
    let back: Vec<Station> = npy_serde::from_path(&path)?;
    assert_eq!(back, stations);
    println!("read back {} records", back.len());
    Ok(())
}
